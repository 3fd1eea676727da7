/// The first line of a request: `request-line = method SP request-target SP HTTP-version`
/// (RFC 9112 3).
///
/// Only the syntax is checked here; which methods, targets and versions are served is up to
/// the caller (the local API answers HTTP/2 with 505, the WebSocket handshake wants `GET` over
/// HTTP/1.1).
public struct HTTPRequestLine: Sendable, Equatable {
    /// The method token, case-sensitive (RFC 9110 9.1).
    public var method: String
    /// The request target as sent.
    public var target: String
    /// The protocol version.
    public var version: HTTPVersion

    /// Parses a request line without its line terminator.
    ///
    /// - Throws: ``HTTPError`` 400 when it is not `token SP target SP HTTP/d.d` with a target of
    ///   visible ASCII characters.
    public init(parsing line: some Collection<UInt8>) throws(HTTPError) {
        let parts = line.split(separator: HTTPSyntax.space, omittingEmptySubsequences: false)
        guard parts.count == 3, HTTPSyntax.isToken(parts[0]), !parts[1].isEmpty else {
            throw .badRequest("malformed request line")
        }
        // RFC 9112 3.2: the target is a URI form, made of visible ASCII characters only.
        guard parts[1].allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .badRequest("invalid character in request target")
        }
        guard let version = HTTPVersion(parsing: parts[2]) else {
            throw .badRequest("malformed HTTP version")
        }
        self.method = String(decoding: parts[0], as: UTF8.self)
        self.target = String(decoding: parts[1], as: UTF8.self)
        self.version = version
    }
}
