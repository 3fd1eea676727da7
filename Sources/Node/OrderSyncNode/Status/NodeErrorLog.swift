import EventLoopIO
import Logging
import NodePolicy
import Synchronization

/// Keeps the last warning-or-worse event of a node, for its status. The executable installs a
/// `NodeErrorLogHandler` writing into it next to its log backend, and hands the same object
/// to the node in its configuration.
public final class NodeErrorLog: Sendable {
    private let last = Mutex<NodeError?>(nil)

    /// An empty log.
    public init() {}

    /// The last event recorded.
    public var lastError: NodeError? {
        last.withLock { last in
            SanitizerVisibleLock.acquired(self)
            defer { SanitizerVisibleLock.releasing(self) }
            return last
        }
    }

    /// Records an event.
    public func record(_ error: NodeError) {
        last.withLock { last in
            SanitizerVisibleLock.acquired(self)
            defer { SanitizerVisibleLock.releasing(self) }
            last = error
        }
    }
}

/// A log backend that records every event at `warning` or above into a `NodeErrorLog`; used
/// next to the real backend (swift-log's `MultiplexLogHandler`).
public struct NodeErrorLogHandler: LogHandler {
    /// Where the events go.
    public let errors: NodeErrorLog
    /// The level below which nothing reaches this handler.
    public var logLevel: Logger.Level = .info
    /// Metadata of the logger.
    public var metadata: Logger.Metadata = [:]

    /// A handler recording into `errors`.
    public init(errors: NodeErrorLog) {
        self.errors = errors
    }

    /// Metadata by key.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Records the event when it is a warning or worse.
    public func log(event: LogEvent) {
        guard event.level >= .warning else { return }
        let all = metadata.merging(event.metadata ?? [:]) { _, new in new }
        let message: String
        if let why = all["reason"] ?? all["error"] {
            message = "\(why)"
        } else {
            message = all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        errors.record(
            NodeError(event: "\(event.message)", message: message, at: NodeError.isoTime(epochMillis: WallClock.nowMillis())))
    }
}
