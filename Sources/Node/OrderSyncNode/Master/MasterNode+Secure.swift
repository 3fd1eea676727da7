import EventLoopIO
import Foundation
import JSON
import Logging
import OrderStore
import SecureLink
import SyncCore
import WebSocket
import WebSocketTransport

/// The master's terminals by subprotocol (Docs/SECURITY.md, Docs/PROTOCOL.md): OrderSync slaves
/// over a secure link (`ordersync.ik.v1`, or `ordersync.pair.v1` with a code from
/// `ordersync pair`), StorePOS terminals (no subprotocol) only with `--insecure-storepos`; anything else is
/// closed at once (1008) with what to do, and nothing of it is read.
extension MasterNode {
    /// The channel settings of a terminal's link: binary is accepted (the secure link's
    /// messages); a StorePOS link closes on binary itself (1003). Until the terminal has
    /// authenticated (or was admitted as a StorePOS app) a message may have only a handshake's
    /// size: a larger frame header closes the link (1009) before its payload is read.
    var terminalChannelConfiguration: WebSocketChannelConfiguration {
        var c = configuration.webSocketChannelConfiguration
        c.acceptsBinary = true
        c.limits.maxMessageSize = configuration.preAuthenticationMessageBytes
        c.limits.maxFrameSize = configuration.preAuthenticationMessageBytes
        return c
    }

    /// After authentication (or a StorePOS app's admission) the link takes messages of the
    /// node's size.
    func liftMessageLimit(_ s: TerminalSession) {
        s.transport.setMessageLimit(configuration.webSocketConfiguration.maxMessageSize)
    }

    /// The opening handshake's answer: the secure subprotocols, or the cleartext one of earlier
    /// versions (so that its close reason reaches the slave), or none. Every upgrade is
    /// accepted; what may not stay is closed once open, with a reason.
    static func handshakeDecision(_ request: HandshakeRequest) -> WebSocketChannel.HandshakeDecision {
        let offered = request.requestedSubprotocols
        let chosen = [SecureLinkSubprotocol.known, SecureLinkSubprotocol.pairing, orderSyncSubprotocol].first { offered.contains($0) }
        return .accept(subprotocol: chosen)
    }

    /// The WebSocket opened: a secure link starts its handshake, a StorePOS terminal is admitted
    /// or not, anything else is closed.
    func terminalOpened(_ opening: WebSocketChannel.Opening, session s: TerminalSession) {
        // A secure handshake is admitted (rate per address and in total) before its link
        // reads anything, so a refused one costs no X25519 work.
        if opening.subprotocol == SecureLinkSubprotocol.known || opening.subprotocol == SecureLinkSubprotocol.pairing {
            guard beginHandshake(s) else { return }
        }
        switch opening.subprotocol {
        case SecureLinkSubprotocol.known?:
            let link = SecureLink.knownResponder(keys: keys.noiseKeys, options: secureLinkOptions)
            startAuthenticating(s, SecureTerminalLink(mode: .known, link: link))
        case SecureLinkSubprotocol.pairing?:
            // The same steps whether or not a code is open or the address is locked out: the
            // peer learns nothing until message 3 is refused (Docs/SECURITY.md, "Pairing").
            let codes = pairingCodes(for: s.address)
            guard let own = keys.current.noiseKeyPair,
                let link = try? SecureLink.pairingResponder(
                    codes: codes, localStatic: own, payload: masterPayload, options: secureLinkOptions)
            else {
                s.close(code: .internalError, reason: "the master cannot use its key")
                return
            }
            startAuthenticating(s, SecureTerminalLink(mode: .pairing(codes), link: link))
        case orderSyncSubprotocol?:
            refuse(s, why: "cleartext \(orderSyncSubprotocol)", reason: "pairing required; run `ordersync pair` on the master")
        case nil where opening.request?.requestedSubprotocols.isEmpty ?? true:
            storePOSOpened(s)
        default:
            let offered = opening.request?.requestedSubprotocols.joined(separator: ",") ?? ""
            refuse(s, why: "unsupported subprotocol \(offered)", reason: "unsupported subprotocol; use \(SecureLinkSubprotocol.known)")
        }
    }

