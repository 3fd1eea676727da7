/// The per-terminal limits: token buckets per terminal (its terminal id once it said hello,
/// otherwise its IP address) for operation messages (`rateLimit`), for their bytes
/// (`limits.bytes`), for snapshots (`limits.snapshots`) and for what its operations add to the
/// journal (`limits.journalBytesPerHour`).
///
/// A terminal over its message or byte limit is throttled until that bucket is full again; over
/// its journal budget, until a minute of the budget is back. Every operation it sends meanwhile
/// is answered `rate_limited` with the milliseconds left (`retryAfterMs`) and is neither
/// applied nor recorded (a flood must not fill the rejection log). An OrderSync slave keeps
/// such an operation in its outbox and sends it again, in order, after the hint; the master
/// goes on refusing that slave's operations until the first refused one comes back, so a later
/// operation never overtakes an earlier one. A slave over its snapshot limit gets
/// `rate_limited` on its hello and its link is closed (1013): it connects again after the hint.
extension MasterEngine {
    /// Whether a terminal's operations are let through.
    public enum Admission: Equatable, Sendable {
        /// Operations are applied while its bucket has tokens.
        case admitting
        /// Operations are refused with `rate_limited` until `until` (wall-clock milliseconds)
        /// and, for an OrderSync slave, until it sends `resumeWith` (the first operation
        /// refused) again.
        case throttled(until: Int64, resumeWith: String?)
    }

    /// Which limit refused an operation: the wait, the answer's text, and the log line.
    private struct Refusal {
        var wait: Int64
        var reason: String
        var log: EngineLog?
    }

    /// Whose bucket a terminal draws from (worked out once, when it connects).
    func bucketKey(for p: Peer) -> String { p.bucketKey }

    /// The bucket key of a terminal: its paired terminal id, or the host of its address.
    static func bucketKey(terminal: String?, address: String) -> String {
        if let terminal { return "terminal \(terminal)" }
        return "address \(host(of: address))"
    }

    /// The host part of `ip:port` or `[ip]:port`.
    static func host(of address: String) -> String {
        if address.hasPrefix("["), let end = address.firstIndex(of: "]") {
            return String(address[address.index(after: address.startIndex)..<end])
        }
        guard let colon = address.lastIndex(of: ":"), address.firstIndex(of: ":") == colon else { return address }
        return String(address[..<colon])
    }

    /// `bytes` as an operator reads it: `1 MiB`, `512 KiB`, `900 B`.
    static func sizeText(_ bytes: Double) -> String {
        if bytes >= 1_048_576 { return "\(Int((bytes / 1_048_576).rounded())) MiB" }
        if bytes >= 1_024 { return "\(Int((bytes / 1_024).rounded())) KiB" }
        return "\(Int(bytes)) B"
    }

    /// True when `message` (`bytes` long on the wire) from peer `id` may be applied now;
    /// otherwise it has been answered `rate_limited` in `out`.
    func admit(_ message: OperationMessage, bytes: Int, from id: Int, now: Int64, _ out: inout [Action]) -> Bool {
        guard let p = peers[id] else { return false }
        let key = bucketKey(for: p)
        if case .throttled(let until, let resumeWith) = p.admission {
            guard now >= until, resumeWith == nil || resumeWith == message.opId else {
                let reason = limits.throttleReasons[id] ?? operationsReason
                refuseRateLimited(message, peer: id, retryAfter: max(1, until - now), because: reason, &out)
                return false
            }
            peers[id]?.admission = .admitting
        }
        var operations = buckets[key] ?? TokenBucket(limit: rateLimit, now: now)
        var volume = limits.byteBuckets[key] ?? TokenBucket(allowance: limits.bytes, now: now)
        let cost = Double(bytes)
        guard let refusal = refusal(p, key: key, operations: operations, volume: volume, cost: cost, now: now) else {
            _ = operations.take(now: now)
            _ = volume.take(cost, now: now)
            buckets[key] = operations
            limits.byteBuckets[key] = volume
            return true
        }
        buckets[key] = operations
        limits.byteBuckets[key] = volume
        peers[id]?.admission = .throttled(until: now + refusal.wait, resumeWith: p.speaksOrderSync ? message.opId : nil)
        limits.throttleReasons[id] = refusal.reason
        if let line = refusal.log { logRefusal(line, source: key, reason: refusal.reason, now: now, &out) }
        refuseRateLimited(message, peer: id, retryAfter: refusal.wait, because: refusal.reason, &out)
        return false
    }

