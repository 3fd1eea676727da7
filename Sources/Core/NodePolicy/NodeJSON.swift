import JSON

/// A value the node sends or keeps as JSON (its status, a slave's trust file, the dashboard's
/// tokens), written and read through the project's JSON module: `jsonValue` gives its JSON,
/// `init(json:)` reads it back and names the member that is wrong.
public protocol NodeJSONCodable {
    /// The value as JSON, members in a fixed order.
    var jsonValue: JSONValue { get }
    /// Reads the value; a missing member or one of the wrong type is an error naming it.
    init(json: JSONValue) throws(NodeJSONError)
}

/// JSON that is not the value expected: which member (a dotted path from the top, as
/// `master.state` or `peers[2].address`) and what is wrong with it.
public struct NodeJSONError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Where the problem is; empty for the top-level value.
    public var path: String
    /// What is wrong.
    public var message: String

    /// An error at `path`.
    public init(path: String, _ message: String) {
        self.path = path
        self.message = message
    }

    /// `"master.state": expected a string, got number`.
    public var description: String { path.isEmpty ? message : "\"\(path)\": \(message)" }
}

extension NodeJSONCodable {
    /// Parses JSON text (bytes) and reads the value from it.
    public init(jsonBytes bytes: [UInt8]) throws(NodeJSONError) {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch let e as JSONParseError {
            throw NodeJSONError(path: "", "not JSON: \(e)")
        } catch {
            throw NodeJSONError(path: "", "not JSON")
        }
        try self.init(json: value)
    }
}

/// The members of one JSON object being read, with the path that leads to it, so every error
/// names the member that caused it.
public struct NodeJSONFields {
    /// The object.
    public let object: JSONObject
    /// Its path from the top-level value.
    public let path: String

    /// The object `value`, which is at `path`; anything else is an error.
    public init(_ value: JSONValue, at path: String = "") throws(NodeJSONError) {
        guard let object = value.objectValue else {
            throw NodeJSONError(path: path, "expected an object, got \(value.typeName)")
        }
        self.object = object
        self.path = path
    }

    /// The path of member `key`.
    public func path(of key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// Member `key`, which must be present and not null.
    public func decode<T: NodeJSONCodable>(_ key: String, as type: T.Type = T.self) throws(NodeJSONError) -> T {
        guard let value = object[key] else { throw NodeJSONError(path: path(of: key), "missing") }
        if value == .null { throw NodeJSONError(path: path(of: key), "expected \(T.self), got null") }
        return try Self.read(value, at: path(of: key))
    }

    /// Member `key`; nil when it is absent or null.
    public func decodeIfPresent<T: NodeJSONCodable>(_ key: String, as type: T.Type = T.self) throws(NodeJSONError) -> T? {
        guard let value = object[key], value != .null else { return nil }
        return try Self.read(value, at: path(of: key))
    }

    /// Member `key`: an array of `T`, each element read in turn.
    public func decodeArray<T: NodeJSONCodable>(_ key: String, of type: T.Type = T.self) throws(NodeJSONError) -> [T] {
        guard let value = object[key] else { throw NodeJSONError(path: path(of: key), "missing") }
        return try Self.readArray(value, at: path(of: key))
    }

    /// `value`, at `path`, as an array of `T`.
    public static func readArray<T: NodeJSONCodable>(_ value: JSONValue, at path: String) throws(NodeJSONError) -> [T] {
        guard let elements = value.arrayValue else {
            throw NodeJSONError(path: path, "expected an array, got \(value.typeName)")
        }
        var out: [T] = []
        out.reserveCapacity(elements.count)
        for (i, element) in elements.enumerated() {
            out.append(try read(element, at: "\(path)[\(i)]"))
        }
        return out
    }

    /// `value` read as `T`, its errors placed under `path`.
    static func read<T: NodeJSONCodable>(_ value: JSONValue, at path: String) throws(NodeJSONError) -> T {
        do {
            return try T(json: value)
        } catch {
            throw NodeJSONError(path: error.path.isEmpty ? path : joined(path, error.path), error.message)
        }
    }

    /// `inner` under `outer`: `a` and `b` give `a.b`, `a` and `[2].b` give `a[2].b`.
    private static func joined(_ outer: String, _ inner: String) -> String {
        if outer.isEmpty { return inner }
        return inner.hasPrefix("[") ? outer + inner : "\(outer).\(inner)"
    }
}

/// An object of members in order, `nil` written as `null` (the node's JSON has always sent
/// `null` for an absent value rather than leaving the member out).
public func nodeJSONObject(_ members: KeyValuePairs<String, (any NodeJSONCodable)?>) -> JSONValue {
    var object = JSONObject()
    for (key, value) in members {
        object[key] = value?.jsonValue ?? .null
    }
    return .object(object)
}

extension String: NodeJSONCodable {
    /// The string.
    public var jsonValue: JSONValue { .string(self) }

    /// A JSON string.
    public init(json: JSONValue) throws(NodeJSONError) {
        guard let s = json.stringValue else { throw NodeJSONError(path: "", "expected a string, got \(json.typeName)") }
        self = s
    }
}

extension Bool: NodeJSONCodable {
    /// `true` or `false`.
    public var jsonValue: JSONValue { .bool(self) }

    /// A JSON boolean.
    public init(json: JSONValue) throws(NodeJSONError) {
        guard case .bool(let b) = json else { throw NodeJSONError(path: "", "expected a boolean, got \(json.typeName)") }
        self = b
    }
}

extension Int64: NodeJSONCodable {
    /// The number.
    public var jsonValue: JSONValue { .int(self) }

    /// An integral JSON number.
    public init(json: JSONValue) throws(NodeJSONError) {
        guard let n = json.intValue else {
            let got = json.typeName == "number" ? json.serialized() : json.typeName
            throw NodeJSONError(path: "", "expected an integer, got \(got)")
        }
        self = n
    }
}

extension Int: NodeJSONCodable {
    /// The number.
    public var jsonValue: JSONValue { .int(Int64(self)) }

    /// An integral JSON number.
    public init(json: JSONValue) throws(NodeJSONError) {
        self = Int(try Int64(json: json))
    }
}

extension UInt16: NodeJSONCodable {
    /// The number.
    public var jsonValue: JSONValue { .int(Int64(self)) }

    /// An integral JSON number from 0 to 65535.
    public init(json: JSONValue) throws(NodeJSONError) {
        let n = try Int64(json: json)
        guard let v = UInt16(exactly: n) else { throw NodeJSONError(path: "", "\(n) is not from 0 to 65535") }
        self = v
    }
}

extension NodeJSONCodable where Self: RawRepresentable, RawValue == String {
    /// The raw value, as a string.
    public var jsonValue: JSONValue { .string(rawValue) }

    /// One of the raw values.
    public init(json: JSONValue) throws(NodeJSONError) {
        let text = try String(json: json)
        guard let value = Self(rawValue: text) else {
            throw NodeJSONError(path: "", "unknown value \(json.serialized())")
        }
        self = value
    }
}

extension Array: NodeJSONCodable where Element: NodeJSONCodable {
    /// The elements, in order.
    public var jsonValue: JSONValue { .array(map(\.jsonValue)) }

    /// A JSON array of elements.
    public init(json: JSONValue) throws(NodeJSONError) {
        self = try NodeJSONFields.readArray(json, at: "")
    }
}
