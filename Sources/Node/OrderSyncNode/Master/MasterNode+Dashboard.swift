import Foundation
import JSON
import Logging
import NodePolicy
import OrderStore
import SyncCore
import TLS

/// The store dashboard (`--http-listen`) and its tokens (`ordersync dashboard`).
extension MasterNode: DashboardSource {
    /// Loads the tokens the dashboard (`--http-listen`) accepts, before it starts: its own
    /// (`dashboard.tokens`), or those of the master its standby copy came from
    /// (`standby.settings`). A promoted node takes the latter first: they are the newest, so
    /// the store's tokens open its dashboard after a failover; it stores them with the next change.
    func loadDashboardTokens() throws {
        let (own, standby) = try writer.read { db in
            (try db.metadata(DashboardTokens.metadataKey), try db.standbySettings()?[DashboardTokens.settingsKey])
        }
        let inherited = standby.map { $0.serialized() }
        dashboardTokens = try DashboardTokens(stored: candidacy != nil ? inherited ?? own : own ?? inherited)
    }

    func dashboardTokenId(secret: String) -> String? {
        dashboardTokens.token(matching: secret)?.id
    }

    func dashboardRead(_ route: LocalAPIRoute) -> (status: Int, body: [UInt8]) {
        loop.assertInEventLoop()
        var answer: (status: Int, body: [UInt8]) = (500, [])
        let respond = LocalAPIResponder { status, body in answer = (status, body + [0x0A]) }
        if case .status = route {
            respond.encoded(200, NodeStatus.master(status()))
        } else {
            _ = NodeStartup.answerRead(route, store: writer, respond: respond, offLoop: false)
        }
        return answer
    }

    func dashboardJournal(_ q: DashboardJournalQuery) -> (status: Int, body: [UInt8]) {
        loop.assertInEventLoop()
        do {
            let entries = try writer.read {
                try $0.journalSearch(
                    orderUUID: q.order, origin: q.terminal, fromMillis: q.fromMillis, toMillis: q.toMillis, beforeSeq: q.beforeSeq,
                    limit: q.limit)
            }
            return (200, LocalAPIRoute.journalBody(entries).serializedBytes() + [0x0A])
        } catch {
            return (500, LocalAPIRoute.errorBody(code: "storage_failed", message: "\(error)").serializedBytes() + [0x0A])
        }
    }

    func dashboardChanges(_ request: ChangesRequest, _ sink: ChangesSink) {
        loop.assertInEventLoop()
        guard let changeFeed else {
            sink.answer(503, LocalAPIRoute.errorBody(code: "starting", message: "the master is starting"))
            return
        }
        changeFeed.handle(request, sink)
    }

    /// `POST|GET /v1/dashboard/tokens`, `POST /v1/dashboard/tokens/{id-or-name}/revoke`.
    func handleDashboardTokens(_ route: MasterAPIRoute, _ respond: LocalAPIServer.Respond) {
        var tokens = dashboardTokens
        switch route {
        case .dashboardTokens:
            var o = JSONObject([("tokens", .array(tokens.tokens.map { .object(DashboardTokens.object($0)) }))])
            o["url"] = dashboardURL(secret: nil).map { .string($0) } ?? .null
            o["certificateSha256"] = dashboard?.tlsFingerprint.map { .string($0) } ?? .null
            respond(200, .object(o))
            return
        case .makeDashboardToken(let name):
            switch tokens.make(name: name, nowMillis: WallClock.nowMillis()) {
            case .failure(.nameTaken):
                respond(409, LocalAPIRoute.errorBody(code: "conflict", message: "a dashboard token is already called '\(name ?? "")'"))
            case .failure(.tooMany):
                respond(
                    409,
                    LocalAPIRoute.errorBody(
                        code: "conflict", message: "already \(DashboardTokens.maxTokens) dashboard tokens; revoke some first"))
            case .success(let made):
                save(tokens, respond) { [weak self] in
                    guard let self else { return }
                    var o = DashboardTokens.object(made.token)
                    o["token"] = .string(made.secret)
                    o["url"] = self.dashboardURL(secret: made.secret).map { .string($0) } ?? .null
                    o["certificateSha256"] = self.dashboard?.tlsFingerprint.map { .string($0) } ?? .null
                    self.logger.info("dashboard.token_made", metadata: ["token": "\(made.token.id)", "name": "\(made.token.name)"])
                    self.announceMembers()
                    respond(201, .object(o))
                }
            }
        case .revokeDashboardToken(let idOrName):
            guard let gone = tokens.revoke(idOrName) else {
                respond(404, LocalAPIRoute.errorBody(code: "not_found", message: "no dashboard token with id or name '\(idOrName)'"))
                return
            }
            save(tokens, respond) { [weak self] in
                self?.dashboard?.revoked(tokenId: gone.id)
                self?.logger.info("dashboard.token_revoked", metadata: ["token": "\(gone.id)", "name": "\(gone.name)"])
                self?.announceMembers()
                respond(200, .object(DashboardTokens.object(gone)))
            }
        default:
            respond(404, LocalAPIRoute.errorBody(code: "no_route", message: "not a dashboard route"))
        }
    }

    /// Stores `tokens` (committed off the loop) and, once on disk, makes them the ones in use
    /// and runs `saved`; answers 500 when the store failed. The caller runs when the store is
    /// idle (`whenIdle`), so the next change of the tokens starts from these.
    private func save(_ tokens: DashboardTokens, _ respond: LocalAPIServer.Respond, saved: @escaping () -> Void) {
        let stored = tokens.stored
        storeWrite({ try $0.setMetadata(DashboardTokens.metadataKey, stored) }) { [weak self] result in
            switch result {
            case .success:
                self?.dashboardTokens = tokens
                saved()
            case .failure(let error):
                respond(500, LocalAPIRoute.errorBody(code: "storage_failed", message: "\(error)"))
            }
        }
    }

    /// The address to open: `http://HOST:PORT/` (with `#token=SECRET`), the host name when the
    /// dashboard listens on every address; nil without `--http-listen`.
    func dashboardURL(secret: String?) -> String? {
        guard let dashboard, let address = configuration.httpListen else { return nil }
        let port = dashboard.localAddress.split(separator: ":").last.map(String.init) ?? "\(address.port)"
        var host = address.host
        if host == "0.0.0.0" || host == "::" { host = DataDirectory.hostName() }
        if host.contains(":") { host = "[\(host)]" }
        return "\(dashboard.scheme)://\(host):\(port)/" + (secret.map { "#token=\($0)" } ?? "")
    }

    /// The dashboard's certificate when it is served over TLS (made at the first start that
    /// needs it, `dashboard.certificate_made`); nil for plain HTTP.
    static func dashboardCertificate(_ configuration: NodeConfiguration, _ logger: Logger) throws -> TLSCertificate? {
        guard configuration.dashboardUsesTLS, let listen = configuration.httpListen else { return nil }
        let (certificate, made) = try DashboardCertificate.loadOrCreate(
            certificatePath: configuration.dashboardCertificatePath, keyPath: configuration.dashboardKeyPath, listen: listen)
        if made {
            logger.notice(
                "dashboard.certificate_made",
                metadata: [
                    "sha256": "\(certificate.fingerprintText)", "path": "\(configuration.dashboardCertificatePath)",
                    "key": "\(configuration.dashboardKeyPath)",
                ])
        }
        return certificate
    }
}
