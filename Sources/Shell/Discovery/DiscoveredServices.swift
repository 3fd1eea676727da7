/// One browse result as Avahi reports it: an instance seen on one interface over one protocol.
struct ServiceKey: Hashable, Sendable {
    var interfaceIndex: Int32
    var protocolFamily: Int32
    var name: String
    var type: String
    var domain: String

    var instance: ServiceInstance {
        ServiceInstance(name: name, type: type, domain: domain)
    }
}

/// A service instance independent of where it was seen.
struct ServiceInstance: Hashable, Sendable {
    var name: String
    var type: String
    var domain: String
}

/// What the browser has seen, deciding which browser and resolver events become
/// `serviceFound` and `serviceLost`. Pure: no Avahi calls.
///
/// An instance can be reported on several interfaces; it is lost only when the last of them
/// removes it. A resolution is reported when it is new or differs from the last one reported
/// for the same key (a master restarted on another port or address).
struct DiscoveredServices {
    private var present: Set<ServiceKey> = []
    private var resolutions: [ServiceKey: ResolvedService] = [:]
    /// Instances reported with `serviceFound` and not yet with `serviceLost`.
    private var reported: Set<ServiceInstance> = []

    /// Number of browse results currently present.
    var count: Int { present.count }

    /// The last resolution reported for `key`, if any.
    func resolution(for key: ServiceKey) -> ResolvedService? {
        resolutions[key]
    }

    /// The browser reported `key` (AVAHI_BROWSER_NEW).
    mutating func appeared(_ key: ServiceKey) {
        present.insert(key)
    }

    /// A resolver reported `service` for `key`. Returns true when it should be reported: the
    /// key is still present and the resolution is new or changed.
    mutating func resolved(_ key: ServiceKey, as service: ResolvedService) -> Bool {
        guard present.contains(key), resolutions[key] != service else {
            return false
        }
        resolutions[key] = service
        reported.insert(key.instance)
        return true
    }

    /// The browser removed `key` (AVAHI_BROWSER_REMOVE). Returns the instance when it is now
    /// gone from every interface and had been reported found, so `serviceLost` is due.
    mutating func disappeared(_ key: ServiceKey) -> ServiceInstance? {
        guard present.remove(key) != nil else {
            return nil
        }
        resolutions[key] = nil
        let instance = key.instance
        if present.contains(where: { $0.instance == instance }) {
            return nil
        }
        return reported.remove(instance)
    }

    /// Forgets every browse result and resolution of service type `type` without reporting them
    /// lost (a fresh browse starts): what is still announced is reported found again.
    mutating func forget(type: String) {
        present = present.filter { $0.type != type }
        resolutions = resolutions.filter { $0.key.type != type }
        reported = reported.filter { $0.type != type }
    }

    /// Forgets everything (the daemon went away) and returns the instances that had been
    /// reported found, so each can be reported lost once.
    mutating func removeAll() -> [ServiceInstance] {
        let lost = reported.sorted { ($0.name, $0.type, $0.domain) < ($1.name, $1.type, $1.domain) }
        present.removeAll()
        resolutions.removeAll()
        reported.removeAll()
        return lost
    }
}
