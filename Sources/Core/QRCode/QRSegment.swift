/// One data segment: the whole text in the most compact mode that can hold all of it
/// (ISO/IEC 18004:2015 7.4), and its bit stream.
struct QRSegment: Sendable {
    /// The encoding modes used here, with their 4-bit mode indicators (Table 2).
    enum Mode: Int, Sendable, CustomStringConvertible {
        /// Decimal digits, three per 10 bits.
        case numeric = 0b0001
        /// Digits, upper-case letters and ` $%*+-./:`, two per 11 bits.
        case alphanumeric = 0b0010
        /// Bytes, 8 bits each.
        case byte = 0b0100

        /// The width of the character count indicator (Table 3): versions 1-9, 10-26, 27-40.
        func characterCountBits(version: Int) -> Int {
            let column = version <= 9 ? 0 : version <= 26 ? 1 : 2
            switch self {
            case .numeric: return [10, 12, 14][column]
            case .alphanumeric: return [9, 11, 13][column]
            case .byte: return [8, 16, 16][column]
            }
        }

        var description: String {
            switch self {
            case .numeric: "numeric"
            case .alphanumeric: "alphanumeric"
            case .byte: "byte"
            }
        }
    }

    /// The 45 characters of alphanumeric mode in the order of their values 0...44 (Table 5).
    static let alphanumericCharset = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:".utf8)

    /// The mode the text is encoded in.
    let mode: Mode
    /// The number of characters (digits, alphanumeric characters or bytes) in the segment.
    let characterCount: Int
    /// The data bits after the mode indicator and character count.
    let payload: QRBitBuffer

    /// The text in numeric mode if it is all digits, else alphanumeric mode if every character is
    /// in that mode's set, else its UTF-8 bytes in byte mode.
    init(text: String) {
        let bytes = Array(text.utf8)
        var payload = QRBitBuffer()
        if bytes.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // 7.4.3: "The input data string is divided into groups of three digits, and each group
            // is converted to its 10-bit binary equivalent. If the number of input digits is not an
            // exact multiple of three, the final one or two digits are converted to 4 or 7 bits."
            var index = 0
            while index < bytes.count {
                let group = bytes[index..<min(index + 3, bytes.count)]
                let value = group.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
                payload.append(value, bits: group.count * 3 + 1)
                index += 3
            }
            mode = .numeric
        } else if let values = Self.alphanumericValues(bytes) {
            // 7.4.4: "Input data characters are divided into groups of two characters which are
            // encoded as 11-bit binary codes. The character value of the first character is
            // multiplied by 45 and the character value of the second digit is added to the
            // product. ... If the number of input data characters is not a multiple of two, the
            // character value of the final character is encoded as a 6-bit binary number."
            var index = 0
            while index + 1 < values.count {
                payload.append(values[index] * 45 + values[index + 1], bits: 11)
                index += 2
            }
            if index < values.count {
                payload.append(values[index], bits: 6)
            }
            mode = .alphanumeric
        } else {
            for byte in bytes {
                payload.append(Int(byte), bits: 8)
            }
            mode = .byte
        }
        self.characterCount = bytes.count
        self.payload = payload
    }

    /// The alphanumeric value of each byte, or `nil` if one is outside the mode's 45 characters.
    private static func alphanumericValues(_ bytes: [UInt8]) -> [Int]? {
        var values: [Int] = []
        values.reserveCapacity(bytes.count)
        for byte in bytes {
            guard let value = alphanumericCharset.firstIndex(of: byte) else { return nil }
            values.append(value)
        }
        return values
    }

    /// The bits the segment takes in `version`: mode indicator, character count and data; `nil`
    /// when the count does not fit in the character count indicator.
    func bitLength(version: Int) -> Int? {
        let countBits = mode.characterCountBits(version: version)
        guard characterCount < 1 << countBits else { return nil }
        return 4 + countBits + payload.count
    }

    /// The smallest version 1...40 whose data capacity at `errorCorrection` holds the segment.
    func smallestVersion(errorCorrection: QRCode.ErrorCorrection) -> Int? {
        (1...40).first { version in
            guard let bits = bitLength(version: version) else { return false }
            return bits <= QRCodeTables.dataCodewordCount(version: version, errorCorrection: errorCorrection) * 8
        }
    }

    /// The data codewords for `version`: the segment, the terminator, zero bits up to a byte
    /// boundary and the pad codewords (7.4.9, 7.4.10).
    ///
    /// - Precondition: the segment fits (`smallestVersion` returned `version` or less).
    func dataCodewords(version: Int, errorCorrection: QRCode.ErrorCorrection) -> [UInt8] {
        let capacityBits = QRCodeTables.dataCodewordCount(version: version, errorCorrection: errorCorrection) * 8
        var buffer = QRBitBuffer()
        buffer.append(mode.rawValue, bits: 4)
        buffer.append(characterCount, bits: mode.characterCountBits(version: version))
        buffer.append(contentsOf: payload)
        precondition(buffer.count <= capacityBits, "segment of \(buffer.count) bits in a \(capacityBits)-bit version \(version)")
        // 7.4.9: "The end of data in the symbol is signalled by the Terminator sequence of 0 bits
        // ... The Terminator may be truncated if the remaining data capacity of the symbol is less
        // than 4 bits."
        buffer.append(0, bits: min(4, capacityBits - buffer.count))
        // 7.4.10: "If the bit string is not a multiple of 8, padding bits (0) are added ..."
        buffer.append(0, bits: (8 - buffer.count % 8) % 8)
        var codewords = buffer.bytes
        // "... the message bit stream is extended to fill the data capacity of the symbol by adding
        // the Pad Codewords 11101100 and 00010001 alternately."
        var padIndex = 0
        while codewords.count * 8 < capacityBits {
            codewords.append(padIndex % 2 == 0 ? 0b1110_1100 : 0b0001_0001)
            padIndex += 1
        }
        return codewords
    }
}

/// A growable string of bits, most significant first.
struct QRBitBuffer: Sendable {
    /// The bits in order.
    private(set) var bits: [Bool] = []

    /// The number of bits.
    var count: Int { bits.count }

    /// Appends the low `bits` bits of `value`, most significant first.
    mutating func append(_ value: Int, bits width: Int) {
        precondition(width >= 0 && width <= 31 && value >> width == 0, "\(value) does not fit in \(width) bits")
        for shift in stride(from: width - 1, through: 0, by: -1) {
            bits.append((value >> shift) & 1 == 1)
        }
    }

    /// Appends every bit of `other`.
    mutating func append(contentsOf other: QRBitBuffer) {
        bits.append(contentsOf: other.bits)
    }

    /// The bits packed into bytes, most significant first.
    ///
    /// - Precondition: `count` is a multiple of 8.
    var bytes: [UInt8] {
        precondition(bits.count % 8 == 0, "\(bits.count) bits are not whole bytes")
        return stride(from: 0, to: bits.count, by: 8).map { start in
            bits[start..<start + 8].reduce(0) { $0 << 1 | ($1 ? 1 : 0) }
        }
    }
}
