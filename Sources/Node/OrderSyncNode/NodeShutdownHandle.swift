import EventLoopIO

/// The one way other threads (a test's thread, a supervisor) ask a running node to stop.
///
/// A node belongs to its loop's thread and is not `Sendable`; its handle is. It carries the
/// loop (whose ``EventLoop/execute(_:)`` is thread-safe) and, bound to that loop, a weak way
/// back to the node: ``requestShutdown()`` only hops onto the loop, where the node (if it still
/// exists) begins its shutdown as on SIGTERM.
///
/// ```swift
/// let node = try MasterNode(configuration: c, loop: loop, dataDirectory: d, discovery: nil, logger: l)
/// let handle = node.shutdownHandle     // Sendable: hand it to another thread
/// try node.run()                       // elsewhere: handle.requestShutdown()
/// ```
public struct NodeShutdownHandle: Sendable {
    /// The node's loop, the only thread the node is touched on.
    private let loop: EventLoop
    /// Begins the node's shutdown; unwrapped (and called) only on `loop`.
    private let begin: LoopBound<(String) -> Void>

    /// A handle whose requests call `begin` on `loop` with the reason. Made on the loop (or by
    /// the loop's owner before it runs); `begin` should hold its node weakly.
    init(loop: EventLoop, begin: @escaping (String) -> Void) {
        self.loop = loop
        self.begin = LoopBound(begin, loop: loop)
    }

    /// Asks the node to shut down as on SIGTERM (reason `requested`). Thread-safe; returns at
    /// once. Does nothing once the node is gone.
    public func requestShutdown() {
        let begin = self.begin
        loop.execute { begin.value("requested") }
    }
}
