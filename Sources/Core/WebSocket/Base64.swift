/// Standard base64 (RFC 4648 section 4, with padding), as used by `Sec-WebSocket-Key` and
/// `Sec-WebSocket-Accept`.
enum Base64 {
    private static let alphabet: [UInt8] = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Encodes `bytes` with `=` padding.
    static func encode<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var iterator = bytes.makeIterator()
        while let b0 = iterator.next() {
            let b1 = iterator.next()
            let b2 = iterator.next()
            output.append(alphabet[Int(b0 >> 2)])
            output.append(alphabet[Int((b0 & 0x03) << 4 | (b1 ?? 0) >> 4)])
            if let b1 {
                output.append(alphabet[Int((b1 & 0x0F) << 2 | (b2 ?? 0) >> 6)])
            } else {
                output.append(UInt8(ascii: "="))
            }
            if let b2 {
                output.append(alphabet[Int(b2 & 0x3F)])
            } else {
                output.append(UInt8(ascii: "="))
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes canonical padded base64; returns `nil` for anything else (characters outside the
    /// alphabet, whitespace, missing or misplaced padding, non-zero bits in the final unit).
    static func decode(_ text: String) -> [UInt8]? {
        let input = Array(text.utf8)
        guard input.count % 4 == 0 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(input.count / 4 * 3)
        var index = 0
        while index < input.count {
            let isLast = index + 4 == input.count
            guard let v0 = value(of: input[index]), let v1 = value(of: input[index + 1]) else {
                return nil
            }
            output.append(v0 << 2 | v1 >> 4)
            let c2 = input[index + 2]
            let c3 = input[index + 3]
            if c2 == UInt8(ascii: "=") {
                guard isLast, c3 == UInt8(ascii: "="), v1 & 0x0F == 0 else { return nil }
            } else {
                guard let v2 = value(of: c2) else { return nil }
                output.append(v1 << 4 | v2 >> 2)
                if c3 == UInt8(ascii: "=") {
                    guard isLast, v2 & 0x03 == 0 else { return nil }
                } else {
                    guard let v3 = value(of: c3) else { return nil }
                    output.append(v2 << 6 | v3)
                }
            }
            index += 4
        }
        return output
    }

    private static func value(of character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        default: return nil
        }
    }
}
