/// An incremental HTTP/1.x response parser for clients (sans I/O).
///
/// ``append(_:)`` received bytes and call ``nextResponse()``; when the server closes the
/// connection call ``finish()``, which completes a response whose body runs to the end of
/// the connection (no `Content-Length`). Responses with status 1xx, 204 and 304 have no body.
/// `Transfer-Encoding` is not supported (the servers this talks to send `Content-Length`).
public struct HTTPResponseParser {
    private enum State {
        case head(HTTPHeadParser)
        /// `bodyLength == nil`: the body runs until the connection closes.
        case body(HTTPResponse, headLength: Int, bodyLength: Int?)
        case failed(HTTPError)
    }

    /// The largest status line plus header block accepted.
    public let maxHeaderBytes: Int
    /// The largest body accepted.
    public let maxBodyBytes: Int
    /// The line rules in force.
    public let strictness: HTTPHeadStrictness
    private var state: State
    private var buffer: [UInt8] = []
    private var bufferStart = 0

    /// A parser with the given limits (16 KiB of headers, 64 MiB of body by default), lenient
    /// by default (bare LF accepted, empty lines before the status line skipped).
    public init(
        maxHeaderBytes: Int = 16 << 10, maxBodyBytes: Int = 64 << 20,
        strictness: HTTPHeadStrictness = .lenient
    ) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
        self.strictness = strictness
        self.state = .head(HTTPHeadParser(strictness: strictness, maxHeadBytes: maxHeaderBytes))
    }

    /// Bytes appended but not yet returned as part of a response.
    public var bufferedByteCount: Int { buffer.count - bufferStart }

    /// Adds received bytes.
    public mutating func append(_ bytes: [UInt8]) {
        buffer.append(contentsOf: bytes)
    }

    /// The next complete response, or `nil` when more bytes are needed.
    public mutating func nextResponse() throws -> HTTPResponse? {
        do {
            return try step()
        } catch let error as HTTPError {
            state = .failed(error)
            throw error
        }
    }

    /// Call when the connection closed: returns a response delimited by the close, `nil` when
    /// nothing was pending, and throws when the connection closed in the middle of a response.
    public mutating func finish() throws -> HTTPResponse? {
        if let response = try nextResponse() {
            return response
        }
        switch state {
        case .head where bufferedByteCount == 0:
            return nil
        case .body(var response, let headLength, nil):
            response.body = Array(buffer[(bufferStart + headLength)...])
            buffer = []
            bufferStart = 0
            state = .head(HTTPHeadParser(strictness: strictness, maxHeadBytes: maxHeaderBytes))
            return response
        case .failed(let error):
            throw error
        default:
            let error = HTTPError.badResponse("connection closed before the response was complete")
            state = .failed(error)
            throw error
        }
    }

    private mutating func step() throws -> HTTPResponse? {
        let bytes = buffer[bufferStart...]
        switch state {
        case .failed(let error):
            throw error
        case .body(let response, let headLength, let bodyLength):
            guard let bodyLength else {
                if bytes.count - headLength > maxBodyBytes {
                    throw HTTPError.badResponse("response body exceeds \(maxBodyBytes) bytes")
                }
                return nil
            }
            return complete(response, headLength: headLength, bodyLength: bodyLength)
        case .head(var headParser):
            let progress: HTTPHeadParser.Result
            do {
                progress = try headParser.parse(bytes)
            } catch {
                throw HTTPError.badResponse(error.message)
            }
            state = .head(headParser)
            guard case .complete(let head, let headLength) = progress else {
                return nil
            }
            let response = try HTTPResponseParser.response(head)
            let bodyLength = try bodyLength(of: response)
            if let bodyLength {
                return complete(response, headLength: headLength, bodyLength: bodyLength)
            }
            state = .body(response, headLength: headLength, bodyLength: nil)
            return try step()
        }
    }

    private mutating func complete(_ response: HTTPResponse, headLength: Int, bodyLength: Int) -> HTTPResponse? {
        guard bufferedByteCount >= headLength + bodyLength else {
            state = .body(response, headLength: headLength, bodyLength: bodyLength)
            return nil
        }
        var response = response
        let bodyStart = bufferStart + headLength
        response.body = Array(buffer[bodyStart..<(bodyStart + bodyLength)])
        bufferStart = bodyStart + bodyLength
        if bufferStart == buffer.count {
            buffer.removeAll()
            bufferStart = 0
        }
        state = .head(HTTPHeadParser(strictness: strictness, maxHeadBytes: maxHeaderBytes))
        return response
    }

    private static func response(_ head: HTTPHead) throws -> HTTPResponse {
        let line: HTTPStatusLine
        do {
            line = try HTTPStatusLine(parsing: head.startLine)
        } catch {
            throw HTTPError.badResponse(error.message)
        }
        guard line.version.major == 1 else {
            throw HTTPError.badResponse("malformed status line")
        }
        return HTTPResponse(status: line.status, reason: line.reason, headers: head.headers)
    }

    /// RFC 9112 6.3: 1xx, 204 and 304 responses end at the head; otherwise `Content-Length`
    /// frames the body, and without it "the message body length is determined by the number
    /// of octets received prior to the server closing the connection."
    private func bodyLength(of response: HTTPResponse) throws -> Int? {
        if (100..<200).contains(response.status) || response.status == 204 || response.status == 304 {
            return 0
        }
        if !response.headers.values("Transfer-Encoding").isEmpty {
            throw HTTPError.badResponse("Transfer-Encoding responses are not supported")
        }
        guard let length = try response.headers.contentLength(error: HTTPError.badResponse) else {
            return nil
        }
        if length > maxBodyBytes {
            throw HTTPError.badResponse("response body of \(length) bytes exceeds \(maxBodyBytes)")
        }
        return length
    }
}
