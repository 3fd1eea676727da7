/// A QR code symbol (ISO/IEC 18004, model 2, versions 1 to 40) for one text.
///
/// The text is encoded as one segment in the most compact mode that holds all of it (numeric,
/// alphanumeric, else the UTF-8 bytes in byte mode), in the smallest version that fits at the
/// chosen error correction level. Pure: no I/O; the same input always gives the same symbol.
///
/// ```swift
/// let code = try QRCode(encoding: "7KQ4-M2XD-9HZC-B0RT")
/// print(code.terminalText())
/// ```
public struct QRCode: Sendable, Equatable {
    /// The error correction level: how much of the symbol may be damaged and still decode.
    public enum ErrorCorrection: Sendable, CaseIterable {
        /// Level L: about 7% of the codewords can be restored.
        case low
        /// Level M: about 15% of the codewords can be restored.
        case medium
        /// Level Q: about 25% of the codewords can be restored.
        case quartile
        /// Level H: about 30% of the codewords can be restored.
        case high
    }

    /// The version, 1...40: the symbol is `17 + 4 * version` modules per side.
    public let version: Int
    /// Modules per side.
    public let size: Int
    /// The data mask pattern applied, 0...7.
    public let mask: Int
    /// The error correction level the symbol was made with.
    public let errorCorrection: ErrorCorrection
    /// The modules row by row, `true` for dark.
    private let modules: [Bool]

    /// Whether the module in column `x` and row `y` (both from the top left, 0-based) is dark.
    ///
    /// - Precondition: `0 <= x < size` and `0 <= y < size`.
    public func isDark(x: Int, y: Int) -> Bool {
        precondition(x >= 0 && x < size && y >= 0 && y < size, "module (\(x), \(y)) outside a \(size)x\(size) symbol")
        return modules[y * size + x]
    }

    /// Encodes `text` in the smallest version that holds it at `errorCorrection`.
    ///
    /// - Parameters:
    ///   - text: the text; digits only use numeric mode, `0-9 A-Z space $ % * + - . / :` only use
    ///     alphanumeric mode, anything else its UTF-8 bytes in byte mode (without an ECI header).
    ///   - errorCorrection: the error correction level.
    ///   - mask: a data mask pattern 0...7 to force, or `nil` for the one with the lowest
    ///     penalty score (ISO/IEC 18004:2015 7.8.3).
    /// - Throws: ``QRCodeError`` when the text does not fit in version 40 or the mask is not 0...7.
    public init(encoding text: String, errorCorrection: ErrorCorrection = .medium, mask: Int? = nil) throws(QRCodeError) {
        if let mask, !(0...7).contains(mask) {
            throw QRCodeError(.invalidMask, "mask \(mask) is not one of the eight patterns 0...7")
        }
        let segment = QRSegment(text: text)
        guard let version = segment.smallestVersion(errorCorrection: errorCorrection) else {
            throw QRCodeError(
                .textTooLong,
                "\(segment.characterCount) characters in \(segment.mode) mode exceed version 40 at level \(errorCorrection.letter)")
        }
        let dataCodewords = segment.dataCodewords(version: version, errorCorrection: errorCorrection)
        let codewords = QRCodeTables.interleavedCodewords(data: dataCodewords, version: version, errorCorrection: errorCorrection)
        var matrix = QRMatrix(version: version)
        matrix.placeCodewords(codewords)
        let chosenMask = mask ?? matrix.bestMask()
        matrix.applyMask(chosenMask)
        matrix.drawFormatInformation(errorCorrection: errorCorrection, mask: chosenMask)
        matrix.drawVersionInformation()
        self.version = version
        self.size = matrix.size
        self.mask = chosenMask
        self.errorCorrection = errorCorrection
        self.modules = matrix.modules
    }
}

extension QRCode.ErrorCorrection {
    /// The letter the standard names the level by: L, M, Q or H.
    public var letter: String {
        switch self {
        case .low: "L"
        case .medium: "M"
        case .quartile: "Q"
        case .high: "H"
        }
    }

    /// The two error correction bits of the format information (ISO/IEC 18004:2015 Table 12):
    /// "L 01, M 00, Q 11, H 10".
    var formatBits: Int {
        switch self {
        case .low: 0b01
        case .medium: 0b00
        case .quartile: 0b11
        case .high: 0b10
        }
    }

    /// The row of this level in the per-version tables.
    var tableIndex: Int {
        switch self {
        case .low: 0
        case .medium: 1
        case .quartile: 2
        case .high: 3
        }
    }
}
