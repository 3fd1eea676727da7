import SyncCore

/// Member numbers (`TermBallot`, Docs/PROTOCOL.md 7.16): the master gives each member a number
/// once, never twice (`paired_terminals.number`, migration 14; its own in `member.number`), and
/// sends them to its standbys with the members. A candidate bids only terms its number owns.
extension OrderDatabase {
    /// Metadata key of the number this store's master took for itself.
    public static let memberNumberKey = "member.number"

    /// The number this store's master took for itself (`member.number`), nil before it did.
    public func ownMemberNumber() throws -> Int64? {
        Int64(try metadata(Self.memberNumberKey) ?? "")
    }

    /// The number of the paired terminal `nodeId` (revoked or not), nil when it has none or is
    /// not paired: a standby's own number, as its master sent it.
    public func memberNumber(nodeId: String) throws -> Int64? {
        try connection.scalarInt("SELECT number FROM paired_terminals WHERE node_id = ?", [.text(nodeId)])
    }

    /// The highest number given in this store: the paired terminals', the master's own and the
    /// standby copy's master's (0 when none).
    public func highestMemberNumber() throws -> Int64 {
        let terminals = try connection.scalarInt("SELECT MAX(number) FROM paired_terminals") ?? 0
        let own = try ownMemberNumber() ?? 0
        let standbyMaster = try standbyMaster()?.number ?? 0
        return max(terminals, own, standbyMaster)
    }

    /// The number a member joining now gets. Throws `invalidArgument` when every number of
    /// `TermBallot.numbers` is taken.
    public func nextMemberNumber() throws -> Int64 {
        guard let next = TermBallot.nextNumber(after: try highestMemberNumber()) else {
            throw StoreError(
                kind: .invalidArgument,
                message: "this store has given all \(TermBallot.numbers.count) member numbers: no terminal can pair any more",
                path: path)
        }
        return next
    }

    /// The master `nodeId` takes its number (at start, and when a standby is promoted): its row
    /// among the paired terminals when its master numbered it (a promoted standby), else the
    /// number it took before, else the next one. Stored in `member.number`; returned.
    @discardableResult
    public func claimOwnMemberNumber(nodeId: String) throws -> Int64 {
        try requireWritable()
        return try transaction {
            let stored = try ownMemberNumber()
            let number = try memberNumber(nodeId: nodeId) ?? stored ?? nextMemberNumber()
            if number != stored { try setMetadata(Self.memberNumberKey, String(number)) }
            return number
        }
    }

    /// The number `addPairedTerminal` gives terminal `nodeId`: the one it has when it pairs
    /// again, else the next.
    func pairingNumber(nodeId: String) throws -> Int64 {
        try memberNumber(nodeId: nodeId) ?? nextMemberNumber()
    }
}

/// What `keepOwnMemberRow` did to the master's own row among the paired terminals.
public enum OwnMemberRow: Equatable, Sendable {
    /// It was there already, under the master's current key.
    case kept
    /// It was added: a new store, or a store made by a version that kept no such row.
    case added(PairedTerminal)
    /// The row of its number held an earlier key of the master (a key rotation): it now holds
    /// the current one; `previousId` is the node id it had.
    case rekeyed(PairedTerminal, previousId: String)
}

/// The master's own row (Docs/PROTOCOL.md 7.20): the store's master is one of its members like
/// any paired fixed terminal, a voter, so that once it steps down the next master knows its key.
extension OrderDatabase {
    /// Makes sure the master `nodeId` (its static key `publicKey`) is among the paired terminals
    /// under its member number (`claimOwnMemberNumber`), in one transaction: kept when it is
    /// there; else the row of its number, when an earlier key of its own holds it, takes the
    /// current key (voter flag and name kept); else a row is added, a voter, named `name` (or
    /// `name (2)`, ... when a terminal has it). A row of its own that was revoked stays revoked.
    @discardableResult
    public func keepOwnMemberRow(nodeId: String, publicKey: [UInt8], name: String, atMillis now: Int64) throws -> OwnMemberRow {
        try requireWritable()
        return try transaction {
            let number = try claimOwnMemberNumber(nodeId: nodeId)
            if try pairedTerminal(publicKey: publicKey) != nil { return .kept }
            let key = Self.hex(publicKey)
            let earlier = try connection.withStatement(
                "SELECT node_id FROM paired_terminals WHERE number = ?", [.integer(number)]
            ) { s in try s.step() ? s.text(0) : nil }
            if let earlier, earlier != nodeId {
                try connection.execute(
                    "UPDATE paired_terminals SET node_id = ?, public_key = ? WHERE node_id = ?",
                    [.text(nodeId), .text(key), .text(earlier)])
                try connection.execute("DELETE FROM terminals WHERE terminal_id = ?", [.text(earlier)])
                guard let row = try pairedTerminal(publicKey: publicKey) else {
                    throw StoreError(kind: .notFound, message: "the master's own row vanished while it was rekeyed", path: path)
                }
                return .rekeyed(row, previousId: earlier)
            }
            let row = PairedTerminal(
                nodeId: nodeId, publicKey: publicKey, name: try unusedTerminalName(name, except: nodeId), pairedAtMillis: now)
            try connection.execute(
                "INSERT INTO paired_terminals (node_id, public_key, name, paired_ms, number) VALUES (?, ?, ?, ?, ?)",
                [.text(nodeId), .text(key), .text(row.name), .integer(now), .integer(number)])
            return .added(row)
        }
    }
}
