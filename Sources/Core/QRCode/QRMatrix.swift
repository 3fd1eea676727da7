/// The module grid while a symbol is built: function patterns (ISO/IEC 18004:2015 6.3), codeword
/// placement (7.7), masking (7.8), format (7.9) and version information (7.10).
struct QRMatrix: Sendable {
    /// The version, 1...40.
    let version: Int
    /// Modules per side.
    let size: Int
    /// The modules row by row, `true` for dark.
    private(set) var modules: [Bool]
    /// Which modules belong to function patterns or the format and version areas (never data,
    /// never masked), row by row.
    private(set) var isFunction: [Bool]

    /// A grid with every function pattern drawn and the format and version areas reserved (light).
    init(version: Int) {
        self.version = version
        size = QRCodeTables.size(version: version)
        modules = Array(repeating: false, count: size * size)
        isFunction = Array(repeating: false, count: size * size)
        drawFunctionPatterns()
    }

    /// Whether the module at column `x`, row `y` is dark.
    func isDark(x: Int, y: Int) -> Bool { modules[y * size + x] }

    /// Sets a module and marks it as a function module.
    private mutating func setFunction(x: Int, y: Int, dark: Bool) {
        modules[y * size + x] = dark
        isFunction[y * size + x] = true
    }

    private mutating func drawFunctionPatterns() {
        // 6.3.5: "The horizontal and vertical Timing Patterns respectively consist of a one
        // module wide row or column of alternating dark and light modules, commencing and ending
        // with a dark module ... They shall be positioned in row 6 and column 6."
        for index in 0..<size {
            setFunction(x: 6, y: index, dark: index % 2 == 0)
            setFunction(x: index, y: 6, dark: index % 2 == 0)
        }
        // 6.3.3: three finder patterns at the upper left, upper right and lower left corners,
        // each with its one-module light separator (6.3.4) where it faces the symbol.
        drawFinder(centerX: 3, centerY: 3)
        drawFinder(centerX: size - 4, centerY: 3)
        drawFinder(centerX: 3, centerY: size - 4)
        // 6.3.6 and Annex E: alignment patterns at every pair of the listed centres, except the
        // three that would overlap a finder pattern.
        let centers = QRCodeTables.alignmentCenters(version: version)
        for (row, centerY) in centers.enumerated() {
            for (column, centerX) in centers.enumerated() {
                let overlapsFinder =
                    (row == 0 && column == 0) || (row == 0 && column == centers.count - 1)
                    || (row == centers.count - 1 && column == 0)
                if !overlapsFinder {
                    drawAlignment(centerX: centerX, centerY: centerY)
                }
            }
        }
        // Reserve the format information areas (7.9.1) and the dark module beside the lower-left
        // one ("the module at position (4V + 9, 8) ... shall always be dark"); drawn light here
        // and written by `drawFormatInformation`, so the mask evaluation sees them light.
        for index in 0..<9 {
            setFunction(x: 8, y: index, dark: isDark(x: 8, y: index))
            setFunction(x: index, y: 8, dark: isDark(x: index, y: 8))
        }
        for index in 0..<8 {
            setFunction(x: size - 1 - index, y: 8, dark: false)
            setFunction(x: 8, y: size - 1 - index, dark: false)
        }
        // 7.10: the two 6 x 3 version information blocks, from version 7.
        if version >= 7 {
            for long in 0..<6 {
                for short in 0..<3 {
                    setFunction(x: size - 11 + short, y: long, dark: false)
                    setFunction(x: long, y: size - 11 + short, dark: false)
                }
            }
        }
    }

    /// A 7 x 7 finder (dark ring, light ring, dark 3 x 3 centre) and its light separator.
    private mutating func drawFinder(centerX: Int, centerY: Int) {
        for dy in -4...4 {
            for dx in -4...4 {
                let x = centerX + dx
                let y = centerY + dy
                guard x >= 0 && x < size && y >= 0 && y < size else { continue }
                let ring = max(abs(dx), abs(dy))
                setFunction(x: x, y: y, dark: ring != 2 && ring != 4)
            }
        }
    }

    /// A 5 x 5 alignment pattern: dark ring, light ring, dark centre.
    private mutating func drawAlignment(centerX: Int, centerY: Int) {
        for dy in -2...2 {
            for dx in -2...2 {
                setFunction(x: centerX + dx, y: centerY + dy, dark: max(abs(dx), abs(dy)) != 1)
            }
        }
    }

