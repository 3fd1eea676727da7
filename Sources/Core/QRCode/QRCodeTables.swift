/// The per-version numbers of ISO/IEC 18004:2015 (Table 9, Annex E) and the final codeword
/// sequence built from them (7.5, 7.6).
enum QRCodeTables {
    /// Error correction codewords per block, by level (L, M, Q, H) and version (index 0 unused).
    static let eccCodewordsPerBlock: [[Int]] = [
        [
            0, 7, 10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30, 22, 24, 28, 30, 28, 28, 28, 28, 30, 30, 26, 28, 30, 30, 30, 30, 30,
            30, 30, 30, 30, 30, 30, 30, 30, 30,
        ],
        [
            0, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26, 26, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28,
            28, 28, 28, 28, 28, 28, 28, 28, 28,
        ],
        [
            0, 13, 22, 18, 26, 18, 24, 18, 22, 20, 24, 28, 26, 24, 20, 30, 24, 28, 28, 26, 30, 28, 30, 30, 30, 30, 28, 30, 30, 30, 30, 30,
            30, 30, 30, 30, 30, 30, 30, 30, 30,
        ],
        [
            0, 17, 28, 22, 16, 22, 28, 26, 26, 24, 28, 24, 28, 22, 24, 24, 30, 28, 28, 26, 28, 30, 24, 30, 30, 30, 30, 30, 30, 30, 30, 30,
            30, 30, 30, 30, 30, 30, 30, 30, 30,
        ],
    ]

    /// Error correction blocks, by level (L, M, Q, H) and version (index 0 unused).
    static let blockCounts: [[Int]] = [
        [
            0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 6, 6, 6, 6, 7, 8, 8, 9, 9, 10, 12, 12, 12, 13, 14, 15, 16, 17, 18, 19, 19, 20, 21,
            22, 24, 25,
        ],
        [
            0, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16, 17, 17, 18, 20, 21, 23, 25, 26, 28, 29, 31, 33, 35, 37, 38,
            40, 43, 45, 47, 49,
        ],
        [
            0, 1, 1, 2, 2, 4, 4, 6, 6, 8, 8, 8, 10, 12, 16, 12, 17, 16, 18, 21, 20, 23, 23, 25, 27, 29, 34, 34, 35, 38, 40, 43, 45, 48, 51,
            53, 56, 59, 62, 65, 68,
        ],
        [
            0, 1, 1, 2, 4, 4, 4, 5, 6, 8, 8, 11, 11, 16, 16, 18, 16, 19, 21, 25, 25, 25, 34, 30, 32, 35, 37, 40, 42, 45, 48, 51, 54, 57, 60,
            63, 66, 70, 74, 77, 81,
        ],
    ]

    /// Modules per side of a version: "Version 1 ... 21 × 21 modules ... Version 40 ... 177 × 177,
    /// i.e. increasing in steps of four modules per side up to Version 40" (5.3.1).
    static func size(version: Int) -> Int { 17 + 4 * version }

    /// All codewords of a version (Table 1, "total number of codewords"): the modules left once
    /// the function patterns, format and version information are taken, divided by 8.
    static func totalCodewordCount(version: Int) -> Int {
        let size = size(version: version)
        // Finders with separators and format information: 3 * 64 + 31; timing: 2 * (size - 16).
        var modules = size * size - 3 * 64 - 31 - 2 * (size - 16)
        if version >= 2 {
            let alignmentCount = alignmentCenters(version: version).count
            // Each alignment pattern is 25 modules; those on the timing lines share 5 with them.
            modules -= 25 * (alignmentCount * alignmentCount - 3) - 10 * (alignmentCount - 2)
        }
        if version >= 7 {
            modules -= 36
        }
        return modules / 8
    }

    /// The data codewords of a version at a level (Table 7).
    static func dataCodewordCount(version: Int, errorCorrection: QRCode.ErrorCorrection) -> Int {
        let level = errorCorrection.tableIndex
        return totalCodewordCount(version: version) - eccCodewordsPerBlock[level][version] * blockCounts[level][version]
    }

    /// The row and column coordinates of the alignment pattern centres (Annex E, Table E.1): 6,
    /// then evenly spaced (even steps) up to `size - 7`.
    static func alignmentCenters(version: Int) -> [Int] {
        guard version >= 2 else { return [] }
        let count = version / 7 + 2
        let last = size(version: version) - 7
        // The spacing of Table E.1: the even step that spreads `count - 1` gaps over 6...last,
        // rounded up, the first gap taking what is left over.
        let step = (version * 8 + count * 3 + 5) / (count * 4 - 4) * 2
        return [6] + (0..<count - 1).reversed().map { last - $0 * step }
    }

    /// The final sequence (7.6): the data codewords split into blocks (the shorter blocks first),
    /// each given its Reed-Solomon error correction codewords, then "the data codewords from each
    /// block in turn ... followed by the error correction codewords from each block in turn".
    static func interleavedCodewords(data: [UInt8], version: Int, errorCorrection: QRCode.ErrorCorrection) -> [UInt8] {
        let level = errorCorrection.tableIndex
        let blockCount = blockCounts[level][version]
        let eccLength = eccCodewordsPerBlock[level][version]
        let total = totalCodewordCount(version: version)
        precondition(data.count == total - blockCount * eccLength, "\(data.count) data codewords for version \(version)")
        let longBlockCount = total % blockCount
        let shortDataLength = total / blockCount - eccLength
        let encoder = ReedSolomonEncoder(degree: eccLength)
        var dataBlocks: [ArraySlice<UInt8>] = []
        var eccBlocks: [[UInt8]] = []
        var start = 0
        for block in 0..<blockCount {
            let length = shortDataLength + (block >= blockCount - longBlockCount ? 1 : 0)
            let blockData = data[start..<start + length]
            dataBlocks.append(blockData)
            eccBlocks.append(encoder.remainder(of: blockData))
            start += length
        }
        var result: [UInt8] = []
        result.reserveCapacity(total)
        for index in 0...shortDataLength {
            for block in dataBlocks where index < block.count {
                result.append(block[block.startIndex + index])
            }
        }
        for index in 0..<eccLength {
            for block in eccBlocks {
                result.append(block[index])
            }
        }
        return result
    }
}
