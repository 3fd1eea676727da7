extension HTTPHeaders {
    /// The `Content-Length`, if present.
    ///
    /// RFC 9110 8.6: "Content-Length = 1*DIGIT"; RFC 9112 6.3: "If a message is received
    /// without Transfer-Encoding and with an invalid Content-Length header field, then the
    /// message framing is invalid and the recipient MUST treat it as an unrecoverable error".
    /// Repeated identical values (`42, 42`) are accepted, as RFC 9110 8.6 allows.
    func contentLength(error: (String) -> HTTPError) throws(HTTPError) -> Int? {
        let values = values("Content-Length").flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
        guard !values.isEmpty else {
            return nil
        }
        var result: Int?
        for raw in values {
            let text = String(raw).trimmingHTTPWhitespace()
            guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy(HTTPSyntax.isDigit),
                let value = Int(text)
            else {
                throw error("invalid Content-Length")
            }
            if let result, result != value {
                throw error("conflicting Content-Length values")
            }
            result = value
        }
        return result
    }
}
