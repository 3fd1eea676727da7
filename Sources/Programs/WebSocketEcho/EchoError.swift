/// The one error type of the echo tool: a bad command line or a run that could not complete.
struct EchoError: Error, CustomStringConvertible {
    /// A sentence naming the problem and the offending value.
    var message: String

    /// Creates an error.
    init(_ message: String) {
        self.message = message
    }

    /// The message.
    var description: String { message }
}
