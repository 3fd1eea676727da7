import Foundation
import Logging
import OrderStore
import Posix
import SyncCore
import WebSocket

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
            logger.warning("peer.refused", metadata: ["peer.address": "\(a.peerAddress)", "reason": "connection limit",
                                                      "limit": "\(configuration.maxConnections)"])
            a.socket.close()
            return
        }
        do {
            // Small JSON messages go out at once: Nagle's algorithm with delayed ACKs would hold
            // each broadcast back for tens of milliseconds.
            try? a.socket.setNoDelay(true)
            let channel = try StreamChannel(socket: a.socket, loop: loop)
            channel.maxPendingBytes = NodeDefaults.maxPendingSendBytes
            let session = TerminalSession(id: nextSessionId, channel: channel, address: a.peerAddress, now: loop.now,
                                          configuration: configuration.webSocketConfiguration)
            nextSessionId += 1
            sessions[session.id] = session
            channel.onRead = { [weak self, weak session] bytes in
                guard let self = self, let s = session else { return }
                self.handshakeBytes(bytes, session: s)
            }
            channel.onClose = { [weak self, weak session] reason in
                guard let self = self, let s = session else { return }
                self.endSession(s, code: nil, reason: "\(reason)")
            }
            // Slowloris: the upgrade request must arrive within the handshake deadline.
            session.handshakeTimer = loop.schedule(after: configuration.handshakeTimeout) { [weak self, weak session] in
                guard let self = self, let s = session, s.phase == .handshaking else { return }
                self.logger.warning("peer.handshake_timeout", metadata: ["peer.address": "\(s.address)"])
                s.channel.close()
                self.endSession(s, code: nil, reason: "no WebSocket handshake within \(self.configuration.handshakeTimeout.wholeMilliseconds) ms")
            }
        } catch {
            logger.warning("peer.accept_failed", metadata: ["error": "\(error)"])
        }
    }

    func handshakeBytes(_ bytes: [UInt8], session s: TerminalSession) {
        guard s.phase == .handshaking else { return }
        s.pending += bytes
        switch s.handshake.parse(s.pending) {
        case .incomplete:
            return
        case .rejected(let rejection):
            logger.warning("peer.handshake_rejected", metadata: ["peer.address": "\(s.address)", "http.status": "\(rejection.status)",
                                                                "reason": "\(rejection.reason)"])
            s.channel.write(rejection.bytes)
            s.channel.closeAfterFlush()
            endSession(s, code: nil, reason: "handshake rejected (\(rejection.status))")
        case .accepted(let request, let consumed):
            if let t = s.handshakeTimer { loop.cancel(t) }
            s.handshakeTimer = nil
            let rest = Array(s.pending[consumed...])
            s.pending = []
            s.speaksOrderSync = request.requestedSubprotocols.contains(orderSyncSubprotocol)
            s.channel.write(ServerHandshake.response(for: request, subprotocol: s.speaksOrderSync ? orderSyncSubprotocol : nil))
            let link = WebSocketLink(channel: s.channel, loop: loop, role: .server, configuration: configuration.webSocketConfiguration)
            link.frameDeadlineMillis = configuration.frameTimeout.wholeMilliseconds
            s.link = link
            link.onText = { [weak self, weak s] text in
                guard let self = self, let s = s else { return }
                self.terminalMessage(text, from: s)
            }
            link.onProtocolError = { [weak self, weak s] error in
                self?.logger.warning("peer.protocol_error", metadata: ["peer.address": "\(s?.address ?? "?")", "error": "\(error)"])
            }
            link.onEnd = { [weak self, weak s] ending in
                guard let self = self, let s = s else { return }
                self.endSession(s, code: ending.code, reason: ending.reason)
            }
            logger.info("peer.connected", metadata: ["peer.address": "\(s.address)", "peer.protocol": "\(s.speaksOrderSync ? "ordersync" : "storepos")",
                                                     "peers": "\(sessions.count)"])
            ensureLivenessTimer()
            s.phase = .open
            perform(engine.peerConnected(s.id, address: s.address, speaksOrderSync: s.speaksOrderSync))
            if !rest.isEmpty { link.receive(rest) }
        }
    }

    func endSession(_ s: TerminalSession, code: UInt16?, reason: String) {
        guard s.phase != .ended else { return }
        let wasConnected = s.phase == .open
        let name = engine.peers[s.id]?.terminalName
        s.phase = .ended
        if let t = s.handshakeTimer { loop.cancel(t) }
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
    }

    /// Carries out what the engine asked for. A broadcast frame is encoded once and the same
    /// bytes go to every live terminal.
    func perform(_ actions: [MasterEngine.Action]) {
        for action in actions {
            switch action {
            case .send(let id, let text):
                sessions[id]?.link?.sendText(text)
            case .broadcast(let text, let peers):
                let frame = FrameEncoder.encode(Frame(fin: true, opcode: .text, payload: Array(text.utf8)), maskingKey: nil)
                for id in peers { sessions[id]?.link?.sendEncoded(frame) }
            case .close(let id, let code, let reason):
                sessions[id]?.close(code: CloseCode(code), reason: reason)
            case .log(let record):
                logger.log(record)
            }
        }
    }

    func ensureLivenessTimer() {
        guard livenessTimer == nil else { return }
        let interval = max(.milliseconds(500), configuration.pingInterval / 2)
        livenessTimer = loop.schedule(after: interval) { [weak self] in
            guard let self = self else { return }
            self.livenessTimer = nil
            self.checkLiveness()
            if !self.sessions.isEmpty { self.ensureLivenessTimer() }
        }
    }

    private func checkLiveness() {
        let now = loop.now
        perform(engine.maintenance(now: WallClock.nowMillis()))
        for s in sessions.values.sorted(by: { $0.id < $1.id }) {
            guard let link = s.link, !link.isEnded else { continue }
            let silent = now - link.lastHeardMillis
            if silent >= configuration.peerTimeout.wholeMilliseconds {
                logger.warning("peer.dead", metadata: ["peer.address": "\(s.address)", "silent_ms": "\(silent)"])
                link.abort(reason: "no answer for \(silent) ms")
            } else if silent >= configuration.pingInterval.wholeMilliseconds {
                // The heartbeat tells the slave the latest sequence: it notices what it missed,
                // and its ack tells the master how far behind it is.
                if let beat = engine.heartbeat(for: s.id) {
                    link.sendText(beat)
                } else {
                    link.ping()
                }
            }
        }
    }
}
