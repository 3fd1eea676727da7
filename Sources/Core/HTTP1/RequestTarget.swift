/// A request target split into its percent-decoded path and query parameters.
public struct RequestTarget: Sendable {
    /// The decoded path, e.g. `/orders/4F2A...` (origin form), or `*`.
    public var path: String
    /// The decoded query parameters in order; `+` decodes to a space.
    public var query: [(String, String)]
    /// The path's non-empty segments, each percent-decoded on its own: `%2F` inside a segment
    /// stays part of it (`/v1/terminals/bar%2F2/revoke` has the segment `bar/2`), where
    /// splitting ``path`` would cut it.
    public var segments: [String]

    /// Parses an origin-form (`/path?query`), absolute-form (`http://host/path?query`) or
    /// asterisk-form (`*`) request target.
    ///
    /// RFC 9112 3.2: "request-target = origin-form / absolute-form / authority-form /
    /// asterisk-form"; authority-form is only for CONNECT, which this server does not serve.
    public init(parsing target: String) throws {
        var rest = Substring(target)
        if rest == "*" {
            self.path = "*"
            self.query = []
            self.segments = ["*"]
            return
        }
        if !rest.hasPrefix("/"), let schemeEnd = RequestTarget.endOfScheme(rest) {
            let afterScheme = rest[schemeEnd...]
            rest = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" }).map { afterScheme[$0...] } ?? "/"
            if rest.hasPrefix("?") {
                rest = "/" + rest
            }
        }
        guard rest.hasPrefix("/") else {
            throw HTTPError.badRequest("request target must start with /")
        }
        if let fragment = rest.firstIndex(of: "#") {
            rest = rest[..<fragment]
        }
        let parts = rest.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        self.path = try RequestTarget.percentDecode(parts[0], plusIsSpace: false)
        self.segments = try parts[0].split(separator: "/", omittingEmptySubsequences: true).map {
            try RequestTarget.percentDecode($0, plusIsSpace: false)
        }
        self.query = parts.count > 1 ? try RequestTarget.parseQuery(parts[1]) : []
    }

    /// The index just past `scheme://` in an absolute-form target.
    private static func endOfScheme(_ text: Substring) -> Substring.Index? {
        guard let colon = text.firstIndex(of: ":"), text[..<colon].allSatisfy({ $0.isLetter }) else {
            return nil
        }
        let rest = text[colon...]
        guard rest.hasPrefix("://") else {
            return nil
        }
        return text.index(colon, offsetBy: 3)
    }

    /// The first value of query parameter `name`.
    public func queryValue(_ name: String) -> String? {
        query.first { $0.0 == name }?.1
    }

    /// Parses `a=1&b=two+words&flag` into `[("a","1"), ("b","two words"), ("flag","")]`.
    public static func parseQuery<S: StringProtocol>(_ text: S) throws -> [(String, String)] {
        var result: [(String, String)] = []
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let halves = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = try percentDecode(halves[0], plusIsSpace: true)
            let value = halves.count > 1 ? try percentDecode(halves[1], plusIsSpace: true) : ""
            result.append((name, value))
        }
        return result
    }

    /// Decodes `%XX` escapes (RFC 3986 2.1: "pct-encoded = "%" HEXDIG HEXDIG") and, in query
    /// strings, `+` as space; the result must be valid UTF-8.
    public static func percentDecode<S: StringProtocol>(_ text: S, plusIsSpace: Bool) throws -> String {
        let bytes = Array(text.utf8)
        guard bytes.contains(UInt8(ascii: "%")) || (plusIsSpace && bytes.contains(UInt8(ascii: "+"))) else {
            return String(text)
        }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, let high = hexValue(bytes[index + 1]),
                    let low = hexValue(bytes[index + 2])
                else {
                    throw HTTPError.badRequest("invalid percent-encoding in request target")
                }
                decoded.append(high << 4 | low)
                index += 3
            } else {
                decoded.append(plusIsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                index += 1
            }
        }
        guard let string = String(validating: decoded, as: UTF8.self) else {
            throw HTTPError.badRequest("request target does not decode to UTF-8")
        }
        return string
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
