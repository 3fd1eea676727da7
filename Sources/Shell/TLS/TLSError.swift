internal import COpenSSL

/// A TLS operation that failed, with OpenSSL's reasons (its error queue) when it gave any.
public struct TLSError: Error, Equatable, CustomStringConvertible {
    /// What was being done, e.g. "handshake" or "load the certificate".
    public let operation: String
    /// OpenSSL's reasons, or our own.
    public let detail: String

    /// An error from its parts.
    public init(operation: String, detail: String) {
        self.operation = operation
        self.detail = detail
    }

    public var description: String { "\(operation): \(detail)" }

    /// The reasons waiting in this thread's OpenSSL error queue (which this empties).
    static func fromQueue(_ operation: String, otherwise: String = "failed") -> TLSError {
        var reasons: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            var text = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &text, text.count)
            reasons.append(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return TLSError(operation: operation, detail: reasons.isEmpty ? otherwise : reasons.joined(separator: "; "))
    }
}