    /// The limit an operation of `cost` bytes from `p` is over at `now`, if any: its journal
    /// budget first (the longest wait), then messages per second, then bytes per second.
    private func refusal(
        _ p: Peer, key: String, operations: TokenBucket, volume: TokenBucket, cost: Double, now: Int64
    ) -> Refusal? {
        // The log line's fields, made only for a refusal.
        var meta: [(String, String)] {
            var meta: [(String, String)] = [("peer.address", p.address)]
            if let name = p.terminalName { meta.append(("terminal", name)) }
            return meta
        }
        if let journal = limits.journalBuckets[key], !journal.holds(1, now: now) {
            // A minute of the budget back, so a retry is not refused at once again.
            let wait = journal.millisUntil(holding: limits.journalBytesPerHour / 60, now: now)
            let budget = Self.sizeText(limits.journalBytesPerHour)
            var log: EngineLog?
            if limits.overBudget.insert(key).inserted {
                log = EngineLog(
                    .warning, "peer.journal_budget_exceeded",
                    meta + [("budget_bytes_per_hour", "\(Int(limits.journalBytesPerHour))"), ("retry_ms", "\(wait)")])
            }
            return Refusal(
                wait: wait,
                reason: "this terminal's operations added more than its journal budget of \(budget) per hour; "
                    + "nothing was applied, send it again in \(wait) ms",
                log: log)
        }
        if !operations.holds(1, now: now) {
            let wait = operations.millisUntilFull(now: now)
            return Refusal(
                wait: wait, reason: operationsReason,
                log: EngineLog(
                    .warning, "peer.rate_limited",
                    meta + [
                        ("limit", "operations"), ("rate", "\(rateLimit.operationsPerSecond)"), ("burst", "\(rateLimit.burst)"),
                        ("retry_ms", "\(wait)"),
                    ]))
        }
        if !volume.holds(cost, now: now) {
            let wait = volume.millisUntilFull(now: now)
            return Refusal(
                wait: wait,
                reason: "more than \(Self.sizeText(limits.bytes.perSecond)) per second "
                    + "(bursts of \(Self.sizeText(limits.bytes.capacity))); nothing was applied, send it again in \(wait) ms",
                log: EngineLog(
                    .warning, "peer.rate_limited",
                    meta + [
                        ("limit", "bytes"), ("rate_bytes", "\(Int(limits.bytes.perSecond))"),
                        ("burst_bytes", "\(Int(limits.bytes.capacity))"), ("retry_ms", "\(wait)"),
                    ]))
        }
        return nil
    }

    /// The answer's text when a terminal sent too many operations.
    private var operationsReason: String {
        "more than \(Int(rateLimit.operationsPerSecond)) operations per second (bursts of \(Int(rateLimit.burst))); "
            + "nothing was applied"
    }

    /// Answers a refused operation: the error with its hint and, for a slave, the `result`
    /// that lets it settle what it sent.
    private func refuseRateLimited(
        _ message: OperationMessage, peer id: Int, retryAfter: Int64, because reason: String, _ out: inout [Action]
    ) {
        peers[id]?.rejected += 1
        let text = reason.contains("send it again") ? reason : "\(reason), send it again in \(retryAfter) ms"
        var error = WireError(.rateLimited, text)
        error.retryAfterMillis = retryAfter
        out.append(.send(peer: id, bytes: ServerMessage.error(error, opId: message.opId, operation: message.operation).encodedBytes()))
        if let opId = message.opId, peers[id]?.speaksOrderSync == true {
            out.append(
                .send(peer: id, bytes: ServerMessage.result(opId: opId, seq: nil, applied: 0, unchanged: 0, failed: 1).encodedBytes()))
        }
    }

    /// Books what an applied operation from peer `id` added to the journal against its
    /// terminal's budget (a repeat adds nothing).
    func chargeJournal(_ outcome: ApplyOutcome, from id: Int, now: Int64) {
        guard let text = outcome.broadcast, !outcome.isRepeat, let p = peers[id] else { return }
        let key = bucketKey(for: p)
        var budget = limits.journalBuckets[key] ?? TokenBucket(allowance: limits.journal, now: now)
        budget.charge(Double(text.count), now: now)
        limits.journalBuckets[key] = budget
    }

