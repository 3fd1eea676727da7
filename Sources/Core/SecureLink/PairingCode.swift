internal import CryptoPrimitives
import Noise

/// A pairing code (Docs/SECURITY.md, "Pairing"): 80 random bits, written as 16 characters of
/// Crockford's base32 in four groups of four (`7KQ4-M2XD-9HZC-B0RT`).
public struct PairingCode: Sendable, Equatable, CustomStringConvertible {
    /// The number of code bytes: 80 bits.
    public static let byteCount = 10
    /// The number of characters of the written code, without the dashes.
    static let characterCount = 16
    /// Crockford's base32: `0-9 A-Z` without `I L O U`.
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)
    /// The HKDF salt of the pre-shared key.
    static let salt = Array("ordersync pairing v1".utf8)

    /// The 10 code bytes.
    public let bytes: [UInt8]

    /// The code of exactly `byteCount` bytes; `.invalidCode` for any other length.
    public init(bytes: [UInt8]) throws(SecureLinkError) {
        guard bytes.count == Self.byteCount else {
            throw SecureLinkError(.invalidCode, "a pairing code has \(Self.byteCount) bytes, got \(bytes.count)")
        }
        self.bytes = bytes
    }

    /// Reads a typed code: case-insensitive, `-` and spaces ignored, `O` read as `0` and `I`/`L`
    /// as `1`. A typo gives `.invalidCode` with a sentence saying what is wrong.
    public init(parsing text: String) throws(SecureLinkError) {
        var values: [UInt8] = []
        for character in text {
            if character == "-" || character == " " { continue }
            guard let value = Self.value(of: character) else {
                throw SecureLinkError(.invalidCode, "'\(character)' is not a pairing-code character")
            }
            values.append(value)
        }
        guard values.count == Self.characterCount else {
            throw SecureLinkError(
                .invalidCode, "a pairing code has \(Self.characterCount) characters, got \(values.count)")
        }
        // 16 characters of 5 bits are exactly 80 bits, most significant first.
        var bytes: [UInt8] = []
        var accumulator: UInt32 = 0
        var bits = 0
        for value in values {
            accumulator = accumulator << 5 | UInt32(value)
            bits += 5
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        self.bytes = bytes
    }

    /// A fresh code of 80 bits from `random`.
    public static func generate(using random: NoiseRandomSource = .system) -> PairingCode {
        let bytes = random.bytes(byteCount)
        do {
            return try PairingCode(bytes: bytes)
        } catch {
            preconditionFailure("a random source returned \(bytes.count) bytes when asked for \(byteCount)")
        }
    }

    /// The written code, four groups of four characters: `7KQ4-M2XD-9HZC-B0RT`.
    public var description: String {
        var characters: [UInt8] = []
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in bytes {
            accumulator = accumulator << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                if !characters.isEmpty && characters.count % 5 == 4 { characters.append(UInt8(ascii: "-")) }
                characters.append(Self.alphabet[Int((accumulator >> UInt32(bits)) & 0x1F)])
            }
            accumulator &= (1 << UInt32(bits)) - 1
        }
        return String(decoding: characters, as: UTF8.self)
    }

    /// The pre-shared key of the pairing handshake:
    /// `HKDF-SHA256(ikm: the 10 code bytes, salt: "ordersync pairing v1", info: "", length: 32)`.
    public var preSharedKey: [UInt8] {
        Digest.hkdfSHA256(inputKeyMaterial: bytes, salt: Self.salt, info: [], outputByteCount: 32)
    }

    /// The 5-bit value of a typed character, or nil for a character no code contains.
    private static func value(of character: Character) -> UInt8? {
        guard let ascii = character.asciiValue else { return nil }
        var upper = ascii >= UInt8(ascii: "a") && ascii <= UInt8(ascii: "z") ? ascii - 32 : ascii
        switch upper {
        case UInt8(ascii: "O"): upper = UInt8(ascii: "0")
        case UInt8(ascii: "I"), UInt8(ascii: "L"): upper = UInt8(ascii: "1")
        default: break
        }
        guard let index = alphabet.firstIndex(of: upper) else { return nil }
        return UInt8(index)
    }
}
