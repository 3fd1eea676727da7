import EventLoopIO
import Foundation
import Logging
import OrderStore
import SyncCore
import WebSocket
import WebSocketTransport

extension MasterNode {
    /// A terminal connected at TCP level: wait for its WebSocket upgrade, with a handshake-sized
    /// message limit until it authenticates (`terminalChannelConfiguration`).
    func terminalConnected(_ a: AcceptedSocket) {
        loop.assertInEventLoop()
        guard !shuttingDown else {
            a.socket.close()
            return
        }
        guard admitConnection(a) else { return }
        // A StorePOS link is kept while TCP holds it (its app does not answer pings while the
        // iPad is locked): keepalive probes and the user timeout find a host that is gone.
        let keepAlive = configuration.storePOSKeepAlive
        try? a.socket.setKeepAlive(true, idle: keepAlive, interval: max(.seconds(1), keepAlive / 3), probes: 3)
        try? a.socket.setUserTimeout(keepAlive * 2)
        do {
            let added = try terminals.add { id in
                let transport = try WebSocketChannel.accept(
                    a.socket, loop: loop,
                    configuration: terminalChannelConfiguration,
                    decide: Self.handshakeDecision)
                return TerminalSession(
                    id: id, transport: transport, address: a.peerAddress, host: Self.host(of: a.peerAddress), now: loop.now)
            }
            guard let session = added else {
                a.socket.close()
                return
            }
            let transport = session.transport
            transport.onEvent = { [weak self, weak session] event in
                guard let self = self, let s = session else { return }
                self.terminalEvent(event, session: s)
            }
            // The heartbeat tells the slave the latest sequence: it notices what it missed, and
            // its ack tells the master how far behind it is. StorePOS terminals are pinged.
            // Flow control: the next snapshot part when the link has sent most of what waits.
            transport.onSendDrained = { [weak self, weak session] in
                guard let self = self, let s = session else { return }
                self.sendSnapshotParts(to: s)
            }
            transport.onIdle = { [weak self, weak session] in
                // During a commit the engine's sequence is ahead of what left: a ping then.
                guard let self = self, let s = session, !self.writer.isCommitting,
                    let beat = self.engine.heartbeat(for: s.id, now: WallClock.nowMillis())
                else {
                    return .ping
                }
                self.send(beat, to: s)
                return .sentHeartbeat
            }
        } catch {
            logger.warning("peer.accept_failed", metadata: ["error": "\(error)"])
        }
    }

    func terminalEvent(_ event: WebSocketChannel.Event, session s: TerminalSession) {
        loop.assertInEventLoop()
        switch event {
        case .opened(let opening):
            terminalOpened(opening, session: s)
        case .text(let text):
            guard case .storePOS = s.framing else {
                // Docs/SECURITY.md: "A text message on either subprotocol closes the link (1003)."
                s.close(code: .unsupportedData, reason: "only binary messages of the secure link are accepted")
                return
            }
            terminalMessage(Array(text.utf8), from: s)
        case .binary(let bytes):
            guard let secure = s.secure else {
                // A StorePOS link is text only, as before.
                s.close(code: .unsupportedData, reason: "only text messages are accepted")
                return
            }
            secureMessage(bytes, from: s, link: secure)
        case .protocolError(let error):
            // A client's mistake (a malformed frame, or one over the limit before authentication),
            // not a fault of the master; before authentication, counted like a failed handshake.
            let quiet = s.isPreAuthentication && !handshakeLedger.logsFailureInFull(s.host)
            logger.log(
                level: quiet ? .debug : .notice, "peer.protocol_error", metadata: ["peer.address": "\(s.address)", "error": "\(error)"])
        case .ended(let ending):
            switch ending.cause {
            case .handshakeTimedOut:
                let level = s.handshakePending ? handshakeFailureLevel(s) : refusalLevel(s.host)
                logger.log(level: level, "peer.handshake_timeout", metadata: ["peer.address": "\(s.address)"])
            case .rejected(let rejection):
                logger.log(
                    level: refusalLevel(s.host, .notice), "peer.handshake_rejected",
                    metadata: [
                        "peer.address": "\(s.address)", "http.status": "\(rejection.status)",
                        "reason": "\(rejection.reason)",
                    ])
            case .peerSilent(let silence):
                logger.warning("peer.dead", metadata: ["peer.address": "\(s.address)", "silent_ms": "\(silence.wholeMilliseconds)"])
            default:
                break
            }
            if case .storePOS = s.framing, s.phase == .open { storePOSLinkEnded(s, ending) }
            endSession(s, code: ending.closeCode?.rawValue, reason: "\(ending)")
        }
    }

    func endSession(_ s: TerminalSession, code: UInt16?, reason: String) {
        guard s.phase != .ended else { return }
        handshakeEnded(s, authenticated: false)
        let wasConnected = s.phase == .open
        let name = engine.peers[s.id]?.terminalName
        s.phase = .ended
        metrics.counts.endedTraffic.add(s.transport.traffic)
        for t in [s.authenticationTimer, s.settleTimer].compactMap({ $0 }) { loop.cancel(t) }
        s.authenticationTimer = nil
        s.settleTimer = nil
        terminals.remove(s)
        candidateLostLink(s)
        lease?.held.ended(s.id)
        // After its messages still waiting (a StorePOS terminal may send and close at once), in
        // a group: what the engine saves of the terminal commits off the loop with the others.
        enqueue(.disconnected(session: s.id))
        if wasConnected {
            var meta: Logger.Metadata = ["peer.address": "\(s.address)", "reason": "\(reason)", "peers": "\(sessions.count)"]
            if let c = code { meta["ws.close_code"] = "\(c)" }
            if let n = name { meta["terminal"] = "\(n)" }
            logger.info("peer.disconnected", metadata: meta)
        }
        sessionEnded()
    }

