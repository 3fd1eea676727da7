/// An HTTP version such as 1.1.
public struct HTTPVersion: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The major version (1).
    public var major: Int
    /// The minor version (0 or 1).
    public var minor: Int

    /// Creates a version.
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    /// Parses `HTTP-version = HTTP-name "/" DIGIT "." DIGIT` (RFC 9112 2.3), e.g. `HTTP/1.1`.
    public init?(parsing bytes: some Collection<UInt8>) {
        let text = Array(bytes)
        guard text.count == 8, text[0..<5].elementsEqual("HTTP/".utf8), text[6] == UInt8(ascii: "."),
            HTTPSyntax.isDigit(text[5]), HTTPSyntax.isDigit(text[7])
        else {
            return nil
        }
        self.init(major: Int(text[5] - 0x30), minor: Int(text[7] - 0x30))
    }

    /// HTTP/1.1.
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)
    /// HTTP/1.0.
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)

    /// `HTTP/1.1`.
    public var description: String { "HTTP/\(major).\(minor)" }
}
