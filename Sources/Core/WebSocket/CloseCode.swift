/// A WebSocket close status code (RFC 6455 7.4).
///
/// Codes are kept as their raw 16-bit value so that codes from the private range (4000-4999)
/// and codes registered after RFC 6455 pass through unchanged.
public struct CloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code as sent on the wire (network byte order when serialized).
    public var rawValue: UInt16

    /// Wraps a raw code without validating it; see `isValidOnWire`.
    public init(rawValue: UInt16) {
        self.rawValue = rawValue
    }

    /// Wraps a raw code without validating it; see `isValidOnWire`.
    public init(_ rawValue: UInt16) {
        self.rawValue = rawValue
    }

    /// 1000: "normal closure, meaning that the purpose for which the connection was established
    /// has been fulfilled."
    public static let normal = CloseCode(1000)
    /// 1001: "an endpoint is 'going away', such as a server going down".
    public static let goingAway = CloseCode(1001)
    /// 1002: "an endpoint is terminating the connection due to a protocol error."
    public static let protocolError = CloseCode(1002)
    /// 1003: "it has received a type of data it cannot accept".
    public static let unsupportedData = CloseCode(1003)
    /// 1005: reported locally when a Close frame carried no code; never sent.
    public static let noStatusReceived = CloseCode(1005)
    /// 1006: reported locally when the connection closed without a Close frame; never sent.
    public static let abnormalClosure = CloseCode(1006)
    /// 1007: "it has received data within a message that was not consistent with the type of
    /// the message (e.g., non-UTF-8 [RFC3629] data within a text message)."
    public static let invalidPayload = CloseCode(1007)
    /// 1008: "it has received a message that violates its policy."
    public static let policyViolation = CloseCode(1008)
    /// 1009: "it has received a message that is too big for it to process."
    public static let messageTooBig = CloseCode(1009)
    /// 1010: the client expected the server to negotiate an extension.
    public static let mandatoryExtension = CloseCode(1010)
    /// 1011: "it encountered an unexpected condition that prevented it from fulfilling the
    /// request."
    public static let internalError = CloseCode(1011)
    /// 1012: the service is restarting (IANA registry).
    public static let serviceRestart = CloseCode(1012)
    /// 1013: try again later (IANA registry).
    public static let tryAgainLater = CloseCode(1013)
    /// 1014: bad gateway (IANA registry).
    public static let badGateway = CloseCode(1014)
    /// 1015: reported locally for a failed TLS handshake; never sent.
    public static let tlsHandshakeFailure = CloseCode(1015)

    /// Whether this code may appear in a Close frame on the wire.
    ///
    /// RFC 6455 7.4.1 reserves 1005, 1006 and 1015: each "is a reserved value and MUST NOT be
    /// set as a status code in a Close control frame by an endpoint." 7.4.2: "Status codes in
    /// the range 0-999 are not used", 1000-2999 are defined by the RFC or its registry
    /// (1004 is reserved, 1000-1003 and 1007-1014 are assigned), 3000-3999 are registered for
    /// libraries and frameworks, 4000-4999 are private. Anything else is a protocol error.
    public var isValidOnWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999:
            return true
        default:
            return false
        }
    }

    /// The code and its name, e.g. `1002 (protocol error)`.
    public var description: String {
        let name: String
        switch rawValue {
        case 1000: name = "normal"
        case 1001: name = "going away"
        case 1002: name = "protocol error"
        case 1003: name = "unsupported data"
        case 1005: name = "no status received"
        case 1006: name = "abnormal closure"
        case 1007: name = "invalid payload"
        case 1008: name = "policy violation"
        case 1009: name = "message too big"
        case 1010: name = "mandatory extension"
        case 1011: name = "internal error"
        case 1012: name = "service restart"
        case 1013: name = "try again later"
        case 1014: name = "bad gateway"
        case 1015: name = "TLS handshake failure"
        default: name = "unassigned"
        }
        return "\(rawValue) (\(name))"
    }
}
