/// A service instance found by browsing and resolved to an address, a port and TXT data.
public struct ResolvedService: Hashable, Sendable {
    /// The instance name, for example "Front Counter" or "Front Counter #2".
    public var name: String
    /// The service type, for example `_pos._tcp`.
    public var type: String
    /// The domain it was found in, normally `local`.
    public var domain: String
    /// The target host of its SRV record, for example `h1.local`.
    public var hostName: String
    /// The resolved address in numeric form (`10.231.7.1`).
    public var address: String
    /// The port from the SRV record.
    public var port: UInt16
    /// TXT entries; a key present without `=` maps to an empty string. Keys are as published;
    /// per RFC 6763 6.4 compare them case-insensitively (see `txtValue(forKey:)`).
    public var txt: [String: String]
    /// The index of the network interface the service was found on.
    public var interfaceIndex: Int32

    /// Creates a resolved service.
    public init(
        name: String, type: String, domain: String, hostName: String, address: String,
        port: UInt16, txt: [String: String], interfaceIndex: Int32
    ) {
        self.name = name
        self.type = type
        self.domain = domain
        self.hostName = hostName
        self.address = address
        self.port = port
        self.txt = txt
        self.interfaceIndex = interfaceIndex
    }

    /// The value of TXT key `key`, compared case-insensitively.
    ///
    /// RFC 6763 6.4: "Case is ignored when interpreting a key, so "papersize=A4",
    /// "PAPERSIZE=A4", and "Papersize=A4" are all identical."
    public func txtValue(forKey key: String) -> String? {
        if let exact = txt[key] {
            return exact
        }
        let lowered = key.lowercased()
        return txt.first(where: { $0.key.lowercased() == lowered })?.value
    }
}
