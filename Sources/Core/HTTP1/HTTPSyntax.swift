/// Character classes of the HTTP grammar (RFC 9110 5.6).
public enum HTTPSyntax {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let space: UInt8 = 0x20
    static let tab: UInt8 = 0x09
    static let colon: UInt8 = 0x3A

    /// RFC 9110 5.6.2: `tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." /
    /// "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA`
    public static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// Whether `bytes` is a token: `token = 1*tchar` (RFC 9110 5.6.2).
    public static func isToken(_ bytes: some Collection<UInt8>) -> Bool {
        !bytes.isEmpty && bytes.allSatisfy(isTokenCharacter)
    }

    /// Whether `text` is a token: `token = 1*tchar` (RFC 9110 5.6.2).
    public static func isToken(_ text: some StringProtocol) -> Bool {
        isToken(text.utf8)
    }

    /// Whether `byte` may appear in a field value or a reason phrase: RFC 9110 5.5,
    /// `field-vchar = VCHAR / obs-text` plus SP and HTAB between them. Every other control
    /// character (NUL, CR, LF, DEL, ...) is refused.
    static func isFieldValueCharacter(_ byte: UInt8) -> Bool {
        byte == tab || (byte >= space && byte != 0x7F)
    }

    static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
