/// The writes through a master's local API that wait for standbys to hold them before they
/// are answered (`--sync-replicas`, Docs/PROTOCOL.md 7, "Standby acknowledgements"). Pure: the
/// node tells it what the engine knows of its standbys after each group and when a deadline
/// passes, and answers what comes out finished.
///
/// Only standbys that vote count (`MasterEngine.Standby.voter`): an election consults voters
/// only, so a copy on a handheld keeps nothing a promotion would find.
///
/// A standby taking its snapshot (`MasterEngine.Standby.isTakingSnapshot`: its snapshot still
/// going out, or gone out and its copy not yet switched to it, which its first ack after the
/// switch says) holds no write before that switch commits (a million orders take it many
/// seconds): a write that waits only for such standbys is over at once, unreplicated, instead
/// of at its deadline. It is counted in `wanted` as before, so `replicated` means what it meant.
///
/// A write waits for `wanted` voting standbys (at most as many as are connected when it is
/// committed) to say, in an ack's `held`, that they hold its sequence. When fewer stay connected than it
/// waits for, it is over once every connected one holds it (and at least one does). When its
/// deadline passes first, it is answered anyway, unreplicated.
public struct ReplicationWaits<Answer, Instant: Comparable> {
    /// A write that waited and is over: the answer to send, and how it went.
    public struct Finished {
        /// What the node answers with.
        public var answer: Answer
        /// The write's sequence.
        public var seq: Int64
        /// True when the standbys it waited for hold it; false when its deadline passed first
        /// (or no standby was connected).
        public var replicated: Bool
        /// The standbys it waited for.
        public var wanted: Int
        /// The names of the standbys that hold it, in the order they said so.
        public var heldBy: [String]
    }

    /// One waiting write.
    private struct Wait {
        var seq: Int64
        var wanted: Int
        var deadline: Instant
        var answer: Answer
        /// The standbys that hold it: node id and name.
        var heldBy: [(id: String, name: String)] = []

        func finished(replicated: Bool) -> Finished {
            Finished(answer: answer, seq: seq, replicated: replicated, wanted: wanted, heldBy: heldBy.map(\.name))
        }

        /// What the standbys say now about this write.
        enum Outcome { case waiting, replicated, unreplicated }

        /// Notes the standbys that hold it now: replicated when enough do; unreplicated when
        /// every voter that does not hold it yet is taking its snapshot (none of them can
        /// before its switch to it commits); else waiting.
        mutating func heard(_ all: [MasterEngine.Standby]) -> Outcome {
            let standbys = all.filter(\.voter)
            for s in standbys where s.holds(seq) && !heldBy.contains(where: { $0.id == s.terminalId }) {
                heldBy.append((s.terminalId, s.name))
            }
            if heldBy.count >= wanted { return .replicated }
            let holders = Set(heldBy.map(\.id))
            let missing = standbys.filter { !holders.contains($0.terminalId) }
            if missing.isEmpty { return heldBy.isEmpty ? .waiting : .replicated }
            return missing.allSatisfy(\.isTakingSnapshot) ? .unreplicated : .waiting
        }
    }

    private var waits: [Wait] = []

    /// No write waits.
    public init() {}

    /// How many writes wait.
    public var count: Int { waits.count }

    /// The earliest deadline of a waiting write, if any.
    public var nextDeadline: Instant? { waits.map(\.deadline).min() }

    /// A write committed at `seq` waits for `replicas` of the connected voting `standbys` until
    /// `deadline`. Finished at once when none is connected (unreplicated) or enough already
    /// hold it; nil while it waits.
    public mutating func add(
        seq: Int64, replicas: Int, standbys: [MasterEngine.Standby], deadline: Instant, answer: Answer
    ) -> Finished? {
        var wait = Wait(seq: seq, wanted: min(replicas, standbys.filter(\.voter).count), deadline: deadline, answer: answer)
        guard wait.wanted > 0 else { return wait.finished(replicated: false) }
        switch wait.heard(standbys) {
        case .replicated: return wait.finished(replicated: true)
        case .unreplicated: return wait.finished(replicated: false)
        case .waiting: break
        }
        waits.append(wait)
        return nil
    }

    /// What the engine knows of its standbys now (after an ack raised a `held`, or a standby
    /// left): the writes they now hold enough of, replicated, and those left waiting only for
    /// standbys taking their snapshot, unreplicated.
    public mutating func heard(_ standbys: [MasterEngine.Standby]) -> [Finished] {
        var done: [Finished] = []
        waits = waits.compactMap { w in
            var w = w
            switch w.heard(standbys) {
            case .waiting: return w
            case .replicated: done.append(w.finished(replicated: true))
            case .unreplicated: done.append(w.finished(replicated: false))
            }
            return nil
        }
        return done
    }

    /// The writes whose deadline is `now` or past: answered unreplicated.
    public mutating func expired(now: Instant) -> [Finished] {
        let (over, left) = (waits.filter { $0.deadline <= now }, waits.filter { $0.deadline > now })
        waits = left
        return over.map { $0.finished(replicated: false) }
    }

    /// Every write still waiting, unreplicated (the node is stopping or leaving the role).
    public mutating func drain() -> [Finished] {
        defer { waits = [] }
        return waits.map { $0.finished(replicated: false) }
    }
}
