/// The master's standbys (Docs/PROTOCOL.md 7, "Standby acknowledgements"): every connected
/// paired OrderSync slave keeps a copy a master can be promoted from, and says in its acks how
/// far that copy goes (`held`). A write through the master's local API can wait for them.
extension MasterEngine {
    /// One connected standby as the engine knows it.
    public struct Standby: Equatable, Sendable {
        /// The engine's id of its link.
        public var peer: Int
        /// Its node id.
        public var terminalId: String
        /// Its paired name.
        public var name: String
        /// The highest sequence its copy holds on disk, as its last ack said; nil until it says.
        public var held: Int64?
        /// False for a terminal the store's members name a non-voter (a handheld, `ordersync
        /// pair --handheld`): elections ignore its copy, so a write it holds is not counted as
        /// replicated (`ReplicationWaits`). True while the node gave no members.
        public var voter: Bool = true
        /// The seq its copy on this link starts after (`Peer.copyFloor`): a snapshot's, or the
        /// position a catch-up started from. 0 when not known.
        public var floor: Int64 = 0
        /// True while its snapshot is still going out: it can hold no write before its last
        /// part, so a write does not wait for it (`ReplicationWaits`, Docs/PROTOCOL.md 7.8).
        public var receivingSnapshot = false
        /// True once its snapshot went out whole and until an ack says its copy holds it
        /// (`held` at the snapshot's seq or above): it is switching its copy to the snapshot in
        /// one transaction (seconds for a million orders) and holds no later write before that
        /// commit, so a write does not wait for it either.
        public var switchingToSnapshot = false

        /// True while it takes its snapshot: receiving it, or switching to it.
        public var isTakingSnapshot: Bool { receivingSnapshot || switchingToSnapshot }

        /// Whether its copy holds the write at `seq` as a journal entry it can hand over or
        /// re-queue: `held` reaches it and it came after `floor`. A seq it holds only inside a
        /// snapshot is not counted (Docs/PROTOCOL.md 7.19).
        public func holds(_ seq: Int64) -> Bool { (held ?? -1) >= seq && seq > floor }
    }

    /// The connected standbys, by link: paired OrderSync slaves past their hello (live, or
    /// receiving their snapshot), in connection order. A plain StorePOS app holds no standby copy.
    public var standbys: [Standby] {
        peers.values.filter { $0.speaksOrderSync && ($0.phase == .live || $0.phase == .receivingSnapshot) }
            .sorted { $0.id < $1.id }
            .compactMap { p in
                p.terminalId.map {
                    Standby(
                        peer: p.id, terminalId: $0, name: p.terminalName ?? $0, held: p.held, voter: isVoter($0),
                        floor: p.copyFloor, receivingSnapshot: p.phase == .receivingSnapshot,
                        switchingToSnapshot: p.phase == .live && p.copyIsSnapshot && (p.held ?? -1) < p.copyFloor)
                }
            }
    }

    /// Whether the terminal `id` votes, as the store's members say: a handheld or a revoked
    /// terminal does not; one the members do not name (or no members yet) counts as a voter.
    private func isVoter(_ id: String) -> Bool {
        voters.votes(id)
    }

    /// Marks the broadcasts among `out` `ackNow` for the OrderSync slaves they go to; a
    /// StorePOS app gets the bytes as journalled (its messages keep their shape).
    func markAckNow(_ out: inout [Action]) {
        out = out.flatMap { action -> [Action] in
            guard case .broadcast(let bytes, let to) = action else { return [action] }
            let slaves = to.filter { peers[$0]?.speaksOrderSync == true }
            guard !slaves.isEmpty else { return [action] }
            let apps = to.filter { peers[$0]?.speaksOrderSync != true }
            var split: [Action] = [.broadcast(bytes: AckNow.marking(bytes), peers: slaves)]
            if !apps.isEmpty { split.append(.broadcast(bytes: bytes, peers: apps)) }
            return split
        }
    }
}

/// Who votes among the store's members (`MasterEngine.voters`): each named terminal's voter flag
/// and how many vote, read from the members once when they change instead of scanning them for
/// each standby in every group.
public struct MemberVoters: Equatable, Sendable {
    /// Each terminal the members name: false for a handheld or a revoked one (the first entry
    /// wins when an id is named twice, as a scan from the front would find it).
    private let flags: [String: Bool]
    /// How many of the named terminals vote, the master left out (it is counted apart, and the
    /// members list it among the terminals too: Docs/PROTOCOL.md 7.20); nil while the node gave
    /// no members.
    public let count: Int?

    /// The voters of `members` (none given: every terminal counts as a voter, `count` nil).
    public init(_ members: StoreMembers?) {
        var flags: [String: Bool] = [:]
        for t in members?.terminals ?? [] where flags[t.member.id] == nil {
            flags[t.member.id] = t.voter && t.revokedMillis == nil
        }
        self.flags = flags
        self.count = members.map { m in
            m.terminals.filter { $0.voter && $0.revokedMillis == nil && $0.member.id != m.master.id }.count
        }
    }

    /// Whether the terminal `id` votes; one the members do not name counts as a voter.
    public func votes(_ id: String) -> Bool {
        flags[id] ?? true
    }
}
