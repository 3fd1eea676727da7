extension QRMatrix {
    /// The penalty score of the symbol as it stands (ISO/IEC 18004:2015 7.8.3.1, Table 11):
    /// the sum of the four features, N1 = 3, N2 = 3, N3 = 40, N4 = 10. Lower is better.
    func penaltyScore() -> Int {
        var score = 0
        var column = [Bool](repeating: false, count: size)
        for line in 0..<size {
            let row = Array(modules[line * size..<(line + 1) * size])
            for index in 0..<size {
                column[index] = modules[index * size + line]
            }
            score += Self.runPenalty(row) + Self.runPenalty(column)
            score += Self.finderLikePenalty(row) + Self.finderLikePenalty(column)
        }
        return score + blockPenalty() + balancePenalty()
    }

    /// N1: "Adjacent modules in row/column in same color, No. of modules = (5 + i): N1 + i".
    static func runPenalty(_ line: [Bool]) -> Int {
        var score = 0
        var runLength = 0
        for (index, dark) in line.enumerated() {
            if index > 0 && dark == line[index - 1] {
                runLength += 1
            } else {
                score += runLength >= 5 ? runLength - 2 : 0
                runLength = 1
            }
        }
        return score + (runLength >= 5 ? runLength - 2 : 0)
    }

    /// N2: "Block of modules in same color, block size = m × n: N2 × (m-1) × (n-1)", counted as
    /// every 2 × 2 block of one colour (a larger block is the sum of its overlapping 2 × 2 ones).
    func blockPenalty() -> Int {
        var score = 0
        for y in 1..<size {
            for x in 1..<size {
                let dark = isDark(x: x, y: y)
                if dark == isDark(x: x - 1, y: y) && dark == isDark(x: x, y: y - 1) && dark == isDark(x: x - 1, y: y - 1) {
                    score += 3
                }
            }
        }
        return score
    }

    /// N3: "1 : 1 : 3 : 1 : 1 ratio (dark:light:dark:light:dark) pattern in row/column, preceded or
    /// followed by light area 4 modules wide". Outside the symbol counts as light; a pattern
    /// that counted is not searched again inside itself, one that did not is searched again
    /// from its centre.
    static func finderLikePenalty(_ line: [Bool]) -> Int {
        let pattern = [true, false, true, true, true, false, true]
        let count = line.count
        var score = 0
        var start = 0
        while start + pattern.count <= count {
            guard (0..<pattern.count).allSatisfy({ line[start + $0] == pattern[$0] }) else {
                start += 1
                continue
            }
            let end = start + pattern.count
            let lightBefore = !line[max(start - 4, 0)..<start].contains(true)
            let lightAfter = !line[end..<min(end + 4, count)].contains(true)
            if lightBefore || lightAfter {
                score += 40
                start = end
            } else {
                start += 4
            }
        }
        return score
    }

    /// N4: "Proportion of dark modules in entire symbol: 50 × (5 × k)% to 50 × (5 × (k + 1))%:
    /// N4 × k", that is 10 points for each full 5% the dark share lies away from 50%. Computed in
    /// binary floating point as the widely used encoders do, so symbols on a boundary score alike.
    func balancePenalty() -> Int {
        let darkCount = modules.reduce(0) { $0 + ($1 ? 1 : 0) }
        let percent = Double(darkCount) / Double(size * size) * 100
        return 10 * Int(abs(percent - 50) / 5)
    }
}
