import EventLoopIO
import Foundation
import JSON
import Logging
import NodePolicy
import OrderStore
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

    /// Starts the node's local API socket with `handler` answering its requests.
    static func startAPI(_ api: LocalAPIServer, _ c: NodeConfiguration, handler: @escaping LocalAPIServer.Handler) throws {
        api.handler = handler
        do { try api.start() } catch let error as NodeStartupError { throw error } catch {
            throw NodeStartupError("cannot open the local API socket \(c.socketPath): \(error)", failure: .ofListen(error))
        }
    }

    /// Handles the read-only routes every node answers from its own store (read through its
    /// writer: never waiting for a commit); false for others.
    static func answerRead(
        _ route: LocalAPIRoute, store: StoreWriter, respond: LocalAPIServer.Respond,
        decorate: (Order) -> JSONObject = { $0.json }
    ) -> Bool {
        if case .status = route { return false }
        if case .write = route { return false }
        do {
            try store.read { db in
                switch route {
                case .list(let page, let per, let status, let newestFirst):
                    let r = try db.orders(page: page, per: per, status: status, newestFirst: newestFirst)
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
                    break
                }
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
            handshakeDeadline: handshakeTimeout,
            frameDeadline: frameTimeout,
            heartbeat: .init(idleInterval: pingInterval, silenceLimit: peerTimeout),
            maxPendingSendBytes: maxPendingSendBytes,
            sendLowWaterBytes: min(snapshotLowWaterBytes, maxPendingSendBytes / 2))
    }
}
