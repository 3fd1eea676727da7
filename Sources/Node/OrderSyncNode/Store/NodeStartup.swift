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

    /// Handles the read-only routes every node answers from its own store; false for others.
    /// One order is read on the loop (through the writer: never waiting for a commit); pages
    /// (orders, journal, rejections) are read and encoded off the loop (`offLoop`, as the local
    /// API does: `StoreWriter.readOffLoop`) or on it (the dashboard's synchronous answers), each
    /// page in one read transaction. `decorate` may run on another thread.
    static func answerRead(
        _ route: LocalAPIRoute, store: StoreWriter, respond: LocalAPIServer.Respond, offLoop: Bool = true,
        decorate: @escaping @Sendable (Order) -> JSONObject = { $0.json }
    ) -> Bool {
        guard let read = readAnswer(route, decorate: decorate) else { return false }
        var onLoop = !offLoop
        if case .show = route { onLoop = true }
        if !onLoop {
            store.readOffLoop(read) { result in
                switch result {
                case .success(let answer): respond.send(answer.status, answer.body)
                case .failure(let error): respond(500, LocalAPIRoute.errorBody(code: "storage_failed", message: "\(error)"))
                }
            }
            return true
        }
        do {
            let answer = try store.read(read)
            respond.send(answer.status, answer.body)
        } catch {
            respond(500, LocalAPIRoute.errorBody(code: "storage_failed", message: "\(error)"))
        }
        return true
    }

    /// The read that answers `route` (a status and a JSON body), nil for routes that are not
    /// reads of the store.
    private static func readAnswer(
        _ route: LocalAPIRoute, decorate: @escaping @Sendable (Order) -> JSONObject
    ) -> (@Sendable (OrderDatabase) throws -> (status: Int, body: [UInt8]))? {
        switch route {
        case .status, .write:
            return nil
        case .list(let page, let per, let status, let newestFirst):
            return { db in
                let r = try db.orders(page: page, per: per, status: status, newestFirst: newestFirst)
                let body = LocalAPIRoute.listBody(page: page, per: per, total: r.total, orders: r.orders.map(decorate))
                return (200, body.serializedBytes())
            }
        case .show(let uuid):
            return { db in
                guard let o = try db.order(uuid: uuid) else {
                    let body = LocalAPIRoute.errorBody(code: "not_found", message: "no order with this uuid", uuid: uuid)
                    return (404, body.serializedBytes())
                }
                return (200, JSONValue.object(decorate(o)).serializedBytes())
            }
        case .journal(let since, let order, let limit):
            return { db in
                (200, LocalAPIRoute.journalBody(try db.journal(since: since, orderUUID: order, limit: limit)).serializedBytes())
            }
        case .rejections(let since, let order, let limit):
            return { db in
                (200, LocalAPIRoute.rejectionsBody(try db.rejections(since: since, orderUUID: order, limit: limit)).serializedBytes())
            }
        }
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
