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
            session.handshakeTimer = loop.schedule(after: configuration.handshakeDeadlineMillis) { [weak self, weak session] in
                guard let self = self, let s = session, s.phase == .handshaking else { return }
                self.logger.warning("peer.handshake_timeout", metadata: ["peer.address": "\(s.address)"])
                s.channel.close()
                self.endSession(s, code: nil, reason: "no WebSocket handshake within \(self.configuration.handshakeDeadlineMillis) ms")
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
            link.frameDeadlineMillis = configuration.frameDeadlineMillis
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
            if s.speaksOrderSync {
                s.phase = .awaitingHello
            } else {
                // A StorePOS terminal sends no hello: sync it right after it connects.
                sendSnapshot(to: s)
                s.phase = .live
            }
            if !rest.isEmpty { link.receive(rest) }
        }
    }

    func endSession(_ s: TerminalSession, code: UInt16?, reason: String) {
        guard s.phase != .ended else { return }
        remember(s)
        let wasConnected = s.link != nil
        s.phase = .ended
        if let t = s.handshakeTimer { loop.cancel(t) }
        sessions[s.id] = nil
        if wasConnected {
            var meta: Logger.Metadata = ["peer.address": "\(s.address)", "reason": "\(reason)", "peers": "\(sessions.count)"]
            if let c = code { meta["ws.close_code"] = "\(c)" }
            if let n = s.terminalName { meta["terminal"] = "\(n)" }
            logger.info("peer.disconnected", metadata: meta)
        }
        sessionEnded()
    }

    func sendSnapshot(to s: TerminalSession) {
        do {
            let snap = try ledger.snapshotMessages()
            for m in snap.messages { s.link?.sendText(m) }
            if s.speaksOrderSync {
                s.link?.sendText(ServerMessage.ready(seq: snap.seq, epoch: ledger.epoch, store: storeId).encoded())
            }
            logger.info("snapshot.sent", metadata: ["peer.address": "\(s.address)", "orders": "\(snap.count)", "seq": "\(snap.seq)",
                                                    "messages": "\(snap.messages.count)"])
        } catch {
            logger.error("snapshot.failed", metadata: ["peer.address": "\(s.address)", "error": "\(error)"])
            s.close(code: .internalError, reason: "could not read the store")
        }
    }

    func terminalMessage(_ text: String, from s: TerminalSession) {
        s.messagesIn += 1
        switch ClientMessage.decode(text) {
        case .failure(let e):
            reject(e, opId: nil, operation: nil, to: s)
        case .success(.hello(let hello)):
            guard s.phase == .awaitingHello else {
                reject(WireError(.invalidMessage, "hello is only accepted once, as the first message"), opId: nil, operation: nil, to: s)
                return
            }
            if let proto = hello.proto, proto != orderSyncProtocolName {
                reject(WireError(.invalidMessage, "this master speaks \(orderSyncProtocolName), not \(proto)"), opId: nil, operation: nil, to: s)
                s.close(code: .policyViolation, reason: "unsupported protocol version")
                return
            }
            if let wanted = hello.store, wanted != storeId {
                reject(WireError(.wrongStore, "this master serves store '\(storeId)', not '\(wanted)'"), opId: nil, operation: nil, to: s)
                s.close(code: .policyViolation, reason: "wrong store")
                return
            }
            s.terminalId = hello.terminalId
            s.terminalName = hello.terminalName
            if hello.epoch == ledger.epoch { s.ackedSeq = min(hello.lastSeq, ledger.lastSeq) }
            remember(s)
            logger.info("peer.hello", metadata: ["peer.address": "\(s.address)", "terminal": "\(hello.terminalName)",
                                                 "terminal.id": "\(hello.terminalId)", "peer.last_seq": "\(hello.lastSeq)"])
            do {
                if let missed = try ledger.catchUp(from: hello.lastSeq, epoch: hello.epoch) {
                    // Resumable catch-up: exactly the operations it missed, then "ready".
                    for m in missed { s.link?.sendText(m) }
                    s.link?.sendText(ServerMessage.ready(seq: ledger.lastSeq, epoch: ledger.epoch, store: storeId).encoded())
                    logger.info("catchup.sent", metadata: ["peer.address": "\(s.address)", "from_seq": "\(hello.lastSeq)",
                                                           "operations": "\(missed.count)", "seq": "\(ledger.lastSeq)"])
                } else {
                    sendSnapshot(to: s)
                }
            } catch {
                logger.error("catchup.failed", metadata: ["peer.address": "\(s.address)", "error": "\(error)"])
                sendSnapshot(to: s)
            }
            s.phase = .live
        case .success(.ack(let seq)):
            s.ackedSeq = min(seq, ledger.lastSeq)
        case .success(.operation(let message)):
            if s.phase == .awaitingHello {
                reject(WireError(.invalidMessage, "send hello first (subprotocol \(orderSyncSubprotocol))"), opId: message.opId,
                       operation: message.operation, to: s)
                return
            }
            let origin = s.terminalName.map { "\($0)@\(s.address)" } ?? s.address
            let outcome = ledger.apply(message, origin: origin)
            deliver(outcome, message: message, origin: origin, sender: s)
        }
    }

    func reject(_ e: WireError, opId: String?, operation: OperationKind?, to s: TerminalSession) {
        s.rejected += 1
        let origin = s.terminalName.map { "\($0)@\(s.address)" } ?? s.address
        record(e, origin: origin, opId: opId, operation: operation)
        var meta: Logger.Metadata = ["peer.address": "\(s.address)", "code": "\(e.code.rawValue)", "reason": "\(e.message)"]
        if let u = e.uuid { meta["order.uuid"] = "\(u)" }
        if let id = opId { meta["op.id"] = "\(id)" }
        logger.warning("message.rejected", metadata: meta)
        s.link?.sendText(ServerMessage.error(e, opId: opId, operation: operation).encoded())
    }

    /// Broadcasts an applied operation to every live terminal (the sender included) and
    /// answers the sender with errors and, when it sent an `opId`, a result.
    func deliver(_ outcome: ApplyOutcome, message: OperationMessage, origin: String, sender: TerminalSession?) {
        if let text = outcome.broadcast, !outcome.isRepeat {
            logger.debug("op.applied", metadata: ["op.seq": "\(outcome.seq ?? 0)", "op.kind": "\(message.operation)",
                                                  "orders": "\(outcome.applied.count)", "origin": "\(origin)",
                                                  "op.id": "\(message.opId ?? "")"])
            broadcast(text)
        } else if let text = outcome.broadcast, outcome.isRepeat, let s = sender {
            // A retry of an operation already applied: the original answer, to the sender only.
            logger.info("op.repeat", metadata: ["op.id": "\(message.opId ?? "")", "op.seq": "\(outcome.seq ?? 0)", "origin": "\(origin)"])
            s.link?.sendText(text)
        }
        if let s = sender {
            for e in outcome.errors { reject(e, opId: message.opId, operation: message.operation, to: s) }
            for e in outcome.repeatedErrors {
                s.link?.sendText(ServerMessage.error(e, opId: message.opId, operation: message.operation).encoded())
            }
            if let id = message.opId, s.speaksOrderSync {
                s.link?.sendText(ServerMessage.result(opId: id, seq: outcome.seq, applied: outcome.applied.count,
                                                      unchanged: outcome.unchanged.count, failed: outcome.errors.count).encoded())
            }
        } else {
            for e in outcome.errors {
                logger.warning("message.rejected", metadata: ["origin": "\(origin)", "code": "\(e.code.rawValue)", "reason": "\(e.message)"])
                record(e, origin: origin, opId: message.opId, operation: message.operation)
            }
        }
    }

    /// Keeps a rejection where an operator can list it (`ordersync journal --rejected`).
    func record(_ e: WireError, origin: String, opId: String?, operation: OperationKind?) {
        do {
            try db.appendRejection(Rejection(recordedAtMillis: MasterLedger.now().epochMillis, origin: origin, opId: opId,
                                             operation: operation, orderUUID: e.uuid, code: e.code, message: e.message))
        } catch {
            logger.error("rejection.record_failed", metadata: ["error": "\(error)"])
        }
    }

    /// Encodes the frame once and writes the same bytes to every live terminal.
    func broadcast(_ text: String) {
        let frame = FrameEncoder.encode(Frame(fin: true, opcode: .text, payload: Array(text.utf8)), maskingKey: nil)
        for s in sessions.values where s.phase == .live {
            s.link?.sendEncoded(frame)
        }
    }

    func ensureLivenessTimer() {
        guard livenessTimer == nil else { return }
        let interval = max(500, configuration.pingIntervalMillis / 2)
        livenessTimer = loop.schedule(after: interval) { [weak self] in
            guard let self = self else { return }
            self.livenessTimer = nil
            self.checkLiveness()
            if !self.sessions.isEmpty { self.ensureLivenessTimer() }
        }
    }

    /// Persists what the master knows of a slave (on hello, on disconnect, and every liveness
    /// tick for live ones; acks in between only update memory, off the hot path).
    func remember(_ s: TerminalSession) {
        guard let id = s.terminalId else { return }
        do {
            try db.saveTerminal(KnownTerminal(id: id, name: s.terminalName ?? id, address: s.address,
                                              ackedSeq: s.ackedSeq ?? 0, lastSeenMillis: MasterLedger.now().epochMillis))
        } catch {
            logger.error("terminal.save_failed", metadata: ["error": "\(error)"])
        }
    }

    private func checkLiveness() {
        let now = loop.now
        let live = sessions.values.filter { $0.terminalId != nil && $0.phase == .live }
        if !live.isEmpty {
            do {
                try db.transaction { for s in live { remember(s) } }
                let dropped = try ledger.compactTombstones()
                if dropped > 0 { logger.debug("tombstones.compacted", metadata: ["count": "\(dropped)"]) }
            } catch {
                logger.error("terminal.save_failed", metadata: ["error": "\(error)"])
            }
        }
        for s in Array(sessions.values) {
            guard let link = s.link, !link.isEnded else { continue }
            let silent = now - link.lastHeardMillis
            if silent >= configuration.deadPeerMillis {
                logger.warning("peer.dead", metadata: ["peer.address": "\(s.address)", "silent_ms": "\(silent)"])
                link.abort(reason: "no answer for \(silent) ms")
            } else if silent >= configuration.pingIntervalMillis {
                if s.speaksOrderSync && s.phase == .live {
                    // The heartbeat tells the slave the latest sequence: it notices what it
                    // missed, and its ack tells the master how far behind it is.
                    link.sendText(ServerMessage.heartbeat(seq: ledger.lastSeq).encoded())
                } else {
                    link.ping()
                }
            }
        }
    }
}
