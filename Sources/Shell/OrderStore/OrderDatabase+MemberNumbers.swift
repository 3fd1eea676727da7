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
