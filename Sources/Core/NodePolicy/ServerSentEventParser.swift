/// Parses a `text/event-stream` body (HTML Living Standard, 9.2.6 "Interpreting an event
/// stream"): lines end in CRLF, LF or CR; "data" lines add to the data buffer, "id" sets the last
/// event id, a blank line dispatches the event, lines starting with a colon are comments. Pure.
public struct ServerSentEventParser {
    /// One dispatched event.
    public struct Event: Equatable, Sendable {
        /// The last event id (`id:`) when it was dispatched, if any.
        public var id: String?
        /// Its type (`event:`), `message` when none was given.
        public var event: String
        /// Its `data:` lines, joined by newlines.
        public var data: String
    }

    private var pending: [UInt8] = []
    private var lastWasCR = false
    private var data: [String] = []
    private var event = ""
    private var id: String?
    private var sawField = false

    /// A parser at the start of a stream.
    public init() {}

    /// Feeds bytes; returns the events they complete.
    public mutating func append(_ bytes: [UInt8]) -> [Event] {
        var events: [Event] = []
        for b in bytes {
            if lastWasCR {
                lastWasCR = false
                if b == 0x0A { continue }
            }
            if b == 0x0D || b == 0x0A {
                lastWasCR = b == 0x0D
                if let e = line(String(decoding: pending, as: UTF8.self)) { events.append(e) }
                pending.removeAll(keepingCapacity: true)
            } else {
                pending.append(b)
            }
        }
        return events
    }

    private mutating func line(_ text: String) -> Event? {
        if text.isEmpty {
            defer {
                data = []
                event = ""
                sawField = false
            }
            guard sawField, !data.isEmpty else { return nil }
            return Event(id: id, event: event.isEmpty ? "message" : event, data: data.joined(separator: "\n"))
        }
        if text.hasPrefix(":") { return nil }
        let name: Substring
        var value: Substring
        if let colon = text.firstIndex(of: ":") {
            name = text[..<colon]
            value = text[text.index(after: colon)...]
            if value.hasPrefix(" ") { value = value.dropFirst() }
        } else {
            name = Substring(text)
            value = ""
        }
        sawField = true
        switch name {
        case "data": data.append(String(value))
        case "event": event = String(value)
        case "id" where !value.contains("\0"): id = String(value)
        default: break
        }
        return nil
    }
}