    /// The options of every secure link: the node's message size.
    var secureLinkOptions: SecureLinkOptions {
        SecureLinkOptions(
            maxMessageBytes: configuration.maxMessageBytes,
            maxSealedMessageBytes: max(configuration.maxMessageBytes, NodeDefaults.largestSnapshotPartBytes))
    }

    /// The master's handshake payload.
    var masterPayload: [UInt8] { SecureTerminalLink.masterPayload(nodeId: keys.current.nodeId, store: storeId) }

    /// Closes a link that may not go on (1008 with `reason`) and says so in the log.
    func refuse(_ s: TerminalSession, why: String, reason: String, nodeId: String? = nil) {
        var meta: Logger.Metadata = ["peer.address": "\(s.address)", "reason": "\(why)"]
        if let nodeId { meta["node.id"] = "\(nodeId)" }
        logger.log(level: s.handshakePending ? handshakeFailureLevel(s) : refusalLevel(s.host), "peer.unauthenticated", metadata: meta)
        s.close(code: .policyViolation, reason: reason)
    }

    /// A StorePOS terminal: admitted with `--insecure-storepos` from an allowed address.
    private func storePOSOpened(_ s: TerminalSession) {
        guard configuration.insecureStorePOS else {
            refuse(
                s, why: "StorePOS terminal without --insecure-storepos", reason: "StorePOS terminals need --insecure-storepos on the master"
            )
            return
        }
        let host = s.host
        if !configuration.storePOSAllow.isEmpty, !configuration.storePOSAllow.contains(where: { $0.contains(host: host) }) {
            refuse(s, why: "StorePOS terminal outside --storepos-allow", reason: "address not allowed by --storepos-allow")
            return
        }
        s.framing = .storePOS
        s.phase = .open
        keepStorePOSLink(s)
        liftMessageLimit(s)
        logger.warning(
            "storepos.insecure",
            metadata: [
                "peer.address": "\(s.address)", "peers": "\(sessions.count)",
                "hint": "this terminal is neither authenticated nor encrypted",
            ])
        logger.info(
            "peer.connected", metadata: ["peer.address": "\(s.address)", "peer.protocol": "storepos", "peers": "\(sessions.count)"])
        ensureMaintenanceTimer()
        // Its snapshot reads the store: after the COMMIT in flight, if one is (a group's, or a
        // write's), which has the connection.
        writer.whenIdle { [weak self, weak s] in
            guard let self, let s, s.phase == .open else { return }
            self.perform(self.engine.peerConnected(s.id, address: s.address, terminal: nil, now: WallClock.nowMillis()))
            self.sendSnapshotParts(to: s)
        }
    }

    private func startAuthenticating(_ s: TerminalSession, _ link: SecureTerminalLink) {
        s.framing = .secure(link)
        s.phase = .authenticating
        // The secure handshake has the same time as the WebSocket's: a peer that opens and
        // then says nothing (or answers only pings) does not hold a slot.
        s.authenticationTimer = loop.schedule(after: configuration.handshakeTimeout) { [weak self, weak s] in
            guard let self = self, let s = s, s.phase == .authenticating else { return }
            s.authenticationTimer = nil
            self.logger.log(
                level: self.handshakeFailureLevel(s), "peer.handshake_failed",
                metadata: ["peer.address": "\(s.address)", "peer.protocol": "\(link.subprotocol)", "error": "no secure handshake in time"])
            s.close(code: .policyViolation, reason: "handshake timed out")
        }
    }

    /// A binary message of a slave's secure link: handshake, sync message or control message.
    func secureMessage(_ bytes: [UInt8], from s: TerminalSession, link: SecureTerminalLink) {
        guard s.phase == .authenticating || s.phase == .open else { return }
        let events: [SecureLink.Event]
        do {
            events = try link.receive(bytes)
        } catch {
            secureLinkFailed(s, link: link, error)
            return
        }
        secureEvents(events, session: s, link: link)
    }

