import EventLoopIO
import Foundation
import JSON
import Logging
import NodePolicy
import OrderStore
import SecureLink
import SyncCore

/// Pairing, paired terminals and the master's key (Docs/SECURITY.md): the pairing windows, the
/// end of a pairing handshake, revocation and key rotation, and the local API that drives them.
extension MasterNode {
    func handleMasterAPI(_ route: MasterAPIRoute, _ respond: LocalAPIServer.Respond) {
        loop.assertInEventLoop()
        switch route {
        case .openPairing(let name, let seconds, let voter):
            if !voter, (try? writer.read { try $0.hasVoterFlag() }) != true {
                respond(
                    409,
                    LocalAPIRoute.errorBody(
                        code: "no_voter_flag", message: "this store keeps no voter flag yet (it needs migration 13): pair it as a voter"))
                return
            }
            guard let window = openPairingWindow(name: name, validForSeconds: seconds, voter: voter) else {
                respond(
                    409,
                    LocalAPIRoute.errorBody(
                        code: "too_many_codes",
                        message: "\(PairingWindows.maxOpen) pairing codes are open already; "
                            + "cancel one with `ordersync pair cancel CODE|NAME` or wait for one to be used or expire"))
                return
            }
            var o = Self.pairingObject(window)
            o["store"] = .string(storeId)
            o["master"] = .string(keys.current.nodeId)
            respond(201, .object(o))
        case .pairingCodes:
            let open = pairing.openWindows(now: WallClock.nowMillis())
            respond(200, .object(JSONObject([("codes", .array(open.map { .object(Self.pairingObject($0)) }))])))
        case .closePairing:
            let closed = pairing.closeAll()
            pairingWindowsChanged()
            if !closed.isEmpty { logger.info("pairing.closed", metadata: ["reason": "operator", "codes": "\(closed.count)"]) }
            respond(
                200,
                .object(
                    JSONObject([
                        ("state", .string(pairingStatus().state.rawValue)),
                        ("cancelled", .array(closed.map { .object(Self.pairingObject($0)) })),
                    ])))
        case .cancelPairing(let codeOrName):
            let cancelled = pairing.cancel(codeOrName, now: WallClock.nowMillis())
            guard !cancelled.isEmpty else {
                respond(404, LocalAPIRoute.errorBody(code: "not_found", message: "no open pairing code is or is named '\(codeOrName)'"))
                return
            }
            pairingWindowsChanged()
            for w in cancelled { logger.info("pairing.cancelled", metadata: ["name": "\(w.name ?? "-")", "reason": "operator"]) }
            respond(200, .object(JSONObject([("cancelled", .array(cancelled.map { .object(Self.pairingObject($0)) }))])))
        case .terminals:
            do {
                respond(200, .object(JSONObject([("terminals", .array(try pairedTerminals().map { .object($0) }))])))
            } catch {
                respond(500, LocalAPIRoute.errorBody(code: "storage_failed", message: "\(error)"))
            }
        case .revokeTerminal(let idOrName):
            // A write: it waits for a group's commit in flight (the store is the commit's then).
            writer.whenIdle { [weak self] in self?.revoke(idOrName, respond) }
        case .rotateKey:
            rotateKey(respond)
        case .makeDashboardToken, .dashboardTokens, .revokeDashboardToken:
            writer.whenIdle { [weak self] in self?.handleDashboardTokens(route, respond) }
        case .foreignOrders, .adoptForeignOrders, .clearForeignOrders:
            handleForeignOrders(route, respond)
        }
    }

    // MARK: The pairing windows

    /// An open code as the local API shows it.
    static func pairingObject(_ w: PairingWindows.Open) -> JSONObject {
        JSONObject([
            ("code", .string(w.code.description)), ("name", w.name.map { .string($0) } ?? .null),
            ("openedAtMillis", .int(w.openedAtMillis)), ("expiresAtMillis", .int(w.expiresAtMillis)),
        ])
    }

    /// Opens one more window with a fresh code (the others stay open); nil when
    /// `PairingWindows.maxOpen` are open.
    func openPairingWindow(name: String?, validForSeconds: Int, voter: Bool = true) -> PairingWindows.Open? {
        guard
            let window = pairing.open(
                code: PairingCode.generate(), name: name, validForSeconds: validForSeconds, now: WallClock.nowMillis(), voter: voter)
        else { return nil }
        pairingWindowsChanged()
        logger.info(
            "pairing.opened",
            metadata: [
                "name": "\(name ?? "-")", "valid_s": "\((window.expiresAtMillis - window.openedAtMillis) / 1000)",
                "expires_ms": "\(window.expiresAtMillis)", "open_codes": "\(pairing.open.count)",
            ])
        return window
    }

