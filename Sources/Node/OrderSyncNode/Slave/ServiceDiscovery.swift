import Discovery

/// What a node needs of DNS-SD: publish the master's service, browse for masters. Avahi in the
/// daemon; a node built without discovery (tests, a slave with `--master`) gets none.
/// Called on the node's event loop: every method but `stop` returns without waiting for the
/// daemon, which may hang.
public protocol ServiceDiscovery: AnyObject {
    /// Starts; events arrive on any thread through `report`. Throws when discovery cannot run
    /// at all (the node keeps working without it).
    func start(reporting report: @escaping @Sendable (DiscoveryEvent) -> Void) throws
    /// Publishes (or replaces) the service.
    func publish(_ announcement: ServiceAnnouncement)
    /// Withdraws the published service.
    func unpublish()
    /// Browses for services of `type`.
    func browse(type: String)
    /// Browses for `type` afresh: every service still announced is resolved again and reported
    /// found, whatever was resolved before.
    func rebrowse(type: String)
    /// Stops; no event is reported afterwards. May wait for the daemon: called once the node's
    /// loop has returned.
    func stop()
}

/// `ServiceDiscovery` through avahi-daemon. The Avahi client is made when discovery starts,
/// with the node's event handler.
public final class AvahiServiceDiscovery: ServiceDiscovery {
    private var avahi: AvahiDiscovery?

    /// Discovery that has not started yet.
    public init() {}

    /// Starts the Avahi client.
    public func start(reporting report: @escaping @Sendable (DiscoveryEvent) -> Void) throws {
        precondition(avahi == nil, "discovery started twice")
        let client = AvahiDiscovery(onEvent: report)
        avahi = client
        try client.start()
    }

    /// Publishes the service.
    public func publish(_ announcement: ServiceAnnouncement) { avahi?.publish(announcement) }

    /// Withdraws the service.
    public func unpublish() { avahi?.unpublish() }

    /// Browses for `type` (IPv4).
    public func browse(type: String) { avahi?.browse(type: type) }

    /// Restarts the browse for `type` and resolves what it finds anew.
    public func rebrowse(type: String) { avahi?.rebrowse(type: type) }

    /// Stops the Avahi client.
    public func stop() {
        avahi?.stop()
        avahi = nil
    }
}
