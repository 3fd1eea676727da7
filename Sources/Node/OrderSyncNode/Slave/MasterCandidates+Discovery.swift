import Discovery
import NodePolicy

// The edge between discovery and `MasterCandidates`: Avahi's resolutions become plain
// `MasterCandidate` values.

extension MasterCandidate {
    /// The candidate of a resolved service, every field as it came.
    init(_ service: ResolvedService) {
        self.init(
            name: service.name, type: service.type, domain: service.domain, hostName: service.hostName,
            address: service.address, port: service.port, txt: service.txt, interfaceIndex: service.interfaceIndex)
    }
}

extension MasterCandidates {
    /// Records a resolution (see `found` on a candidate); true when it is new or changed.
    mutating func found(_ service: ResolvedService) -> Bool {
        found(MasterCandidate(service))
    }

    /// True when `service` announces a node id that is not the trusted master's.
    func isUntrusted(_ service: ResolvedService) -> Bool {
        isUntrusted(MasterCandidate(service))
    }
}
