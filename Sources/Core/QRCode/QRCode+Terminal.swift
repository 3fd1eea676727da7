extension QRCode {
    /// The width of the light margin around the symbol: "The quiet zone shall be 4X wide"
    /// (ISO/IEC 18004:2015 6.3.8).
    public static let quietZoneModules = 4

    /// The code for a terminal: two module rows per text line with Unicode half blocks
    /// (`▀`, `▄`, `█` and space), a quiet zone of 4 modules on every side, lines joined with "\n"
    /// (no trailing newline).
    ///
    /// Light modules, the quiet zone included, are drawn as blocks and dark modules as spaces.
    /// Terminals are mostly dark themed (light text on a dark background): there the blocks come
    /// out light and the spaces show the dark background, so the phone sees the standard
    /// polarity, dark modules on a light field, which every scanner reads, while inverted
    /// codes (light on dark) are refused by many scanner apps and camera apps. The light quiet
    /// zone also separates the code from the dark screen around it, which a scanner needs to
    /// find the finder patterns. On a light-themed terminal the same text shows inverted.
    public func terminalText() -> String {
        let extent = size + 2 * Self.quietZoneModules
        // Whether the module at (x, y) of the symbol with its quiet zone is drawn as a block;
        // the half row below the last one (`extent` is odd) is left as background.
        func isBlock(x: Int, y: Int) -> Bool {
            guard y < extent else { return false }
            let symbolX = x - Self.quietZoneModules
            let symbolY = y - Self.quietZoneModules
            guard symbolX >= 0 && symbolX < size && symbolY >= 0 && symbolY < size else { return true }
            return !isDark(x: symbolX, y: symbolY)
        }
        var lines: [String] = []
        lines.reserveCapacity((extent + 1) / 2)
        for top in stride(from: 0, to: extent, by: 2) {
            var line = ""
            line.unicodeScalars.reserveCapacity(extent)
            for x in 0..<extent {
                switch (isBlock(x: x, y: top), isBlock(x: x, y: top + 1)) {
                case (true, true): line.unicodeScalars.append("█")
                case (true, false): line.unicodeScalars.append("▀")
                case (false, true): line.unicodeScalars.append("▄")
                case (false, false): line.unicodeScalars.append(" ")
                }
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}