    /// Places the codewords (7.7.3): two-module-wide columns from the right, upwards then
    /// downwards in turn, skipping function modules and the vertical timing column; bits left
    /// over at the end ("remainder bits") stay light.
    mutating func placeCodewords(_ codewords: [UInt8]) {
        var bitIndex = 0
        let bitCount = codewords.count * 8
        var right = size - 1
        while right >= 1 {
            if right == 6 {
                right = 5
            }
            let upward = (right + 1) & 2 == 0
            for step in 0..<size {
                let y = upward ? size - 1 - step : step
                for x in [right, right - 1] where !isFunction[y * size + x] {
                    if bitIndex < bitCount {
                        modules[y * size + x] = (codewords[bitIndex >> 3] >> (7 - (bitIndex & 7))) & 1 == 1
                        bitIndex += 1
                    }
                }
            }
            right -= 2
        }
        precondition(bitIndex == bitCount, "placed \(bitIndex) of \(bitCount) bits")
    }

    /// Whether data mask pattern `mask` inverts the module at row `i`, column `j` (Table 10).
    static func maskInverts(_ mask: Int, i: Int, j: Int) -> Bool {
        switch mask {
        case 0: (i + j) % 2 == 0
        case 1: i % 2 == 0
        case 2: j % 3 == 0
        case 3: (i + j) % 3 == 0
        case 4: (i / 2 + j / 3) % 2 == 0
        case 5: (i * j) % 2 + (i * j) % 3 == 0
        case 6: ((i * j) % 2 + (i * j) % 3) % 2 == 0
        case 7: ((i + j) % 2 + (i * j) % 3) % 2 == 0
        default: preconditionFailure("mask \(mask)")
        }
    }

    /// Applies (or, applied twice, removes) data mask pattern `mask` to every non-function module.
    mutating func applyMask(_ mask: Int) {
        for y in 0..<size {
            for x in 0..<size where !isFunction[y * size + x] && Self.maskInverts(mask, i: y, j: x) {
                modules[y * size + x].toggle()
            }
        }
    }

    /// The mask with the lowest penalty score (7.8.3), the lowest-numbered on a tie. As 7.8
    /// orders it, each masked symbol is scored before format and version information are added,
    /// those areas (and the dark module) counting as light.
    func bestMask() -> Int {
        var best = (mask: 0, score: Int.max)
        for mask in 0..<8 {
            var candidate = self
            candidate.applyMask(mask)
            let score = candidate.penaltyScore()
            if score < best.score {
                best = (mask, score)
            }
        }
        return best.mask
    }

    /// The 15-bit format information (7.9.1): the level's two bits and the mask's three, a
    /// BCH(15,5) code with generator x^10 + x^8 + x^5 + x^4 + x^2 + x + 1 (0x537), xor 0x5412.
    static func formatBits(errorCorrection: QRCode.ErrorCorrection, mask: Int) -> Int {
        let data = errorCorrection.formatBits << 3 | mask
        var remainder = data
        for _ in 0..<10 {
            remainder = (remainder << 1) ^ ((remainder >> 9) * 0x537)
        }
        return (data << 10 | remainder) ^ 0x5412
    }

    /// Writes both copies of the format information (Figure 25) and the dark module.
    mutating func drawFormatInformation(errorCorrection: QRCode.ErrorCorrection, mask: Int) {
        let bits = Self.formatBits(errorCorrection: errorCorrection, mask: mask)
        func bit(_ index: Int) -> Bool { (bits >> index) & 1 == 1 }
        // Around the upper-left finder: bits 0-7 down column 8 (skipping the timing row), bits
        // 8-14 leftwards along row 8 (skipping the timing column).
        for index in 0..<6 {
            setFunction(x: 8, y: index, dark: bit(index))
        }
        setFunction(x: 8, y: 7, dark: bit(6))
        setFunction(x: 8, y: 8, dark: bit(7))
        setFunction(x: 7, y: 8, dark: bit(8))
        for index in 9..<15 {
            setFunction(x: 14 - index, y: 8, dark: bit(index))
        }
        // The second copy: bits 0-7 leftwards along row 8 from the right edge, bits 8-14 down
        // column 8 to the bottom edge.
        for index in 0..<8 {
            setFunction(x: size - 1 - index, y: 8, dark: bit(index))
        }
        for index in 8..<15 {
            setFunction(x: 8, y: size - 15 + index, dark: bit(index))
        }
        setFunction(x: 8, y: size - 8, dark: true)
    }

    /// Writes both copies of the 18-bit version information (7.10) from version 7: the version
    /// number and a BCH(18,6) code with generator x^12 + x^11 + x^10 + x^9 + x^8 + x^5 + x^2 + 1
    /// (0x1F25).
    mutating func drawVersionInformation() {
        guard version >= 7 else { return }
        var remainder = version
        for _ in 0..<12 {
            remainder = (remainder << 1) ^ ((remainder >> 11) * 0x1F25)
        }
        let bits = version << 12 | remainder
        for index in 0..<18 {
            let dark = (bits >> index) & 1 == 1
            let long = index / 3
            let short = size - 11 + index % 3
            setFunction(x: short, y: long, dark: dark)
            setFunction(x: long, y: short, dark: dark)
        }
    }
}