    /// Schedules the expiry timer for the window closing soonest (none when none is open).
    func pairingWindowsChanged() {
        if let t = pairingTimer {
            loop.cancel(t)
            pairingTimer = nil
        }
        guard let next = pairing.nextExpiryMillis else { return }
        let after = Duration.milliseconds(max(0, next - WallClock.nowMillis()))
        pairingTimer = loop.schedule(after: after) { [weak self] in
            guard let self = self else { return }
            self.pairingTimer = nil
            // The wall clock may lag the loop's by a little: expire what was due.
            for w in self.pairing.expire(now: max(WallClock.nowMillis(), next)) {
                self.logger.info("pairing.expired", metadata: ["name": "\(w.name ?? "-")"])
            }
            self.pairingWindowsChanged()
        }
    }

    /// The codes a pairing handshake from `address` is read with: the open ones, or none when
    /// the address is locked out, padded with random codes to `PairingWindows.maxOpen`, so
    /// that the peer sees the same steps, the same work and the same refusal whatever the case.
    func pairingCodes(for address: String) -> [PairingCode] {
        let now = WallClock.nowMillis()
        let open = pairing.isLockedOut(Self.host(of: address), now: now) ? [] : pairing.openWindows(now: now).map(\.code)
        return open + (open.count..<PairingWindows.maxOpen).map { _ in PairingCode.generate() }
    }

    /// A pairing handshake from `address` failed on its last message: counted against the
    /// address only; the open codes stay open.
    func pairingFailed(address: String) {
        let host = Self.host(of: address)
        let wasLocked = pairing.isLockedOut(host, now: WallClock.nowMillis())
        switch pairing.recordFailure(address: host, now: WallClock.nowMillis()) {
        case .counted(let remaining):
            logger.warning("pairing.failed", metadata: ["peer.address": "\(address)", "tries_left": "\(remaining)"])
        case .lockedOut(let until):
            guard !wasLocked else { return }
            logger.warning(
                "pairing.locked_out",
                metadata: [
                    "peer.address": "\(address)", "failures": "\(PairingWindows.maxFailures)",
                    "until_ms": "\(until)", "open_codes": "\(pairing.open.count)",
                    "hint": "this address is refused pairing for \(PairingWindows.lockoutMillis / 1000) s; other terminals can still pair",
                ])
        }
    }

