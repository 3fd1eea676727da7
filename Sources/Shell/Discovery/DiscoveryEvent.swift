/// What the Avahi publisher and browser report. Delivered on Avahi's thread: handlers copy the
/// value out and wake their own event loop.
public enum DiscoveryEvent: Sendable, Equatable {
    /// The client is connected to a running avahi-daemon.
    case daemonAvailable
    /// avahi-daemon (or the D-Bus system bus) cannot be reached; the client keeps waiting for
    /// it and reconnects on its own. Followed by `serviceLost` for every service found so far.
    case daemonUnavailable(reason: String)
    /// The announcement is registered on the network under `name`.
    case published(name: String)
    /// Another responder owns `old`; the service is being registered again as `new`.
    case nameCollision(old: String, new: String)
    /// The announcement could not be registered (invalid, or rejected by avahi-daemon).
    case publishFailed(reason: String)
    /// A service was resolved, or its resolution (address, port, TXT) changed.
    case serviceFound(ResolvedService)
    /// A service instance left the network (on every interface it was seen on).
    case serviceLost(name: String, type: String, domain: String)
    /// Browsing for a service type failed; it is retried after the next reconnection.
    case browseFailed(reason: String)
}