    private func secureEvents(_ events: [SecureLink.Event], session s: TerminalSession, link: SecureTerminalLink) {
        for event in events {
            guard s.phase == .authenticating || s.phase == .open, s.transport.isOpen else { return }
            switch event {
            case .send(let message):
                s.transport.sendBinary(message)
            case .peerKeyPresented(let key):
                keyPresented(key, session: s, link: link)
            case .established(let key, let payload):
                established(peerKey: key, payload: payload, session: s, link: link)
            case .message(let bytes):
                // Checked in place: the bytes go to the engine as they are, no `String` made.
                guard (try? UTF8Span(validating: bytes.span)) != nil else {
                    s.close(code: .invalidPayload, reason: "a sync message is not UTF-8")
                    return
                }
                terminalMessage(bytes, from: s)
            case .control(let bytes):
                guard !link.control(bytes) else { continue }
                logger.debug(
                    "peer.control_ignored", metadata: ["peer.address": "\(s.address)", "bytes": "\(bytes.count)"])
            }
        }
    }

    /// IK: the slave's static key. Only a paired terminal not revoked gets the master's answer.
    private func keyPresented(_ key: [UInt8], session s: TerminalSession, link: SecureTerminalLink) {
        let nodeId = NodeIdentity.nodeId(publicKey: key)
        let paired: PairedTerminal?
        do { paired = try writer.read { try $0.pairedTerminal(publicKey: key) } } catch {
            logger.error("terminal.lookup_failed", metadata: ["error": "\(error)"])
            s.close(code: .internalError, reason: "the master could not read its paired terminals")
            return
        }
        guard let terminal = paired, terminal.isActive else {
            refuseProven(s, link: link, why: paired == nil ? "unknown terminal" : "revoked terminal", nodeId: nodeId)
            return
        }
        link.terminal = terminal
        do {
            secureEvents(try link.accept(payload: answerPayload(link)), session: s, link: link)
        } catch {
            secureLinkFailed(s, link: link, error)
        }
    }

    /// The payload of the IK answer. It names the key the slave addressed: during a rotation a
    /// slave that still trusts the previous key checks the payload against it, then takes the
    /// handover.
    private func answerPayload(_ link: SecureTerminalLink, refused: String? = nil) -> [UInt8] {
        let answeringId = link.link.responderKeyIndex == 1 ? keys.previous?.nodeId : nil
        return SecureTerminalLink.masterPayload(nodeId: answeringId ?? keys.current.nodeId, store: storeId, refused: refused)
    }

    /// Refuses an IK initiator whose key is not a paired terminal's, after proving the master's
    /// key: the handshake answer carries `"refused": "unknown terminal"` in its payload, then
    /// the link closes (1008 `unknown terminal`). The slave believes the refusal (and asks to
    /// pair again) only because the answer proved the key it trusts; a refusal from anyone
    /// else is not the master's (Docs/SECURITY.md, "A refusal proves the master's key").
    private func refuseProven(_ s: TerminalSession, link: SecureTerminalLink, why: String, nodeId: String) {
        if let events = try? link.accept(payload: answerPayload(link, refused: "unknown terminal")) {
            // Only the answer goes out: the link is never established for this peer.
            for case .send(let message) in events { s.transport.sendBinary(message) }
        }
        refuse(s, why: why, reason: "unknown terminal", nodeId: nodeId)
    }