    /// A pairing handshake completed: the slave's key is stored as a paired terminal, the
    /// window closes, the slave learns its name (`paired`) and goes on as a known terminal.
    func completePairing(code: PairingCode, peerKey: [UInt8], payload: [UInt8], session s: TerminalSession, link: SecureTerminalLink) {
        let nodeId = NodeIdentity.nodeId(publicKey: peerKey)
        let now = WallClock.nowMillis()
        guard let window = pairing.complete(code: code, terminal: nodeId, now: now) else {
            refuse(s, why: "the pairing code was cancelled or expired during the handshake", reason: "pairing failed", nodeId: nodeId)
            return
        }
        pairingWindowsChanged()
        let request = SecureTerminalLink.pairingRequest(payload)
        // Stored off the loop; the slave is answered only once its key is on disk.
        storeWrite({ db in
            let name = try db.unusedTerminalName(window.name ?? request.name ?? "terminal", except: nodeId)
            let terminal = PairedTerminal(nodeId: nodeId, publicKey: peerKey, name: name, pairedAtMillis: now)
            try db.addPairedTerminal(terminal)
            // In the same transaction: a handheld never counts as a voter, not even for a moment.
            if !window.voter { try db.setVoter(nodeId: nodeId, false) }
            return terminal
        }) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let terminal):
                self.paired(terminal, request: request, session: s, link: link)
            case .failure(let error):
                self.logger.error("terminal.save_failed", metadata: ["error": "\(error)"])
                s.close(code: .internalError, reason: "the master could not store the terminal")
            }
        }
    }

    /// The paired terminal is on disk: the slave learns its name and goes on as a known
    /// terminal (unless its link ended meanwhile).
    private func paired(
        _ terminal: PairedTerminal, request: (name: String?, terminal: String?), session s: TerminalSession,
        link: SecureTerminalLink
    ) {
        let nodeId = terminal.nodeId
        guard s.phase != .ended else { return }
        link.terminal = terminal
        logger.info(
            "terminal.paired",
            metadata: [
                "name": "\(terminal.name)", "node.id": "\(nodeId)", "peer.address": "\(s.address)",
                "terminal.said": "\(request.name ?? "-")",
            ])
        sendControl(
            JSONObject([("type", .string("paired")), ("terminal", .string(nodeId)), ("name", .string(terminal.name))]), to: s)
        authenticated(s, terminal)
        announceMembers()
    }

    // MARK: Paired terminals

    /// `GET /v1/terminals`: every paired terminal not revoked but this master's own row, with
    /// how far it got.
    func pairedTerminals() throws -> [JSONObject] {
        let known = try writer.read { try $0.knownTerminals() }
        let now = WallClock.nowMillis()
        let nonVoters = try writer.read { try $0.nonVoters() }
        return try servedTerminals().map { t in
            let saved = known.first { $0.id == t.nodeId }
            let live = engine.peers.values.filter { $0.terminalId == t.nodeId }.sorted { $0.id < $1.id }.last
            var o = Self.terminalObject(t)
            o["lastSeenMillis"] = live != nil ? .int(now) : saved.map { .int($0.lastSeenMillis) } ?? .null
            o["connected"] = .bool(live != nil)
            o["address"] = (live?.address ?? saved?.address).map { .string($0) } ?? .null
            o["ackedSeq"] = (live?.ackedSeq ?? saved?.ackedSeq).map { .int($0) } ?? .null
            o["outbox"] = (live?.outbox ?? saved?.outbox).map { .int(Int64($0)) } ?? .null
            o["voter"] = .bool(!nonVoters.contains(t.nodeId))
            return o
        }
    }

    static func terminalObject(_ t: PairedTerminal) -> JSONObject {
        JSONObject([
            ("id", .string(t.nodeId)), ("name", .string(t.name)), ("pairedAtMillis", .int(t.pairedAtMillis)),
            ("revokedAtMillis", t.revokedAtMillis.map { .int($0) } ?? .null),
        ])
    }

    /// `POST /v1/terminals/{id-or-name}/revoke`: its key is refused from now on and its open
    /// links close (1008 `revoked`).
    func revoke(_ idOrName: String, _ respond: LocalAPIServer.Respond) {
        // The master's own row (7.20) is the master: revoked, it could not rejoin once stepped down.
        if case .found(let t) = try? writer.read({ try $0.findPairedTerminal(idOrName) }), t.nodeId == nodeIdentity.nodeId {
            respond(
                409,
                LocalAPIRoute.errorBody(
                    code: "is_master", message: "'\(idOrName)' is this master itself: a master cannot revoke its own key"))
            return
        }
        // Committed off the loop; its links close and the caller is answered once on disk.
        let now = WallClock.nowMillis()
        storeWrite({ try $0.revokePairedTerminal(idOrName, atMillis: now) }) { [weak self] result in
            switch result {
            case .success(let match): self?.revoked(match, idOrName, respond)
            case .failure(let error): respond(500, LocalAPIRoute.errorBody(code: "storage_failed", message: "\(error)"))
            }
        }
    }

    /// The revocation is on disk (or matched no terminal, or several): the caller is answered.
    private func revoked(_ match: PairedTerminalMatch, _ idOrName: String, _ respond: LocalAPIServer.Respond) {
        switch match {
        case .notFound:
            respond(404, LocalAPIRoute.errorBody(code: "not_found", message: "no paired terminal has the id or name '\(idOrName)'"))
        case .ambiguous(let list):
            respond(
                409,
                LocalAPIRoute.errorBody(
                    code: "ambiguous",
                    message: "\(list.count) terminals are called '\(idOrName)'; revoke one by its id: "
                        + list.map(\.nodeId).joined(separator: ", ")))
        case .found(let t):
            perform(engine.revoked(terminal: t.nodeId))
            // Links still in their handshake with its key go too.
            for s in sessions.values where s.secure?.terminal?.nodeId == t.nodeId && s.phase != .ended {
                s.close(code: .policyViolation, reason: "revoked")
            }
            logger.info("terminal.revoked", metadata: ["name": "\(t.name)", "node.id": "\(t.nodeId)"])
            announceMembers()
            respond(200, .object(Self.terminalObject(t)))
        }
    }

    // MARK: The master's key

    /// `POST /v1/key/rotate`: a new key; the old one still answers, and every authenticated
    /// link is handed over to the new one.
    func rotateKey(_ respond: LocalAPIServer.Respond) {
        let old = keys.current.nodeId
        do {
            try keys.rotate(keyPath: configuration.keyPath, previousPath: configuration.previousKeyPath)
        } catch {
            logger.error("key.rotate_failed", metadata: ["error": "\(error)"])
            respond(500, LocalAPIRoute.errorBody(code: "key_rotation_failed", message: "\(error)"))
            return
        }
        var handedOver = 0
        for s in sessions.values.sorted(by: { $0.id < $1.id }) where s.phase == .open && s.speaksOrderSync {
            sendMasterKey(to: s)
            handedOver += 1
        }
        publishService()
        // Its own row takes the new key (7.20), then the standbys get the members.
        rekeyOwnRow()
        logger.info(
            "key.rotated", metadata: ["node.id": "\(keys.current.nodeId)", "previous.id": "\(old)", "links": "\(handedOver)"])
        respond(
            200,
            .object(
                JSONObject([
                    ("master", .string(keys.current.nodeId)), ("previous", .string(old)),
                    ("publicKey", .string(Data(keys.current.publicKeyBytes).base64EncodedString())),
                    ("linksHandedOver", .int(Int64(handedOver))),
                ])))
    }
}