    /// A sync message (UTF-8 JSON bytes): applied with the others of this loop turn in the next
    /// group.
    func terminalMessage(_ bytes: [UInt8], from s: TerminalSession) {
        if candidateHolds(bytes, from: s) || leaseHolds(bytes, from: s) { return }
        enqueue(.message(session: s.id, bytes: bytes))
    }

    /// Sends the terminal's next snapshot parts while its link has room (fewer unsent bytes
    /// than the low-water mark); the transport's drained callback calls again for the rest.
    func sendSnapshotParts(to s: TerminalSession) {
        // Parts wait while a group commits: what is held for the terminal may include the
        // group's broadcasts, which must not leave before the commit.
        guard !writer.isCommitting else {
            group.snapshotWaiting.insert(s.id)
            return
        }
        let lowWater = min(configuration.snapshotLowWaterBytes, configuration.maxPendingSendBytes / 2)
        // The parts of this turn leave together, a write per `SnapshotBatch.flushBytes`.
        var batch = SnapshotBatch()
        while s.phase == .open, s.transport.isOpen, engine.isReceivingSnapshot(s.id) {
            if engine.isSnapshotSettling(s.id) {
                batch.flush(to: s, node: self)
                guard s.settleTimePassed, s.transport.pendingSendBytes == 0 else { break }
                s.settleTimePassed = false
                perform(engine.snapshotSettled(s.id))
            } else if s.transport.pendingSendBytes + batch.bytes < lowWater {
                // Nothing due: the next part's orders are still being read (`PagedSnapshotRead`
                // calls again when they are there).
                let room = lowWater - s.transport.pendingSendBytes - batch.bytes
                let due = engine.snapshotDue(for: s.id, maxParts: batch.roomParts, maxBytes: min(room, batch.roomBytes))
                if due.isEmpty { break }
                batch.add(due, for: s, node: self)
                if batch.isFull { batch.flush(to: s, node: self) }
            } else {
                break
            }
        }
        batch.flush(to: s, node: self)
        if s.phase == .open, engine.isSnapshotSettling(s.id), s.settleTimer == nil { awaitSettle(s) }
    }

    /// A StorePOS app's connect sequence waits at a fence: after the settle time, and then as
    /// soon as the link has written everything (checked every 50 ms), the sequence goes on.
    private func awaitSettle(_ s: TerminalSession) {
        let wait = s.settleTimePassed ? Duration.milliseconds(50) : configuration.storePOSSettle
        s.settleTimer = loop.schedule(after: wait) { [weak self, weak s] in
            guard let self, let s else { return }
            s.settleTimer = nil
            s.settleTimePassed = true
            self.sendSnapshotParts(to: s)
        }
    }

    /// Carries out what the engine asked for. A broadcast is encoded once for every StorePOS
    /// terminal and sealed for each slave (every secure link has keys of its own); all frames
    /// for one terminal leave together, in one gathering write (`OutgoingFrames`).
    func perform(_ actions: [MasterEngine.Action]) {
        loop.assertInEventLoop()
        var out = OutgoingFrames(node: self)
        for action in actions {
            switch action {
            case .send(let id, let bytes):
                if let k = out.slot(of: id, in: sessions) { out.add(bytes, at: k) }
            case .broadcast(let bytes, let peers):
                var frame: [UInt8]?
                for id in peers {
                    guard let k = out.slot(of: id, in: sessions) else { continue }
                    guard out.isStorePOS(k) else {
                        out.add(bytes, at: k)
                        continue
                    }
                    if frame == nil { frame = WebSocketChannel.serverTextFrame(utf8: bytes) }
                    if let frame { out.add(frame: frame, at: k) }
                }
            case .close(let id, let code, let reason):
                guard let s = sessions[id] else { continue }
                out.flush(id)
                s.close(code: CloseCode(code), reason: reason)
            case .log(let record):
                logger.log(record)
            case .stepDown(let newer):
                // What the batch wrote so far leaves first, sealed in order.
                out.flushAll()
                // The engine already refused the hello and closed its link; the member of the
                // newer term is found by browsing (`considerStepDown`).
                staleTermSeen(newer)
            }
        }
        out.flushAll()
    }

    /// The engine's housekeeping runs while terminals are connected (liveness is each
    /// transport's own).
    func ensureMaintenanceTimer() {
        guard maintenanceTimer == nil else { return }
        let interval = max(.milliseconds(500), configuration.pingInterval / 2)
        maintenanceTimer = loop.schedule(after: interval) { [weak self] in
            guard let self = self else { return }
            self.maintenanceTimer = nil
            self.engine.rollup.shippedSeq = self.rollupCheckpoint()
            self.enqueue(.maintenance)
            if !self.sessions.isEmpty { self.ensureMaintenanceTimer() }
        }
    }
}
