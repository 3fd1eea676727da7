/// Why a text could not be made into a QR code.
public struct QRCodeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong, independent of the human-readable message.
    public enum Kind: String, Equatable, Sendable {
        /// The text needs more data bits than version 40 holds at the chosen error correction level.
        case textTooLong
        /// A forced mask was outside 0...7.
        case invalidMask
    }

    /// What went wrong.
    public let kind: Kind
    /// A sentence naming the problem.
    public let message: String

    /// Creates an error.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// `kind: message`.
    public var description: String { "\(kind.rawValue): \(message)" }
}
