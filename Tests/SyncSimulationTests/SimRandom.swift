/// The simulation's only source of randomness: SplitMix64 (Steele, Lea, Flood, "Fast Splittable
/// Pseudorandom Number Generators", 2014). The same seed gives the same sequence in every process
/// and with every Swift version, because every derived value (ranges, probabilities, UUIDs) is
/// computed here rather than by the standard library's `random(in:using:)`.
final class SimRandom {
    private var state: UInt64

    /// A generator for `seed`.
    init(seed: UInt64) {
        state = seed &* 0x9E37_79B9_7F4A_7C15 ^ 0xD1B5_4A32_D192_ED03
    }

    /// The next 64 random bits.
    func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in `0..<n` (`n` > 0), by multiply-high (Lemire), without a modulo bias worth
    /// caring about for a simulation.
    func below(_ n: Int) -> Int {
        precondition(n > 0, "below(\(n))")
        return Int(UInt64(n).multipliedFullWidth(by: next()).high)
    }

    /// A value in `range`.
    func int(_ range: ClosedRange<Int64>) -> Int64 {
        range.lowerBound + Int64(below(Int(range.upperBound - range.lowerBound) + 1))
    }

    /// A value in `range`.
    func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + below(range.upperBound - range.lowerBound + 1)
    }

    /// A uniform value in [0, 1).
    func unit() -> Double {
        Double(next() >> 11) * 0x1p-53
    }

    /// True with probability `p`.
    func chance(_ p: Double) -> Bool {
        p > 0 && unit() < p
    }

    /// One element of a non-empty array.
    func pick<T>(_ items: [T]) -> T {
        items[below(items.count)]
    }

    /// A lower-case version 4 UUID (8-4-4-4-12 hex digits, version nibble 4, variant 10xx),
    /// which `Order.isValidUUID` accepts.
    func uuid() -> String {
        let hex = Array("0123456789abcdef")
        var a = next()
        var b = next()
        var digits: [Character] = []
        digits.reserveCapacity(32)
        for i in 0..<32 {
            let nibble: Int
            if i < 16 {
                nibble = Int(a & 0xF)
                a >>= 4
            } else {
                nibble = Int(b & 0xF)
                b >>= 4
            }
            digits.append(hex[nibble])
        }
        digits[12] = "4"
        digits[16] = hex[8 + Int(next() & 3)]
        var out = ""
        out.reserveCapacity(36)
        for (i, c) in digits.enumerated() {
            if i == 8 || i == 12 || i == 16 || i == 20 { out.append("-") }
            out.append(c)
        }
        return out
    }
}

/// FNV-1a, 64 bits: a stable hash (Swift's `Hasher` is seeded per process, so it cannot show
/// that two processes ran the same simulation).
struct StableHash {
    private(set) var value: UInt64 = 0xCBF2_9CE4_8422_2325

    /// Mixes in the bytes of `text`.
    mutating func add(_ text: String) {
        for b in text.utf8 {
            value ^= UInt64(b)
            value &*= 0x0000_0100_0000_01B3
        }
    }

    /// Mixes in a number.
    mutating func add(_ n: Int64) {
        var v = UInt64(bitPattern: n)
        for _ in 0..<8 {
            value ^= v & 0xFF
            value &*= 0x0000_0100_0000_01B3
            v >>= 8
        }
    }

    /// The hash as 16 hexadecimal digits.
    var hex: String {
        let s = String(value, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }
}
