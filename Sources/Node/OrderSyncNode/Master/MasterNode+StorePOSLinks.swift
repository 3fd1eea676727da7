import EventLoopIO
import Logging
import WebSocket
import WebSocketTransport

/// When the master withdraws and announces its service again after StorePOS links were lost:
/// the StorePOS app never reconnects after a close; only a service that goes away and comes
/// back makes it connect again (and so receive its connect sequence). One re-announcement
/// serves every loss before it; they are at least `interval` apart. Pure: the node runs it on
/// its loop's clock.
struct StorePOSReannounce: Equatable {
    /// Where it stands.
    enum Phase: Equatable {
        /// Nothing to do.
        case idle
        /// A loss waits for the service to be withdrawn.
        case due
        /// Withdrawn; announced again after the pause.
        case withdrawn
    }

    private(set) var phase = Phase.idle
    /// When the service was last announced again.
    private(set) var lastAnnounced: MonotonicInstant?
    /// Losses since the last re-announcement (for the log).
    private(set) var losses = 0

    /// A StorePOS link was lost at `now`: how long until the service is withdrawn, or nil when
    /// a re-announcement already under way covers it.
    mutating func linkLost(now: MonotonicInstant, interval: Duration) -> Duration? {
        losses += 1
        guard phase == .idle else { return nil }
        phase = .due
        guard let last = lastAnnounced else { return .zero }
        let earliest = last + interval
        return earliest > now ? earliest - now : .zero
    }

    /// The service was withdrawn; it is announced again after the pause. Returns the losses
    /// it answers.
    mutating func withdrew() -> Int {
        phase = .withdrawn
        let answered = losses
        losses = 0
        return answered
    }

    /// The service was announced again at `now`.
    mutating func announced(now: MonotonicInstant) {
        phase = .idle
        lastAnnounced = now
    }
}

/// StorePOS terminals' links (`--insecure-storepos`): never dropped for being quiet, one per
/// address, and brought back by announcing the service again when one was lost anyway.
extension MasterNode {
    /// A StorePOS link is kept while TCP holds it: its app does not answer pings while its iPad
    /// is locked (the socket's keepalive, set at accept, finds a host that is gone). StorePOS
    /// links of the same address that were open when the service was withdrawn are closed: their
    /// app reconnects without closing its old socket, which would otherwise deliver every
    /// broadcast twice. (Several plain clients of one address otherwise coexist.)
    func keepStorePOSLink(_ s: TerminalSession) {
        s.transport.toleratesSilence = true
        s.transport.onSilenceTolerated = { [weak self, weak s] silence in
            guard let self, let s else { return }
            self.logger.info(
                "storepos.quiet",
                metadata: [
                    "peer.address": "\(s.address)", "silent_ms": "\(silence.wholeMilliseconds)",
                    "hint": "a StorePOS app does not answer pings while its iPad is locked; the link is kept while TCP holds it",
                ])
        }
        let host = Self.host(of: s.address)
        for other in sessions.values.sorted(by: { $0.id < $1.id })
        where other.id != s.id && other.phase == .open && other.supersededOnReconnect {
            guard case .storePOS = other.framing, Self.host(of: other.address) == host else { continue }
            other.replaced = true
            logger.info(
                "storepos.replaced",
                metadata: ["peer.address": "\(other.address)", "new.peer.address": "\(s.address)"])
            other.close(code: .normal, reason: "replaced by a new connection from the same address")
        }
    }

    /// A StorePOS link ended. Unless the app closed it itself, it was replaced, or the master
    /// is stopping, the app will not come back by itself: the service is withdrawn and
    /// announced again so that it reconnects.
    func storePOSLinkEnded(_ s: TerminalSession, _ ending: WebSocketChannel.Ending) {
        guard !shuttingDown, !s.replaced else { return }
        if case .closed = ending.cause, !s.closedByMaster { return }
        guard discovery != nil, avahiState != .unavailable else {
            logger.warning(
                "storepos.link_lost",
                metadata: [
                    "peer.address": "\(s.address)", "reason": "\(ending)",
                    "hint": "the app reconnects only when the service comes back; without Avahi restart its app",
                ])
            return
        }
        logger.info("storepos.link_lost", metadata: ["peer.address": "\(s.address)", "reason": "\(ending)"])
        guard let delay = storePOSReannounce.linkLost(now: loop.now, interval: configuration.storePOSReannounceInterval) else {
            return
        }
        _ = loop.schedule(after: delay) { [weak self] in self?.withdrawForStorePOS() }
    }

    /// Withdraws the service; it comes back after the pause.
    private func withdrawForStorePOS() {
        guard !shuttingDown else { return }
        let losses = storePOSReannounce.withdrew()
        logger.info(
            "storepos.reannounce",
            metadata: [
                "links_lost": "\(losses)", "pause_ms": "\(configuration.storePOSReannouncePause.wholeMilliseconds)",
                "hint": "the service is withdrawn and announced again so that StorePOS apps reconnect",
            ])
        for s in sessions.values where s.phase == .open {
            if case .storePOS = s.framing { s.supersededOnReconnect = true }
        }
        discovery?.unpublish()
        publishedName = nil
        _ = loop.schedule(after: configuration.storePOSReannouncePause) { [weak self] in
            guard let self, !self.shuttingDown else { return }
            self.storePOSReannounce.announced(now: self.loop.now)
            self.publishService()
        }
    }
}
