import Foundation
import JSON
import Logging

/// How a log line is written (Docs/OPERATIONS.md, "Logs"): logfmt (`key=value` pairs) or one
/// JSON object per line, optionally led by the syslog priority journald reads.
public struct EventLogFormat: Sendable {
    /// logfmt or JSON.
    public enum Syntax: String, CaseIterable, Sendable {
        case text
        case json
    }

    /// logfmt or JSON.
    public var syntax: Syntax
    /// Whether each line starts with its syslog priority (`<4>`), as journald's stream
    /// transport reads it (sd-daemon(3), `SD_WARNING`): set when stderr is the journal.
    public var priorityPrefix: Bool

    public init(syntax: Syntax, priorityPrefix: Bool) {
        self.syntax = syntax
        self.priorityPrefix = priorityPrefix
    }

    /// The metadata keys whose values are numbers (stable keys, Docs/OPERATIONS.md): in JSON
    /// they are written as numbers when their text is one, whatever the call site passed.
    public static let numberKeys: Set<String> = [
        "seq", "op.seq", "master.seq", "peer.last_seq", "from_seq", "through", "orders", "operations", "messages", "count",
        "peers", "port", "limit", "links", "outbox", "bytes", "held", "held_bytes", "part", "parts", "removes",
        "silent_ms", "retry_ms", "expires_ms", "valid_s", "tries_left", "attempts", "failures", "failures_in_a_row", "failed",
        "candidates", "forgotten", "rebrowses", "paired_terminals", "open_files_limit", "max_connections", "http.status",
        "ws.close_code", "lag", "rate", "burst", "interval_s",
    ]

    /// The syslog priority of a level (RFC 5424 severities): `trace` and `debug` 7, `info` 6,
    /// `notice` 5, `warning` 4, `error` 3, `critical` 2.
    public static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    /// True when standard error is the journal: `JOURNAL_STREAM` (`DEV:INODE`, set by systemd
    /// for a service whose output goes to the journal) names the device and inode of fd 2.
    /// The check, and not the variable alone, keeps a child whose stderr was redirected from
    /// writing priorities into a file (as sd-daemon(3) advises).
    public static func standardErrorIsJournal(environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let value = environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let dev = UInt64(parts[0]), let ino = UInt64(parts[1]) else { return false }
        var st = stat()
        guard fstat(2, &st) == 0 else { return false }
        return UInt64(st.st_dev) == dev && UInt64(st.st_ino) == ino
    }

    /// One line (without the newline) for an event at `level` with `metadata`, stamped `ts`.
    public func line(ts: String, level: Logger.Level, event: String, metadata: Logger.Metadata) -> String {
        let prefix = priorityPrefix ? "<\(Self.priority(level))>" : ""
        switch syntax {
        case .text: return prefix + Self.logfmt(ts: ts, level: level, event: event, metadata: metadata)
        case .json: return prefix + Self.json(ts: ts, level: level, event: event, metadata: metadata)
        }
    }

    /// The current time as `2026-11-22T04:13:00.123Z`.
    public static func timestamp() -> String {
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

    /// A metadata value as written: its text, and the JSON value it is when it is typed (a
    /// number or a boolean).
    struct Field {
        var key: String
        var text: String
        var typed: JSONValue?
    }

    /// Flattens metadata (nested dictionaries as dotted keys), sorted by key.
    static func flatten(_ metadata: Logger.Metadata, prefix: String = "") -> [Field] {
        var out: [Field] = []
        for key in metadata.keys.sorted() {
            guard let value = metadata[key] else { continue }
            let name = prefix + key
            switch value {
            case .string(let s):
                out.append(Field(key: name, text: s, typed: numberKeys.contains(name) ? number(s) : nil))
            case .stringConvertible(let c):
                out.append(Field(key: name, text: c.description, typed: typed(c)))
            case .array(let a):
                out.append(Field(key: name, text: a.map { "\($0)" }.joined(separator: ","), typed: nil))
            case .dictionary(let d):
                out.append(contentsOf: flatten(d, prefix: name + "."))
            }
        }
        return out
    }

    /// A number written as text, if it is one (an integer or a finite decimal).
    static func number(_ s: String) -> JSONValue? {
        if let i = Int64(s) { return .int(i) }
        if let d = Double(s), d.isFinite, s.first != "+", !s.contains(where: { $0.isLetter }) { return .double(d) }
        return nil
    }

    /// The JSON value of a value passed as `.stringConvertible`: integers, floating-point
    /// numbers and booleans keep their type.
    static func typed(_ value: any CustomStringConvertible & Sendable) -> JSONValue? {
        switch value {
        case let b as Bool: return .bool(b)
        case let i as any BinaryInteger: return Int64(exactly: i).map { .int($0) }
        case let d as Double: return d.isFinite ? .double(d) : nil
        case let f as Float: return f.isFinite ? .double(Double(f)) : nil
        default: return nil
        }
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

    static func logfmt(ts: String, level: Logger.Level, event: String, metadata: Logger.Metadata) -> String {
        var line = "ts=\(ts) level=\(level.rawValue) event=\(logfmtValue(event))"
        for f in flatten(metadata) {
            line += " \(f.key)=\(logfmtValue(f.text))"
        }
        return line
    }

    static func json(ts: String, level: Logger.Level, event: String, metadata: Logger.Metadata) -> String {
        func q(_ s: String) -> String { JSONValue.string(s).serialized() }
        var line = "{\"ts\":\(q(ts)),\"level\":\(q(level.rawValue)),\"event\":\(q(event))"
        for f in flatten(metadata) where f.key != "ts" && f.key != "level" && f.key != "event" {
            line += ",\(q(f.key)):\(f.typed?.serialized() ?? q(f.text))"
        }
        return line + "}"
    }
}
