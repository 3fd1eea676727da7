/// Header fields in the order received, with case-insensitive lookup by name.
public struct HTTPHeaders: Equatable, Sendable, Sequence, ExpressibleByDictionaryLiteral {
    /// The fields as (name, value) pairs, names as sent.
    public private(set) var fields: [(name: String, value: String)] = []

    /// An empty header block.
    public init() {}

    /// Headers from (name, value) pairs in order.
    public init(_ fields: [(String, String)]) {
        for (name, value) in fields {
            add(name: name, value: value)
        }
    }

    /// Headers from a literal such as `["Content-Type": "application/json"]`.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// The number of field lines.
    public var count: Int { fields.count }

    /// Appends a field line (an existing field of the same name is kept).
    public mutating func add(name: String, value: String) {
        fields.append((name: name, value: value))
    }

    /// Replaces every field named `name` (any case) with one line, or removes them for `nil`.
    public mutating func replaceOrAdd(name: String, value: String?) {
        remove(name: name)
        if let value {
            add(name: name, value: value)
        }
    }

    /// Removes every field named `name` (any case).
    public mutating func remove(name: String) {
        fields.removeAll { HTTPHeaders.equalNames($0.name, name) }
    }

    /// The first value of the field named `name` (any case).
    public subscript(name: String) -> String? {
        fields.first { HTTPHeaders.equalNames($0.name, name) }?.value
    }

    /// Every value of the field named `name` (any case), in order.
    public func values(_ name: String) -> [String] {
        fields.filter { HTTPHeaders.equalNames($0.name, name) }.map(\.value)
    }

    /// The comma-separated elements of every `name` field, in order, trimmed, case kept,
    /// empty elements dropped (RFC 9110 5.6.1: "a recipient MUST accept lists that contain
    /// empty list elements" and ignore them). For list fields such as
    /// `Sec-WebSocket-Protocol`, whose elements are case-sensitive.
    public func listElements(_ name: String) -> [String] {
        values(name).flatMap { $0.split(separator: ",") }
            .map { String($0).trimmingHTTPWhitespace() }
            .filter { !$0.isEmpty }
    }

    /// The comma-separated elements of every `name` field, trimmed and lowercased
    /// (for list fields of case-insensitive tokens such as `Connection`).
    public func tokens(_ name: String) -> [String] {
        listElements(name).map { $0.lowercased() }
    }

    /// Whether a `name` field lists `token`, compared ASCII case-insensitively.
    public func listContains(_ name: String, token: String) -> Bool {
        tokens(name).contains(token.lowercased())
    }

    /// Iterates the fields in order.
    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }

    /// Field names compare case-insensitively; values compare exactly.
    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.count == rhs.fields.count
            && zip(lhs.fields, rhs.fields).allSatisfy { equalNames($0.name, $1.name) && $0.value == $1.value }
    }

    static func equalNames(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && a.lowercased() == b.lowercased()
    }
}

extension String {
    /// The string without leading and trailing spaces and tabs (HTTP's OWS).
    func trimmingHTTPWhitespace() -> String {
        let bytes = Array(utf8)
        var start = 0
        var end = bytes.count
        while start < end && (bytes[start] == 0x20 || bytes[start] == 0x09) { start += 1 }
        while end > start && (bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09) { end -= 1 }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }
}
