/// The one error type of the Discovery module: what went wrong, Avahi's error code when Avahi
/// reported it, a readable message and the operation it happened in.
public struct DiscoveryError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public enum Code: String, Sendable {
        /// A `ServiceAnnouncement` breaks a DNS-SD rule (RFC 6763) and cannot be published.
        case invalidAnnouncement
        /// The Avahi client library reported an error (`avahiError` holds its `AVAHI_ERR_*`).
        case avahi
        /// The object was used out of order (started twice, started after `stop()`).
        case misuse
    }

    /// The kind of failure.
    public var code: Code
    /// Avahi's error code (`AVAHI_ERR_*`, negative) when Avahi reported the failure.
    public var avahiError: Int32?
    /// A human-readable description.
    public var message: String
    /// The operation or value the failure is about (for example `avahi_threaded_poll_new`).
    public var context: String

    /// Creates an error.
    public init(code: Code, avahiError: Int32? = nil, message: String, context: String) {
        self.code = code
        self.avahiError = avahiError
        self.message = message
        self.context = context
    }

    /// `context: message` with Avahi's code when there is one.
    public var description: String {
        if let avahiError {
            return "\(context): \(message) (avahi error \(avahiError))"
        }
        return "\(context): \(message)"
    }
}
