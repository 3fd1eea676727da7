import Discovery
import Foundation
import OrderSyncNode

/// DNS-SD inside one process: every node's ``BusDiscovery`` publishes its service on the bus
/// and browses it, as nodes on one LAN see each other through their avahi-daemons (a service
/// is resolved at 127.0.0.1 on the port it announces).
final class DiscoveryBus: @unchecked Sendable {
    private let lock = NSLock()
    private var services: [ObjectIdentifier: ResolvedService] = [:]
    private var browsers: [ObjectIdentifier: (type: String, report: @Sendable (DiscoveryEvent) -> Void)] = [:]

    /// A discovery for one node on this bus.
    func discovery() -> BusDiscovery { BusDiscovery(bus: self) }

    /// The services published now.
    var published: [ResolvedService] { lock.withLock { Array(services.values) } }

    fileprivate func publish(_ service: ResolvedService, from owner: ObjectIdentifier) {
        let targets = lock.withLock { () -> [@Sendable (DiscoveryEvent) -> Void] in
            services[owner] = service
            return browsers.values.filter { $0.type == service.type }.map(\.report)
        }
        for report in targets { report(.serviceFound(service)) }
    }

    fileprivate func unpublish(from owner: ObjectIdentifier) {
        let (gone, targets) = lock.withLock { () -> (ResolvedService?, [@Sendable (DiscoveryEvent) -> Void]) in
            guard let gone = services.removeValue(forKey: owner) else { return (nil, []) }
            return (gone, browsers.values.filter { $0.type == gone.type }.map(\.report))
        }
        guard let gone else { return }
        for report in targets { report(.serviceLost(name: gone.name, type: gone.type, domain: gone.domain)) }
    }

    fileprivate func browse(_ type: String, from owner: ObjectIdentifier, report: @escaping @Sendable (DiscoveryEvent) -> Void) {
        let found = lock.withLock { () -> [ResolvedService] in
            browsers[owner] = (type, report)
            return services.values.filter { $0.type == type }
        }
        for s in found { report(.serviceFound(s)) }
    }

    fileprivate func leave(_ owner: ObjectIdentifier) {
        unpublish(from: owner)
        lock.withLock { browsers[owner] = nil }
    }
}

/// One node's discovery on a ``DiscoveryBus``.
final class BusDiscovery: ServiceDiscovery, @unchecked Sendable {
    private let bus: DiscoveryBus
    private let lock = NSLock()
    private var report: (@Sendable (DiscoveryEvent) -> Void)?

    init(bus: DiscoveryBus) { self.bus = bus }

    func start(reporting report: @escaping @Sendable (DiscoveryEvent) -> Void) throws {
        lock.withLock { self.report = report }
        report(.daemonAvailable)
    }

    func publish(_ a: ServiceAnnouncement) {
        let service = ResolvedService(
            name: a.name, type: a.type, domain: "local", hostName: "\(a.name).local", address: "127.0.0.1", port: a.port,
            txt: Dictionary(a.txt, uniquingKeysWith: { _, last in last }), interfaceIndex: 1)
        bus.publish(service, from: ObjectIdentifier(self))
        lock.withLock { report }?(.published(name: a.name))
    }

    func unpublish() { bus.unpublish(from: ObjectIdentifier(self)) }

    func browse(type: String) {
        guard let report = lock.withLock({ report }) else { return }
        bus.browse(type, from: ObjectIdentifier(self), report: report)
    }

    func rebrowse(type: String) { browse(type: type) }

    func stop() {
        bus.leave(ObjectIdentifier(self))
        lock.withLock { report = nil }
    }
}
