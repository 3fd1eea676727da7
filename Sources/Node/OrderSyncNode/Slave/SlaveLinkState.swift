import EventLoopIO
import NodePolicy

/// The master a slave connects to.
struct LinkTarget: Equatable {
    /// Where it listens.
    var url: MasterURL
    /// Its DNS-SD instance name, when discovered.
    var serviceName: String?
}

/// Where a slave's link to its master is. Each case holds what exists in it and nothing else:
/// a link only while one is open, a retry timer only while waiting.
enum SlaveLinkState {
    /// No master to connect to (none found yet, or several stores to choose from).
    case idle
    /// Waiting for `retry` to try `target` again (or a newer one discovery found meanwhile).
    case waiting(LinkTarget, retry: TimerHandle)
    /// TCP connect and the opening handshake with `target`.
    case connecting(MasterLink, LinkTarget)
    /// Handshake done, hello sent, receiving the snapshot.
    case syncing(MasterLink, LinkTarget)
    /// Up to date; live operations flow (the transport's heartbeat watches the master).
    case live(MasterLink, LinkTarget)

    /// The open link, in the states that have one.
    var link: MasterLink? {
        switch self {
        case .idle, .waiting: return nil
        case .connecting(let l, _), .syncing(let l, _), .live(let l, _): return l
        }
    }

    /// The master tried, connected to, or waited for.
    var target: LinkTarget? {
        switch self {
        case .idle: return nil
        case .waiting(let t, _), .connecting(_, let t), .syncing(_, let t), .live(_, let t): return t
        }
    }

    /// True once the handshake is done (syncing or live).
    var isUp: Bool {
        switch self {
        case .syncing, .live: return true
        case .idle, .waiting, .connecting: return false
        }
    }

    /// The state's name, as status shows it.
    var name: SlaveStatus.LinkState {
        switch self {
        case .idle: return .idle
        case .waiting: return .waiting
        case .connecting: return .connecting
        case .syncing: return .syncing
        case .live: return .live
        }
    }
}
