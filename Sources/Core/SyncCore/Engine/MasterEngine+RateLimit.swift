/// The per-terminal rate limit: a token bucket per terminal (its terminal id once it said
/// hello, otherwise its IP address), one token per operation message.
///
/// A terminal over its limit is throttled until its bucket is full again: every operation it
/// sends meanwhile is answered `rate_limited` with the milliseconds left (`retryAfterMs`) and
/// is neither applied nor recorded (a flood must not fill the rejection log). An OrderSync
/// slave keeps such an operation in its outbox and sends it again, in order, after the hint;
/// the master goes on refusing that slave's operations until the first refused one comes
/// back, so a later operation never overtakes an earlier one.
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

    /// Whose bucket a terminal draws from.
    func bucketKey(for p: Peer) -> String {
        if let terminal = p.terminalId { return "terminal \(terminal)" }
        return "address \(Self.host(of: p.address))"
    }

    /// The host part of `ip:port` or `[ip]:port`.
    static func host(of address: String) -> String {
        if address.hasPrefix("["), let end = address.firstIndex(of: "]") {
            return String(address[address.index(after: address.startIndex)..<end])
        }
        guard let colon = address.lastIndex(of: ":"), address.firstIndex(of: ":") == colon else { return address }
        return String(address[..<colon])
    }

    /// True when `message` from peer `id` may be applied now; otherwise it has been answered
    /// `rate_limited` in `out`.
    func admit(_ message: OperationMessage, from id: Int, now: Int64, _ out: inout [Action]) -> Bool {
        guard let p = peers[id] else { return false }
        let key = bucketKey(for: p)
        if case .throttled(let until, let resumeWith) = p.admission {
            guard now >= until, resumeWith == nil || resumeWith == message.opId else {
                refuseRateLimited(message, peer: id, retryAfter: max(1, until - now), &out)
                return false
            }
            peers[id]?.admission = .admitting
        }
        var bucket = buckets[key] ?? TokenBucket(limit: rateLimit, now: now)
        let admitted = bucket.take(now: now)
        buckets[key] = bucket
        guard !admitted else { return true }
        let wait = bucket.millisUntilFull(now: now)
        peers[id]?.admission = .throttled(until: now + wait, resumeWith: p.speaksOrderSync ? message.opId : nil)
        var meta: [(String, String)] = [
            ("peer.address", p.address), ("rate", "\(rateLimit.operationsPerSecond)"),
            ("burst", "\(rateLimit.burst)"), ("retry_ms", "\(wait)"),
        ]
        if let name = p.terminalName { meta.append(("terminal", name)) }
        out.append(.log(EngineLog(.warning, "peer.rate_limited", meta)))
        refuseRateLimited(message, peer: id, retryAfter: wait, &out)
        return false
    }

    /// Answers a refused operation: the error with its hint and, for a slave, the `result`
    /// that lets it settle what it sent.
    private func refuseRateLimited(_ message: OperationMessage, peer id: Int, retryAfter: Int64, _ out: inout [Action]) {
        peers[id]?.rejected += 1
        var error = WireError(
            .rateLimited,
            "more than \(Int(rateLimit.operationsPerSecond)) operations per second (bursts of \(Int(rateLimit.burst))); "
                + "nothing was applied, send it again in \(retryAfter) ms")
        error.retryAfterMillis = retryAfter
        out.append(.send(peer: id, text: ServerMessage.error(error, opId: message.opId, operation: message.operation).encoded()))
        if let opId = message.opId, peers[id]?.speaksOrderSync == true {
            out.append(
                .send(peer: id, text: ServerMessage.result(opId: opId, seq: nil, applied: 0, unchanged: 0, failed: 1).encoded()))
        }
    }

    /// Forgets the buckets that are full: a new one would be the same.
    func forgetFullBuckets(now: Int64) {
        buckets = buckets.filter { !$0.value.isFull(now: now) }
    }
}
