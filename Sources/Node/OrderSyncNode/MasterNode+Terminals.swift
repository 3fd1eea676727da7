import EventLoopIO
import Foundation
import Logging
import OrderStore
import SyncCore
import WebSocket
import WebSocketTransport

extension MasterNode {
    /// A terminal connected at TCP level: wait for its WebSocket upgrade.
    func terminalConnected(_ a: AcceptedSocket) {
        guard !shuttingDown else {
            a.socket.close()
            return
        }
        guard sessions.count < configuration.maxConnections else {
            // Full: refuse at once rather than let a flood of idle sockets starve the loop.
            // A legitimate slave retries with backoff.
            logger.warning(
                "peer.refused",
                metadata: [
                    "peer.address": "\(a.peerAddress)", "reason": "connection limit",
                    "limit": "\(configuration.maxConnections)",
                ])
            a.socket.close()
            return
        }
        if let reason = addressLimitReached(a.peerAddress) {
            logger.warning("peer.refused", metadata: ["peer.address": "\(a.peerAddress)", "reason": "\(reason)"])
            a.socket.close()
            return
        }
        do {
            let id = nextSessionId
            let transport = try WebSocketChannel.accept(
                a.socket, loop: loop,
                configuration: configuration.webSocketChannelConfiguration
            ) { request in
                // StorePOS terminals ask for no subprotocol; OrderSync slaves for ours.
                .accept(subprotocol: request.requestedSubprotocols.contains(orderSyncSubprotocol) ? orderSyncSubprotocol : nil)
            }
            let session = TerminalSession(id: id, transport: transport, address: a.peerAddress, now: loop.now)
            nextSessionId += 1
            sessions[id] = session
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
                guard let self = self, let s = session, let beat = self.engine.heartbeat(for: s.id) else { return .ping }
                s.transport.sendText(beat)
                return .sentHeartbeat
            }
        } catch {
            logger.warning("peer.accept_failed", metadata: ["error": "\(error)"])
        }
    }

    func terminalEvent(_ event: WebSocketChannel.Event, session s: TerminalSession) {
        switch event {
        case .opened(let opening):
            s.speaksOrderSync = opening.subprotocol == orderSyncSubprotocol
            s.phase = .open
            logger.info(
                "peer.connected",
                metadata: [
                    "peer.address": "\(s.address)", "peer.protocol": "\(s.speaksOrderSync ? "ordersync" : "storepos")",
                    "peers": "\(sessions.count)",
                ])
            ensureMaintenanceTimer()
            perform(engine.peerConnected(s.id, address: s.address, speaksOrderSync: s.speaksOrderSync))
            sendSnapshotParts(to: s)
        case .text(let text):
            terminalMessage(text, from: s)
        case .binary:
            // Text only: the transport closes with 1003 instead of delivering binary.
            break
        case .protocolError(let error):
            logger.warning("peer.protocol_error", metadata: ["peer.address": "\(s.address)", "error": "\(error)"])
        case .ended(let ending):
            switch ending.cause {
            case .handshakeTimedOut:
                logger.warning("peer.handshake_timeout", metadata: ["peer.address": "\(s.address)"])
            case .rejected(let rejection):
                logger.warning(
                    "peer.handshake_rejected",
                    metadata: [
                        "peer.address": "\(s.address)", "http.status": "\(rejection.status)",
                        "reason": "\(rejection.reason)",
                    ])
            case .peerSilent(let silence):
                logger.warning("peer.dead", metadata: ["peer.address": "\(s.address)", "silent_ms": "\(silence.wholeMilliseconds)"])
            default:
                break
            }
            endSession(s, code: ending.closeCode?.rawValue, reason: "\(ending)")
        }
    }

    func endSession(_ s: TerminalSession, code: UInt16?, reason: String) {
        guard s.phase != .ended else { return }
        let wasConnected = s.phase == .open
        let name = engine.peers[s.id]?.terminalName
        s.phase = .ended
        sessions[s.id] = nil
        perform(engine.peerDisconnected(s.id, now: WallClock.nowMillis()))
        if wasConnected {
            var meta: Logger.Metadata = ["peer.address": "\(s.address)", "reason": "\(reason)", "peers": "\(sessions.count)"]
            if let c = code { meta["ws.close_code"] = "\(c)" }
            if let n = name { meta["terminal"] = "\(n)" }
            logger.info("peer.disconnected", metadata: meta)
        }
        sessionEnded()
    }

    func terminalMessage(_ text: String, from s: TerminalSession) {
        perform(engine.received(text, from: s.id, now: WallClock.nowMillis()))
        sendSnapshotParts(to: s)
    }

    /// Sends the terminal's next snapshot parts while its link has room (fewer unsent bytes
    /// than the low-water mark); the transport's drained callback calls again for the rest.
    func sendSnapshotParts(to s: TerminalSession) {
        let lowWater = min(configuration.snapshotLowWaterBytes, configuration.maxPendingSendBytes / 2)
        while s.phase == .open, s.transport.isOpen, engine.isReceivingSnapshot(s.id), s.transport.pendingSendBytes < lowWater {
            perform(engine.snapshotDue(for: s.id))
        }
    }

    /// Carries out what the engine asked for. A broadcast frame is encoded once and the same
    /// bytes go to every live terminal.
    func perform(_ actions: [MasterEngine.Action]) {
        for action in actions {
            switch action {
            case .send(let id, let text):
                sessions[id]?.transport.sendText(text)
            case .broadcast(let text, let peers):
                let frame = WebSocketChannel.serverTextFrame(text)
                for id in peers { sessions[id]?.transport.sendEncoded(frame) }
            case .close(let id, let code, let reason):
                sessions[id]?.close(code: CloseCode(code), reason: reason)
            case .log(let record):
                logger.log(record)
            }
        }
    }

    /// The engine's housekeeping runs while terminals are connected (liveness is each
    /// transport's own).
    func ensureMaintenanceTimer() {
        guard maintenanceTimer == nil else { return }
        let interval = max(.milliseconds(500), configuration.pingInterval / 2)
        maintenanceTimer = loop.schedule(after: interval) { [weak self] in
            guard let self = self else { return }
            self.maintenanceTimer = nil
            self.perform(self.engine.maintenance(now: WallClock.nowMillis()))
            if !self.sessions.isEmpty { self.ensureMaintenanceTimer() }
        }
    }
}
