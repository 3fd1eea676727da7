/// Hex helpers for the tests.
enum Hex {
    /// The bytes of an even-length lowercase or uppercase hex string; traps on anything else
    /// (test data is ours).
    static func bytes(_ text: String) -> [UInt8] {
        let digits = Array(text.utf8)
        precondition(digits.count % 2 == 0, "odd-length hex \(text)")
        return stride(from: 0, to: digits.count, by: 2).map { index in
            UInt8(value(digits[index]) << 4 | value(digits[index + 1]))
        }
    }

    /// Lowercase hex of `bytes`.
    static func string(_ bytes: [UInt8]) -> String {
        let alphabet = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(alphabet[Int(byte >> 4)])
            out.append(alphabet[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func value(_ digit: UInt8) -> UInt8 {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: preconditionFailure("not a hex digit: \(digit)")
        }
    }
}
