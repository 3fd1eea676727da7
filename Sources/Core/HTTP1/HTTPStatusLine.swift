/// The first line of a response: `status-line = HTTP-version SP status-code SP
/// [ reason-phrase ]` (RFC 9112 4).
public struct HTTPStatusLine: Sendable, Equatable {
    /// The protocol version.
    public var version: HTTPVersion
    /// The three-digit status code.
    public var status: Int
    /// The reason phrase, possibly empty (informational only).
    public var reason: String

    /// Parses a status line without its line terminator.
    ///
    /// RFC 9112 4: "A client SHOULD ignore the reason-phrase content because it is not a
    /// reliable channel for information", but it must still be `*( HTAB / SP / VCHAR /
    /// obs-text )`. A missing SP after the code is tolerated (older servers omit it).
    ///
    /// - Throws: ``HTTPError`` 400 for anything else.
    public init(parsing line: some Collection<UInt8>) throws(HTTPError) {
        let parts = line.split(separator: HTTPSyntax.space, maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, let version = HTTPVersion(parsing: parts[0]),
            parts[1].count == 3, parts[1].allSatisfy(HTTPSyntax.isDigit)
        else {
            throw .badRequest("malformed status line")
        }
        let reason = parts.count > 2 ? parts[2] : parts[1].suffix(0)
        guard reason.allSatisfy(HTTPSyntax.isFieldValueCharacter) else {
            throw .badRequest("control character in the reason phrase")
        }
        self.version = version
        self.status = parts[1].reduce(0) { $0 * 10 + Int($1 - 0x30) }
        self.reason = String(decoding: reason, as: UTF8.self)
    }
}
