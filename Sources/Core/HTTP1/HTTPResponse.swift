/// An HTTP/1.1 response: what a server serializes, and what the client parser produces.
public struct HTTPResponse: Sendable {
    /// The status code.
    public var status: Int
    /// The reason phrase (informational only).
    public var reason: String
    /// The header fields (`Content-Length` is computed by ``serialize()``).
    public var headers: HTTPHeaders
    /// The body.
    public var body: [UInt8]

    /// A response; the reason defaults to the standard phrase of `status`.
    public init(status: Int, reason: String? = nil, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.reason = reason ?? HTTPResponse.reasonPhrase(for: status)
        self.headers = headers
        self.body = body
    }

    /// A response with a JSON body (`Content-Type: application/json`).
    public static func json(status: Int = 200, _ body: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: body)
    }

    /// A response with a JSON body given as text.
    public static func json(status: Int = 200, _ body: String) -> HTTPResponse {
        json(status: status, Array(body.utf8))
    }

    /// The answer to a request that failed to parse or was refused:
    /// `{"error":{"status":431,"message":"..."}}` with `Connection: close` for parse errors
    /// (after one the connection's framing is lost).
    public init(error: HTTPError, closeConnection: Bool = true) {
        let body = "{\"error\":{\"status\":\(error.status),\"message\":\(HTTPResponse.jsonString(error.message))}}"
        var headers: HTTPHeaders = ["Content-Type": "application/json"]
        if closeConnection {
            headers.add(name: "Connection", value: "close")
        }
        self.init(status: error.status, headers: headers, body: Array(body.utf8))
    }

    /// The value of `Connection` asks to close after this response.
    public var closesConnection: Bool {
        headers.tokens("Connection").contains("close")
    }

    /// The wire form: status line, headers, `Content-Length`, body.
    ///
    /// RFC 9110 8.6: "A server MUST NOT send a Content-Length header field in any response
    /// with a status code of 1xx (Informational) or 204 (No Content)", so those get neither a
    /// length nor a body; every other response carries `Content-Length`.
    public func serialize() -> [UInt8] {
        serialize(omittingBody: false)
    }

    /// The wire form; the answer to `HEAD` omits the body but keeps every header, the
    /// `Content-Length` included. RFC 9110 9.3.2: "The server SHOULD send the same header fields
    /// in response to a HEAD request as it would have sent if the request method had been GET."
    public func serialize(omittingBody: Bool) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(reason)\r\n"
        for field in headers
        where !HTTPHeaders.equalNames(field.name, "Content-Length")
            && !HTTPHeaders.equalNames(field.name, "Transfer-Encoding")
        {
            text += "\(field.name): \(field.value)\r\n"
        }
        let bodyless = (100..<200).contains(status) || status == 204
        if !bodyless {
            text += "Content-Length: \(body.count)\r\n"
        }
        text += "\r\n"
        return bodyless || omittingBody ? Array(text.utf8) : Array(text.utf8) + body
    }

    /// The standard reason phrase of `status` (RFC 9110 15, RFC 6585), or the name of its class
    /// for a code no RFC defines ("Success" for an unknown 2xx); see ``HTTPStatusReason``.
    public static func reasonPhrase(for status: Int) -> String {
        HTTPStatusReason.phrase(for: status)
    }

    /// `text` as a JSON string literal (RFC 8259 7).
    static func jsonString(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
