/// A DNS-SD service instance to publish: `<name>.<type>.local` with an SRV record pointing at
/// this host's `port` and a TXT record made of `txt` key/value pairs.
public struct ServiceAnnouncement: Sendable {
    /// The instance name shown to users, for example "Front Counter". Avahi may publish it
    /// under another name after a collision (see `DiscoveryEvent.nameCollision`).
    public var name: String
    /// The service type, `_service._tcp` or `_service._udp`.
    public var type: String
    /// The TCP or UDP port the service listens on.
    public var port: UInt16
    /// TXT record entries in order, each published as `key=value`.
    public var txt: [(String, String)]

    /// Creates an announcement; `type` defaults to StorePOS's `_pos._tcp`.
    public init(name: String, type: String = "_pos._tcp", port: UInt16, txt: [(String, String)] = []) {
        self.name = name
        self.type = type
        self.port = port
        self.txt = txt
    }

    /// Checks the announcement against the DNS-SD rules Avahi would otherwise reject it for,
    /// so a bad `--name` is reported before anything is sent. Throws `DiscoveryError` with
    /// code `.invalidAnnouncement` naming the rule.
    public func validate() throws {
        try Self.validateInstanceName(name)
        try Self.validateServiceType(type)
        if port == 0 {
            throw invalid("port 0 cannot be announced", context: "port")
        }
        _ = try TXTRecord.encode(txt)
    }

    static func validateInstanceName(_ name: String) throws {
        // RFC 6763 4.1.1: "The <Instance> portion of the Service Instance Name is a
        // user-friendly name consisting of arbitrary Net-Unicode text [RFC5198]. It MUST NOT
        // contain ASCII control characters (byte values 0x00-0x1F and 0x7F) [RFC20] but
        // otherwise is allowed to contain any characters, without restriction, including
        // spaces, uppercase, lowercase, punctuation -- including dots -- accented characters,
        // non-Roman text, and anything else that may be represented using Net-Unicode."
        // ... "must be no more than 63 octets of UTF-8 text" (a DNS label).
        if name.isEmpty {
            throw invalid("the instance name is empty", context: "name")
        }
        if name.utf8.count > 63 {
            throw invalid(
                "the instance name is \(name.utf8.count) bytes of UTF-8; at most 63 are allowed",
                context: "name")
        }
        if name.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw invalid("the instance name contains an ASCII control character", context: "name")
        }
    }

    static func validateServiceType(_ type: String) throws {
        // RFC 6763 7: "The first label of the pair is an underscore character followed by the
        // Service Name [RFC6335]. ... The second label is either "_tcp" (for application
        // protocols that run over TCP) or "_udp" (for all others)."
        let labels = type.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count == 2, labels[1] == "_tcp" || labels[1] == "_udp", labels[0].first == "_" else {
            throw invalid(
                "service type \"\(type)\" is not of the form _name._tcp or _name._udp",
                context: "type")
        }
        // RFC 6335 5.1: "Valid service names ... MUST be at least 1 character and no more than
        // 15 characters long; MUST contain only US-ASCII letters 'A' - 'Z' and 'a' - 'z',
        // digits '0' - '9', and hyphens ('-', ASCII 0x2D or decimal 45); MUST contain at
        // least one letter ('A' - 'Z' or 'a' - 'z'); MUST NOT begin or end with a hyphen;
        // hyphens MUST NOT be adjacent to other hyphens."
        let service = labels[0].dropFirst()
        let isAllowed: (Character) -> Bool = { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
        guard (1...15).contains(service.count), service.allSatisfy(isAllowed),
            service.contains(where: { $0.isASCII && $0.isLetter }),
            service.first != "-", service.last != "-", !service.contains("--")
        else {
            throw invalid("\"\(service)\" is not a valid service name (RFC 6335 5.1)", context: "type")
        }
    }
}

func invalid(_ message: String, context: String) -> DiscoveryError {
    DiscoveryError(code: .invalidAnnouncement, message: message, context: context)
}
