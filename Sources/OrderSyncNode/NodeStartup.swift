import Foundation
import Logging
import OrderStore
import Posix
import SyncCore
import WebSocket
import WebSocketTransport

/// Start-up steps shared by the master and the slave.
enum NodeStartup {
    /// Signals go to the event loop (signalfd), SIGPIPE is ignored; returns the loop.
    /// Must run before any other thread exists (Avahi's starts later).
    static func prepareProcess() throws -> EventLoop {
        Signals.ignoreBrokenPipe()
        try Signals.block([SIGINT, SIGTERM, SIGHUP])
        return try EventLoop()
    }

    /// Locks the data directory, opens its store and checks it belongs to `role`.
    static func openStore(_ c: NodeConfiguration, directory: DataDirectory) throws -> OrderDatabase {
        try directory.claim(lockPath: c.lockPath)
        let db: OrderDatabase
        do {
            db = try OrderDatabase(path: c.databasePath)
        } catch {
            throw NodeStartupError("cannot open the order store \(c.databasePath): \(error)")
        }
        if let role = try db.metadata("node.role"), role != c.role.rawValue {
            throw NodeStartupError("\(c.dataDirectory) holds a \(role)'s order store; use another --data-dir for the \(c.role.rawValue)")
        }
        try db.setMetadata("node.role", c.role.rawValue)
        return db
    }

    /// Opens the local API socket.
    static func startAPI(_ c: NodeConfiguration, loop: EventLoop, logger: Logger,
                         handler: @escaping LocalAPIServer.Handler) throws -> LocalAPIServer {
        let api = LocalAPIServer(loop: loop, path: c.socketPath, logger: logger)
        api.handler = handler
        do { try api.start() } catch {
            throw NodeStartupError("cannot open the local API socket \(c.socketPath): \(error)")
        }
        return api
    }

    /// Handles the read-only routes every node answers from its own store; false for others.
    static func answerRead(_ route: LocalAPIRoute, db: OrderDatabase, respond: LocalAPIServer.Respond,
                           decorate: (Order) -> JSONObject = { $0.json }) -> Bool {
        do {
            switch route {
            case .list(let page, let per, let status):
                let r = try db.orders(page: page, per: per, status: status)
                respond(200, LocalAPIRoute.listBody(page: page, per: per, total: r.total, orders: r.orders.map(decorate)))
            case .show(let uuid):
                if let o = try db.order(uuid: uuid) {
                    respond(200, .object(decorate(o)))
                } else {
                    respond(404, LocalAPIRoute.errorBody(code: "not_found", message: "no order with this uuid", uuid: uuid))
                }
            case .journal(let since, let order, let limit):
                respond(200, LocalAPIRoute.journalBody(try db.journal(since: since, orderUUID: order, limit: limit)))
            case .rejections(let since, let order, let limit):
                respond(200, LocalAPIRoute.rejectionsBody(try db.rejections(since: since, orderUUID: order, limit: limit)))
            case .status, .write:
                return false
            }
        } catch {
            respond(500, LocalAPIRoute.errorBody(code: "storage_failed", message: "\(error)"))
        }
        return true
    }
}

extension NodeConfiguration {
    /// WebSocket limits for this node's links.
    var webSocketConfiguration: WebSocketConfiguration {
        var c = WebSocketConfiguration()
        c.maxMessageSize = maxMessageBytes
        return c
    }

    /// The deadlines, heartbeat and limits of this node's WebSocket connections (text only).
    var webSocketChannelConfiguration: WebSocketChannelConfiguration {
        WebSocketChannelConfiguration(
            limits: webSocketConfiguration,
            handshakeDeadline: .milliseconds(handshakeDeadlineMillis),
            frameDeadline: .milliseconds(frameDeadlineMillis),
            heartbeat: .init(idleInterval: .milliseconds(pingIntervalMillis), silenceLimit: .milliseconds(deadPeerMillis)),
            maxPendingSendBytes: NodeDefaults.maxPendingSendBytes)
    }
}
