/// A malformed or unacceptable HTTP message, with the status code a server answers it with.
///
/// The one error type of the `HTTP1` module. After a parser throws, the connection's byte
/// stream can no longer be framed: answer with ``status`` (see `HTTPResponse(error:)`) and
/// close the connection.
public struct HTTPError: Error, Equatable, Hashable, CustomStringConvertible, Sendable {
    /// The HTTP status code that describes the problem (400, 413, 431, 501, 505, ...).
    public let status: Int
    /// What was wrong, for logs and the error body.
    public let message: String

    /// Creates an error with a status code and message.
    public init(status: Int, message: String) {
        self.status = status
        self.message = message
    }

    /// `431 Request Header Fields Too Large: ...`
    public var description: String {
        "\(status) \(HTTPResponse.reasonPhrase(for: status)): \(message)"
    }

    /// 400: the message does not follow the HTTP/1.1 syntax.
    public static func badRequest(_ message: String) -> HTTPError {
        HTTPError(status: 400, message: message)
    }

    /// 404: nothing is served at this path.
    public static func notFound(_ message: String) -> HTTPError {
        HTTPError(status: 404, message: message)
    }

    /// 405: the path exists but not for this method.
    public static func methodNotAllowed(_ message: String) -> HTTPError {
        HTTPError(status: 405, message: message)
    }

    /// 413: the declared body is larger than the limit.
    public static func contentTooLarge(_ message: String) -> HTTPError {
        HTTPError(status: 413, message: message)
    }

    /// 431: the header block is larger than the limit.
    public static func headerFieldsTooLarge(_ message: String) -> HTTPError {
        HTTPError(status: 431, message: message)
    }

    /// 501: a feature the server does not implement (transfer codings).
    public static func notImplemented(_ message: String) -> HTTPError {
        HTTPError(status: 501, message: message)
    }

    /// 502: a response from a server could not be parsed (client side).
    public static func badResponse(_ message: String) -> HTTPError {
        HTTPError(status: 502, message: message)
    }

    /// 505: an HTTP major version other than 1.
    public static func versionNotSupported(_ message: String) -> HTTPError {
        HTTPError(status: 505, message: message)
    }
}
