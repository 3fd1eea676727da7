import EventLoopIO
import Logging
import SyncCore
import WebSocket

/// Admission of new connections (Docs/SECURITY.md "Before authentication"). Counted per IP
/// address, so one host on the LAN cannot hold every connection slot of the master: at most
/// `maxHandshakesPerAddress` not authenticated yet (each is dropped after the handshake timeout
/// anyway) and `maxConnectionsPerAddress` in all. Counted together, the unauthenticated
/// connections stay within the pre-authentication budget (memory, and never the reserved
/// slots); an address over its handshake rate is refused at accept, before any work.
extension MasterNode {
    /// Whether a connection from `peerAddress` may start; refuses it (closing the socket) when
    /// not. A full pre-authentication budget closes the oldest unauthenticated connection to
    /// make room, so a paired terminal always finds a slot.
    func admitConnection(_ a: AcceptedSocket) -> Bool {
        let host = Self.host(of: a.peerAddress)
        guard handshakeLimiter.hasHandshakeLeft(host, now: loop.now.sinceBoot.wholeMilliseconds) else {
            // Over its handshake rate: closed before the upgrade (the cheapest refusal: nothing
            // is counted but the address's summary), whatever its other connections.
            handshakeRefused(host)
            a.socket.close()
            return false
        }
        let counts = terminals.counts(host: host)
        if let reason = terminals.addressLimitReached(host, counts) {
            logger.log(level: refusalLevel(host), "peer.refused", metadata: ["peer.address": "\(a.peerAddress)", "reason": "\(reason)"])
            a.socket.close()
            return false
        }
        switch preAuthentication.admit(preAuthenticated: counts.preAuthenticated, total: counts.total) {
        case .admit:
            return true
        case .admitEvictingOldest:
            evictOldestUnauthenticated()
            return true
        case .refuse:
            // Full of authenticated terminals: refuse at once rather than let a flood of idle
            // sockets starve the loop. A legitimate slave retries with backoff.
            logger.log(
                level: refusalLevel(host), "peer.refused",
                metadata: [
                    "peer.address": "\(a.peerAddress)", "reason": "connection limit",
                    "limit": "\(configuration.maxConnections)",
                ])
            a.socket.close()
            return false
        }
    }

    /// Closes the unauthenticated connection accepted first (1013 once open); its slot goes to
    /// a newer one.
    private func evictOldestUnauthenticated() {
        guard let oldest = terminals.oldestUnauthenticated() else { return }
        oldest.evicted = true
        handshakeRefused(oldest.host)
        oldest.close(code: .tryAgainLater, reason: "too many connections not authenticated; try again later")
    }

    /// Takes a handshake of `s`'s address before its secure link reads anything (before any
    /// X25519 work); over the rate of the address or of all, the link closes with 1013.
    func beginHandshake(_ s: TerminalSession) -> Bool {
        let host = s.host
        if let refusal = handshakeLimiter.begin(host, now: loop.now.sinceBoot.wholeMilliseconds) {
            handshakeRefused(host)
            let whose = refusal == .address ? "from this address" : "on this master"
            s.close(code: .tryAgainLater, reason: "too many handshakes \(whose); try again later")
            return false
        }
        handshakeLedger.started(host)
        s.handshakePending = true
        ensureHandshakeSummaryTimer()
        return true
    }

    /// The handshake of `s` ended: authenticated, or not (failed, refused, timed out, or the
    /// peer left, as after a pairing's second message); counted once.
    func handshakeEnded(_ s: TerminalSession, authenticated: Bool) {
        guard s.handshakePending else { return }
        s.handshakePending = false
        let host = s.host
        if authenticated {
            handshakeLedger.succeeded(host)
        } else {
            handshakeLedger.failed(host)
        }
        ensureHandshakeSummaryTimer()
    }

    /// The level of a handshake failure's own line: a warning while the address's allowance of
    /// full lines lasts, then debug (counted in its summary).
    func handshakeFailureLevel(_ s: TerminalSession) -> Logger.Level {
        handshakeLedger.logsFailureInFull(s.host) ? .warning : .debug
    }

    /// The level of the line about a connection of `host` refused before any handshake work (a
    /// plain client the master does not admit, an upgrade refused or not finished in time, an
    /// address over its caps): counted in the address's summary, and logged at `level` while
    /// the address's allowance of full lines lasts, then at debug, so that a host refused again
    /// and again costs a few lines and one summary per interval.
    func refusalLevel(_ host: String, _ level: Logger.Level = .warning) -> Logger.Level {
        let inFull = handshakeLedger.refusedLogsInFull(host)
        ensureHandshakeSummaryTimer()
        return inFull ? level : .debug
    }

    private func handshakeRefused(_ host: String) {
        handshakeLedger.refused(host)
        ensureHandshakeSummaryTimer()
    }

    /// One `peer.handshake_summary` line per address that failed or was refused, every
    /// `logSummaryInterval` while there is something to say.
    private func ensureHandshakeSummaryTimer() {
        guard handshakeSummaryTimer == nil else { return }
        handshakeSummaryTimer = loop.schedule(after: configuration.logSummaryInterval) { [weak self] in
            guard let self else { return }
            self.handshakeSummaryTimer = nil
            self.logHandshakeSummaries()
            self.handshakeLimiter.prune(now: self.loop.now.sinceBoot.wholeMilliseconds)
        }
    }

    /// Logs the summaries of the interval so far (each interval's end, and at shutdown so that
    /// the last counts of a flood are not lost).
    func logHandshakeSummaries() {
        let seconds = Int(configuration.logSummaryInterval.seconds.rounded())
        for summary in handshakeLedger.endInterval() {
            let c = summary.counts
            logger.warning(
                "peer.handshake_summary",
                metadata: [
                    "peer.host": "\(summary.host)", "interval_s": "\(seconds)", "handshakes": "\(c.started)",
                    "succeeded": "\(c.succeeded)", "failed": "\(c.failed)", "refused": "\(c.refused)",
                    "unlogged": "\(c.unlogged)",
                ])
        }
    }

    /// The host part of `ip:port` or `[ip]:port`.
    static func host(of address: String) -> String {
        if address.hasPrefix("["), let end = address.firstIndex(of: "]") {
            return String(address[address.index(after: address.startIndex)..<end])
        }
        guard let colon = address.lastIndex(of: ":"), address.firstIndex(of: ":") == colon else { return address }
        return String(address[..<colon])
    }
}
