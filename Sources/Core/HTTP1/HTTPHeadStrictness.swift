/// How far a head parser goes in accepting what RFC 9112 lets a recipient tolerate.
///
/// Everything else is the same for every parser: lines end in CRLF (or LF where allowed), a
/// bare CR is refused, field names are tokens with no whitespace before the colon, obsolete
/// line folding and control characters in field values are refused.
public struct HTTPHeadStrictness: Sendable, Hashable {
    /// Whether a line may end in a single LF.
    ///
    /// RFC 9112 2.2: "Although the line terminator for the start-line and fields is the
    /// sequence CRLF, a recipient MAY recognize a single LF as a line terminator and ignore any
    /// preceding CR." When `false`, a bare LF makes the message invalid (400).
    public var acceptsBareLF: Bool
    /// Whether empty lines before the start line are skipped.
    ///
    /// RFC 9112 2.2: "a server that is expecting to receive and parse a request-line SHOULD
    /// ignore at least one empty line (CRLF) received prior to the request-line." When `false`,
    /// an empty first line makes the message invalid (400).
    public var skipsLeadingEmptyLines: Bool

    /// Creates a setting.
    public init(acceptsBareLF: Bool, skipsLeadingEmptyLines: Bool) {
        self.acceptsBareLF = acceptsBareLF
        self.skipsLeadingEmptyLines = skipsLeadingEmptyLines
    }

    /// CRLF only, nothing before the start line: the WebSocket opening handshake, where a peer
    /// that cannot frame its head exactly is not one to upgrade.
    public static let strict = HTTPHeadStrictness(acceptsBareLF: false, skipsLeadingEmptyLines: false)

    /// Bare LF accepted and empty lines before the start line skipped: the local API, whose
    /// clients include shell tools and hand-typed requests.
    public static let lenient = HTTPHeadStrictness(acceptsBareLF: true, skipsLeadingEmptyLines: true)
}