    /// The handshake is done: a known terminal is in; a pairing one is stored first.
    private func established(peerKey: [UInt8], payload: [UInt8], session s: TerminalSession, link: SecureTerminalLink) {
        switch link.mode {
        case .known:
            guard let terminal = link.terminal else { preconditionFailure("an IK link established without an accepted key") }
            authenticated(s, terminal)
            // It addressed the previous key: hand it over to the current one.
            if link.link.responderKeyIndex == 1 { sendMasterKey(to: s) }
        case .pairing:
            guard let code = link.pairingCode else { preconditionFailure("a pairing link established without its code") }
            // Storing the terminal is a write: it waits for a group's commit in flight.
            writer.whenIdle { [weak self] in
                guard let self, s.phase != .ended else { return }
                self.completePairing(code: code, peerKey: peerKey, payload: payload, session: s, link: link)
            }
        }
    }

    /// Any failure of a secure link: it closes (1008) and nothing of the message is applied. A
    /// wrong pairing code counts against the peer's address, never against the open codes.
    private func secureLinkFailed(_ s: TerminalSession, link: SecureTerminalLink, _ error: SecureLinkError) {
        let handshaking = s.phase == .authenticating
        var meta: Logger.Metadata = [
            "peer.address": "\(s.address)", "peer.protocol": "\(link.subprotocol)", "error": "\(error)",
        ]
        if let t = link.terminal { meta["terminal"] = "\(t.name)" }
        if handshaking {
            logger.log(level: handshakeFailureLevel(s), "peer.handshake_failed", metadata: meta)
        } else {
            logger.warning("peer.decrypt_failed", metadata: meta)
        }
        if handshaking, case .pairing = link.mode, error.kind == .authenticationFailed {
            pairingFailed(address: s.address)
            s.close(code: .policyViolation, reason: "pairing failed")
            return
        }
        s.close(code: .policyViolation, reason: handshaking ? "handshake failed" : "decryption failed")
    }

    /// A slave proved its paired key: the engine knows it from now on.
    func authenticated(_ s: TerminalSession, _ terminal: PairedTerminal) {
        if let t = s.authenticationTimer {
            loop.cancel(t)
            s.authenticationTimer = nil
        }
        s.phase = .open
        handshakeEnded(s, authenticated: true)
        liftMessageLimit(s)
        logger.info(
            "peer.connected",
            metadata: [
                "peer.address": "\(s.address)", "peer.protocol": "ordersync", "terminal": "\(terminal.name)",
                "terminal.id": "\(terminal.nodeId)", "peers": "\(sessions.count)",
            ])
        ensureMaintenanceTimer()
        perform(
            engine.peerConnected(s.id, address: s.address, terminal: AuthenticatedTerminal(nodeId: terminal.nodeId, name: terminal.name)))
        sendSnapshotParts(to: s)
    }

    /// Sends one sync message: as text to a StorePOS terminal, sealed to a slave. A message the
    /// link cannot seal closes it.
    func send(_ bytes: [UInt8], to s: TerminalSession) {
        switch s.framing {
        case .storePOS:
            s.transport.sendText(utf8: bytes)
        case .secure(let link):
            do {
                for message in try link.seal(bytes) { s.transport.sendBinary(message) }
            } catch {
                sealFailed(s, error)
            }
        case .none:
            return
        }
    }

    /// Sends one control message over a slave's secure link.
    func sendControl(_ message: JSONObject, to s: TerminalSession) {
        guard let link = s.secure, s.transport.isOpen else { return }
        do {
            for sealed in try link.sealControl(message) { s.transport.sendBinary(sealed) }
        } catch {
            sealFailed(s, error)
        }
    }

    func sealFailed(_ s: TerminalSession, _ error: SecureLinkError) {
        logger.error("peer.encrypt_failed", metadata: ["peer.address": "\(s.address)", "error": "\(error)"])
        s.close(code: .internalError, reason: "the master could not seal a message")
    }

    /// Hands a slave over to the master's current key: `{"type":"masterKey",...}`.
    func sendMasterKey(to s: TerminalSession) {
        sendControl(
            JSONObject([
                ("type", .string("masterKey")), ("master", .string(keys.current.nodeId)),
                ("publicKey", .string(Data(keys.current.publicKeyBytes).base64EncodedString())),
            ]), to: s)
    }
}
