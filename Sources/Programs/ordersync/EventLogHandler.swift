import Foundation
import Logging
import OrderSyncNode
import Synchronization

/// Writes one line per event to standard error, in the format of `EventLogFormat`.
///
/// The log message is the event name (`peer.connected`); metadata keys are stable and dotted
/// (`peer.address`, `order.uuid`). logfmt line:
/// `ts=2026-11-22T04:13:00.123Z level=info event=peer.connected peer.address=10.0.0.2:5555`;
/// under systemd (stderr is the journal) it starts with its syslog priority: `<6>ts=…`.
struct EventLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    let format: EventLogFormat
    let label: String

    /// Serialises writes so lines from different threads never interleave.
    private static let standardErrorLock = Mutex(())

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata {
            merged.merge(extra) { _, new in new }
        }
        let line = format.line(
            ts: EventLogFormat.timestamp(), level: event.level, event: event.message.description, metadata: merged)
        EventLogHandler.standardErrorLock.withLock { _ in
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
    }
}
