import EventLoopIO
import Foundation
import Logging

/// `ordersync rollup --metrics-listen ADDR:PORT`: the node's metrics listener on an event loop
/// of its own thread, serving the last text the roll-up published (the roll-up itself blocks
/// on PostgreSQL and SQLite; the listener never waits for it).
final class RollupMetricsServer: @unchecked Sendable {
    private let lock = NSLock()
    private var text: [UInt8] = []
    private var failure: Error?

    /// The text `/metrics` answers from now on.
    func publish(_ metrics: String) {
        lock.lock()
        defer { lock.unlock() }
        text = Array(metrics.utf8)
    }

    private func render() -> [UInt8] {
        lock.lock()
        defer { lock.unlock() }
        return text
    }

    /// Binds `address` and serves it on a new thread; throws when it cannot be bound.
    static func start(address: MetricsAddress, logger: Logger) throws -> RollupMetricsServer {
        let server = RollupMetricsServer()
        let ready = DispatchSemaphore(value: 0)
        let thread = Thread {
            do {
                let loop = try EventLoop()
                let listener = try MetricsListener(listener: MetricsListener.bind(address), loop: loop, logger: logger)
                listener.start { server.render() }
                ready.signal()
                loop.run()
            } catch {
                server.lock.lock()
                server.failure = error
                server.lock.unlock()
                ready.signal()
            }
        }
        thread.start()
        ready.wait()
        server.lock.lock()
        defer { server.lock.unlock() }
        if let failure = server.failure { throw failure }
        return server
    }
}
