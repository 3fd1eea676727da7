import Foundation
import JSON
import Logging
import SyncCore
import Synchronization

/// How log lines are written: logfmt (`key=value` pairs) or one JSON object per line.
enum LogFormat: String, CaseIterable {
    case text
    case json
}

/// Writes one line per event to standard error.
///
/// The log message is the event name (`peer.connected`); metadata keys are stable and dotted
/// (`peer.address`, `order.uuid`). logfmt line:
/// `ts=2026-11-22T04:13:00.123Z level=info event=peer.connected peer.address=10.0.0.2:5555`.
struct EventLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    let format: LogFormat
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
        let line: String
        switch format {
        case .text: line = EventLogHandler.logfmt(level: event.level, event: event.message.description, metadata: merged)
        case .json: line = EventLogHandler.json(level: event.level, event: event.message.description, metadata: merged)
        }
        EventLogHandler.standardErrorLock.withLock { _ in
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
    }

    static func timestamp() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        var t = time_t(ts.tv_sec)
        var parts = tm()
        gmtime_r(&t, &parts)
        func p(_ v: Int32, _ w: Int = 2) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, w - s.count)) + s
        }
        return "\(p(parts.tm_year + 1900, 4))-\(p(parts.tm_mon + 1))-\(p(parts.tm_mday))T"
            + "\(p(parts.tm_hour)):\(p(parts.tm_min)):\(p(parts.tm_sec)).\(p(Int32(ts.tv_nsec / 1_000_000), 3))Z"
    }

    static func flatten(_ metadata: Logger.Metadata) -> [(String, String)] {
        var out: [(String, String)] = []
        for key in metadata.keys.sorted() {
            guard let value = metadata[key] else { continue }
            switch value {
            case .string(let s): out.append((key, s))
            case .stringConvertible(let c): out.append((key, c.description))
            case .array(let a): out.append((key, a.map { "\($0)" }.joined(separator: ",")))
            case .dictionary(let d):
                for (k, v) in flatten(d) { out.append(("\(key).\(k)", v)) }
            }
        }
        return out
    }

    static func logfmtValue(_ s: String) -> String {
        let needsQuotes = s.isEmpty || s.contains { $0 == " " || $0 == "=" || $0 == "\"" || $0 == "\\" || $0.isNewline }
        guard needsQuotes else { return s }
        var out = "\""
        for c in s {
            switch c {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            default: out.append(c)
            }
        }
        return out + "\""
    }

    static func logfmt(level: Logger.Level, event: String, metadata: Logger.Metadata) -> String {
        var line = "ts=\(timestamp()) level=\(level.rawValue) event=\(logfmtValue(event))"
        for (k, v) in flatten(metadata) {
            line += " \(k)=\(logfmtValue(v))"
        }
        return line
    }

    static func json(level: Logger.Level, event: String, metadata: Logger.Metadata) -> String {
        func q(_ s: String) -> String { JSONValue.string(s).serialized() }
        var line = "{\"ts\":\(q(timestamp())),\"level\":\(q(level.rawValue)),\"event\":\(q(event))"
        for (k, v) in flatten(metadata) where k != "ts" && k != "level" && k != "event" {
            line += ",\(q(k)):\(q(v))"
        }
        return line + "}"
    }
}
