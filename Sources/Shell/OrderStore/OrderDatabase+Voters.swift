/// Which paired terminals vote in a promotion (Docs/PROTOCOL.md 7): every one by default; a
/// handheld paired with `ordersync pair --handheld` does not. The flag is the column
/// `paired_terminals.voter` of migration 13.
extension OrderDatabase {
    /// Whether the store's schema has the voter flag (migration 13).
    public func hasVoterFlag() throws -> Bool {
        try connection.withStatement("SELECT 1 FROM pragma_table_info('paired_terminals') WHERE name = 'voter'") { s in
            try s.step()
        }
    }

    /// Sets whether the paired terminal `nodeId` votes. Throws `notFound` when no terminal has
    /// that id, and `schemaMismatch` before migration 13.
    public func setVoter(nodeId: String, _ voter: Bool) throws {
        try requireWritable()
        guard try hasVoterFlag() else {
            throw StoreError(kind: .schemaMismatch, message: "this store has no voter flag (migration 13 \"terms and standby copy\")")
        }
        let changed = try connection.execute(
            "UPDATE paired_terminals SET voter = ? WHERE node_id = ?", [.integer(voter ? 1 : 0), .text(nodeId)])
        guard changed > 0 else {
            throw StoreError(kind: .notFound, message: "no paired terminal \(nodeId)")
        }
    }

    /// The node ids of the paired terminals (revoked ones too) that do not vote; none before
    /// migration 13, when every terminal votes.
    public func nonVoters() throws -> Set<String> {
        guard try hasVoterFlag() else { return [] }
        return try connection.withStatement("SELECT node_id FROM paired_terminals WHERE voter = 0") { s in
            var out = Set<String>()
            while try s.step() { out.insert(s.text(0)) }
            return out
        }
    }
}
