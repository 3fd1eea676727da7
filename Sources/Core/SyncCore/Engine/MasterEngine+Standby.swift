/// What a master tells its standbys beyond the broadcasts (`Docs/PROTOCOL.md` 7): the store's
/// members, other terminals' refusals, where a terminal's history parted from its own, and that
/// its own reign is over.
extension MasterEngine {
    /// The store's members or settings changed (pairing, revoking, a voter flag; the node
    /// calls it at start too): every OrderSync slave gets them at once, and each one that
    /// joins later right after its `ready`.
    public func membersChanged(_ members: StoreMembers) -> [Action] {
        self.members = members
        var out: [Action] = []
        let to = peers.values.filter { $0.speaksOrderSync && ($0.phase == .live || snapshots[$0.id] != nil) }.map(\.id).sorted()
        if !to.isEmpty { out.append(.broadcast(bytes: membersBytes(members), peers: to)) }
        return route(out)
    }

    /// Sends the members to the slave `id` (after its `ready`), when the node gave them.
    func sendMembers(to id: Int, _ out: inout [Action]) {
        guard let m = members, peers[id]?.speaksOrderSync == true else { return }
        out.append(.send(peer: id, bytes: membersBytes(m)))
    }

    private func membersBytes(_ m: StoreMembers) -> [UInt8] {
        var m = m
        m.term = terms.term
        return m.encodedBytes()
    }

    /// An operation with an id got refusals: every other OrderSync slave keeps them, so a
    /// promoted one answers a retry as this master would (`refused`). Storage failures are no
    /// answer (the operation is retried), and a repeat was told before.
    func sendRefused(_ outcome: ApplyOutcome, opId: String?, origin: String, sender: Int?, _ out: inout [Action]) {
        guard let id = opId, !outcome.isRepeat else { return }
        let errors = outcome.errors.filter { $0.code != .storageFailed && $0.code != .invalidMessage }
        guard !errors.isEmpty else { return }
        let to = peers.values.filter { $0.speaksOrderSync && $0.id != sender && ($0.phase == .live || snapshots[$0.id] != nil) }
            .map(\.id).sorted()
        guard !to.isEmpty else { return }
        let bytes = StandbyMessage.refused(opId: id, origin: origin, term: terms.term, errors: errors).encodedBytes()
        out.append(.broadcast(bytes: bytes, peers: to))
    }

    /// A hello from a terminal that follows a newer term: this master is stale. It refuses
    /// the hello (`stale_master`), closes the link and asks its node to step down. True when
    /// the hello was refused so.
    func refusesStaleHello(_ hello: HelloMessage, from id: Int, _ out: inout [Action]) -> Bool {
        guard let t = hello.term, t > terms.term else { return false }
        out.append(
            .log(
                EngineLog(
                    .warning, "master.stale",
                    [("peer.address", peers[id]?.address ?? "?"), ("term", "\(terms.term)"), ("peer.term", "\(t)")])))
        out.append(.send(peer: id, bytes: StandbyMessage.staleMasterBytes(term: t)))
        peers[id]?.phase = .closing
        out.append(.close(peer: id, code: MasterEngine.policyViolation, reason: "stale master"))
        out.append(.stepDown(term: t))
        return true
    }

    /// How much of a terminal's journal is this master's history too (`TermStarts.keep`), when
    /// it is less than all of it (the terminal holds entries of another term: it must drop them
    /// and take a snapshot); nil when its history is this master's (or of another lineage, or
    /// holds nothing).
    func divergence(of hello: HelloMessage) -> Int64? {
        guard let e = hello.epoch, e == epoch, hello.lastSeq > 0 else { return nil }
        let keep = terms.starts.keep(lastSeq: hello.lastSeq, lastTerm: hello.lastTerm ?? 1, masterLastSeq: lastSeq)
        return keep < hello.lastSeq ? keep : nil
    }

    /// The message telling the slave `id` that its entries after `keep` are not in this
    /// history, sent just before its snapshot (logged here).
    func divergedMessage(keep: Int64, to id: Int, lastSeq peerSeq: Int64, _ out: inout [Action]) -> [UInt8] {
        out.append(
            .log(
                EngineLog(
                    .warning, "peer.diverged",
                    [("peer.address", peers[id]?.address ?? "?"), ("peer.last_seq", "\(peerSeq)"), ("keep", "\(keep)")])))
        return StandbyMessage.diverged(keep: keep, term: terms.term).encodedBytes()
    }
}
