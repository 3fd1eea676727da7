/// Reed-Solomon error correction codewords over GF(256) with the QR code's field polynomial
/// x^8 + x^4 + x^3 + x^2 + 1 (0x11D) and generator polynomial (x - α^0)(x - α^1)...(x - α^(n-1))
/// (ISO/IEC 18004:2015 7.5.2, Annex A).
struct ReedSolomonEncoder: Sendable {
    /// The generator's coefficients, highest degree first, without the leading 1.
    private let generator: [UInt8]

    /// The encoder that appends `degree` error correction codewords.
    init(degree: Int) {
        precondition(degree >= 1 && degree <= 255, "Reed-Solomon degree \(degree)")
        // Multiply (x - α^i) in, one factor at a time; coefficients highest degree first, the
        // monic leading 1 implied. In GF(2^8) subtraction is addition (xor).
        var coefficients = [UInt8](repeating: 0, count: degree)
        coefficients[degree - 1] = 1
        var root: UInt8 = 1
        for _ in 0..<degree {
            for index in 0..<degree {
                coefficients[index] = Self.multiply(coefficients[index], root)
                if index + 1 < degree {
                    coefficients[index] ^= coefficients[index + 1]
                }
            }
            root = Self.multiply(root, 0x02)
        }
        generator = coefficients
    }

    /// The remainder of `data` · x^degree divided by the generator: the error correction
    /// codewords, highest degree first.
    func remainder(of data: ArraySlice<UInt8>) -> [UInt8] {
        var remainder = [UInt8](repeating: 0, count: generator.count)
        for byte in data {
            let factor = byte ^ remainder.removeFirst()
            remainder.append(0)
            for index in generator.indices {
                remainder[index] ^= Self.multiply(generator[index], factor)
            }
        }
        return remainder
    }

    /// The product of two field elements modulo 0x11D (Russian peasant multiplication).
    static func multiply(_ left: UInt8, _ right: UInt8) -> UInt8 {
        var product = 0
        for bit in stride(from: 7, through: 0, by: -1) {
            product = (product << 1) ^ ((product >> 7) * 0x11D)
            product ^= ((Int(right) >> bit) & 1) * Int(left)
        }
        return UInt8(product)
    }
}
