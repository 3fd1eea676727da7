/// A streaming UTF-8 validator that rejects at the first byte that cannot be part of a valid
/// sequence, however the input is split.
///
/// RFC 6455 8.1: "When an endpoint is to interpret a byte stream as UTF-8 but finds that the
/// byte stream is not, in fact, a valid UTF-8 stream, that endpoint MUST _Fail the WebSocket
/// Connection_." Checking each byte as it arrives lets a text message split over fragments (or
/// a frame arriving in pieces) fail before the rest of it is received. Validity follows
/// RFC 3629 section 4: no overlong forms, no surrogates (U+D800-U+DFFF), nothing above U+10FFFF.
public struct UTF8Validator: Sendable, Equatable {
    /// Continuation bytes still expected in the current sequence.
    private var remaining: UInt8 = 0
    /// The allowed range of the next continuation byte; only the second byte of a sequence has
    /// a range narrower than 0x80-0xBF.
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF

    /// Creates a validator at a character boundary.
    public init() {}

    /// Whether the input so far ends at a character boundary (no sequence left open).
    public var isAtCharacterBoundary: Bool {
        remaining == 0
    }

    /// Returns to the initial state, for the next message.
    public mutating func reset() {
        self = UTF8Validator()
    }

    /// Feeds `bytes`; returns `false` as soon as they cannot continue valid UTF-8.
    public mutating func validate<Bytes: Sequence>(_ bytes: Bytes) -> Bool where Bytes.Element == UInt8 {
        let result = bytes.withContiguousStorageIfAvailable { validate(buffer: $0) }
        if let result {
            return result
        }
        let copy = Array(bytes)
        return copy.withUnsafeBufferPointer { validate(buffer: $0) }
    }

    /// Feeds bytes from a buffer; returns `false` as soon as they cannot continue valid UTF-8.
    public mutating func validate(buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        let count = buffer.count
        while index < count {
            let byte = buffer[index]
            index += 1
            if remaining == 0 {
                if byte < 0x80 {
                    continue
                }
                // RFC 3629 section 4:
                // UTF8-2 = %xC2-DF UTF8-tail
                // UTF8-3 = %xE0 %xA0-BF UTF8-tail / %xE1-EC 2( UTF8-tail ) /
                //          %xED %x80-9F UTF8-tail / %xEE-EF 2( UTF8-tail )
                // UTF8-4 = %xF0 %x90-BF 2( UTF8-tail ) / %xF1-F3 3( UTF8-tail ) /
                //          %xF4 %x80-8F 2( UTF8-tail )
                switch byte {
                case 0xC2...0xDF: remaining = 1
                case 0xE0: remaining = 2; lower = 0xA0
                case 0xE1...0xEC, 0xEE, 0xEF: remaining = 2
                case 0xED: remaining = 2; upper = 0x9F
                case 0xF0: remaining = 3; lower = 0x90
                case 0xF1...0xF3: remaining = 3
                case 0xF4: remaining = 3; upper = 0x8F
                default: return false
                }
            } else {
                guard byte >= lower && byte <= upper else {
                    return false
                }
                remaining -= 1
                lower = 0x80
                upper = 0xBF
            }
        }
        return true
    }
}