    /// True when `hello` can only be answered with a snapshot, whatever the journal holds
    /// (the cheap part of `catchUp`'s conditions: another epoch, a sequence from the future, or
    /// too far behind).
    static func needsSnapshot(_ hello: HelloMessage, epoch: String, lastSeq: Int64, maxCatchUp: Int) -> Bool {
        guard let e = hello.epoch, e == epoch, hello.lastSeq >= 0, hello.lastSeq <= lastSeq else { return true }
        return lastSeq - hello.lastSeq > Int64(maxCatchUp)
    }

    /// True when peer `id` may get a snapshot now (one is taken from its bucket when `take`);
    /// otherwise its hello has been answered `rate_limited` with the wait and its link is being
    /// closed (1013, try again later), and nothing is saved of it when it goes.
    func admitSnapshot(for id: Int, now: Int64, take: Bool, _ out: inout [Action]) -> Bool {
        guard let p = peers[id], p.speaksOrderSync else { return true }
        let key = bucketKey(for: p)
        var bucket = limits.snapshotBuckets[key] ?? TokenBucket(allowance: limits.snapshots, now: now)
        let admitted = take ? bucket.take(now: now) : bucket.holds(1, now: now)
        limits.snapshotBuckets[key] = bucket
        guard !admitted else { return true }
        let wait = bucket.millisUntil(holding: 1, now: now)
        let perMinute = limits.snapshots.perSecond * 60
        let every = Int((1 / limits.snapshots.perSecond).rounded())
        let rate = perMinute >= 1 ? "\(Int(perMinute.rounded())) per minute" : "one every \(every) s"
        let reason =
            "this terminal needs a snapshot and had more than \(Int(limits.snapshots.capacity)) in a row "
            + "(then \(rate)); connect again in \(wait) ms"
        var meta: [(String, String)] = [("peer.address", p.address), ("retry_ms", "\(wait)")]
        if let name = p.terminalName { meta.append(("terminal", name)) }
        logRefusal(EngineLog(.warning, "peer.snapshot_limited", meta), source: key, reason: reason, now: now, &out)
        var error = WireError(.rateLimited, reason)
        error.retryAfterMillis = wait
        peers[id]?.rejected += 1
        // Still `awaitingHello` for `peerDisconnected` (nothing to remember of it), but read no
        // more: its link is closing.
        limits.refusedHellos.insert(id)
        out.append(.send(peer: id, bytes: ServerMessage.error(error, opId: nil, operation: nil).encodedBytes()))
        out.append(.close(peer: id, code: MasterEngine.tryAgainLater, reason: "snapshot rate limited"))
        return false
    }

    /// Logs a refusal's line unless its source already had its share this minute (20 lines) (then it is
    /// counted for the summary), and the summaries that came due.
    func logRefusal(_ line: EngineLog, source: String, reason: String, now: Int64, _ out: inout [Action]) {
        if limits.summary.note(line.event, source: source, reason: reason, now: now) { out.append(.log(line)) }
        if limits.summary.hasPending { refusalSummaries(now: now, &out) }
    }

    /// The summary lines of refusals not logged in full whose minute is over
    /// (`refusals.summary`, one per kind and source).
    func refusalSummaries(now: Int64, _ out: inout [Action]) {
        for due in limits.summary.due(now: now) {
            out.append(
                .log(
                    EngineLog(
                        .warning, "refusals.summary",
                        [
                            ("event", due.event), ("source", due.source), ("count", "\(due.count)"),
                            ("window_ms", "\(now - due.sinceMillis)"), ("last_reason", due.lastReason),
                        ])))
        }
    }

    /// Forgets the buckets that are full: a new one would be the same.
    func forgetFullBuckets(now: Int64) {
        buckets = buckets.filter { !$0.value.isFull(now: now) }
        limits.forgetFull(now: now, livePeers: Set(peers.keys))
    }
}

extension MasterEngine {
    /// Refuses peer `id`'s operation `bytes` unapplied: the master cannot acknowledge it now and
    /// holds the most it may (`LeaseHeldMessages`, `--auto-failover`). Answered as a rate limit
    /// is: `rate_limited` with `reason` and the wait, and for an OrderSync slave the `result`
    /// that keeps it in its outbox until it sends it again then. Nothing for a message that is not
    /// an operation.
    public func refuseUnheld(_ bytes: [UInt8], from id: Int, retryAfter: Int64, because reason: String) -> [Action] {
        guard peers[id] != nil, case .success(.operation(let message)) = ClientMessage.decode(bytes) else { return [] }
        var out: [Action] = []
        refuseRateLimited(message, peer: id, retryAfter: retryAfter, because: reason, &out)
        return out
    }
}
