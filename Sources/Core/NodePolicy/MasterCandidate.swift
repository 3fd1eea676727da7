/// A master's service as DNS-SD resolved it, as ``MasterCandidates`` judges it: a plain value
/// (the node maps the discovery layer's resolution into it).
public struct MasterCandidate: Hashable, Sendable {
    /// The service instance name.
    public var name: String
    /// The service type (`_ordersync._tcp`).
    public var type: String
    /// The domain (`local`).
    public var domain: String
    /// The host name the service resolved to.
    public var hostName: String
    /// The address, as text.
    public var address: String
    /// The port.
    public var port: UInt16
    /// The TXT record (`store=`, `epoch=`, `id=`, `previd=`, `path=`, `proto=`).
    public var txt: [String: String]
    /// The interface it was found on.
    public var interfaceIndex: Int32

    /// A candidate from its parts.
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
}
