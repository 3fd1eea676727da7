/// The masters a slave may connect to, as DNS-SD reported them, and how the attempts on them
/// went: which one to try, which to try after a failure, and when to forget every resolution
/// and browse again. Pure: no clock, no Avahi; the slave feeds it discovery events, connect
/// results and the time, each service as a ``MasterCandidate`` (the node maps Discovery's
/// resolutions into it).
///
/// The choice is deterministic and never made by instance name: among the services of the
/// wanted store (of the replica's epoch when one announces it), the newest one seen whose address
/// has not failed since the last browse; when every one has failed, the newest one seen.
///
/// A master of another epoch (another database) is never taken in place of the replica's own
/// master just because that one is away (restarting, unplugged): once a master of the replica's
/// epoch was seen, another epoch is followed only from the host the slave last synced with (its
/// master's database replaced in place). A second master started by mistake, or a device posing
/// as one, on another host is never followed; the slave waits for its own master.
///
/// A paired slave knows its master's node ids (``trustedIds``): a master whose TXT record
/// announces an `id=` that is none of them (nor its `previd=`) is never tried, and one that
/// announces a trusted id is the replica's own master whatever its epoch and host (its database
/// was restored or replaced on the same key). A TXT record without `id=` is tried: the Noise
/// handshake decides.
public struct MasterCandidates: Sendable {
    /// How the choice came out.
    public enum Choice: Equatable, Sendable {
        /// No service seen.
        case none
        /// Services seen, none of `store`; `seen` lists the stores that are announced.
        case waitingForStore(store: String, seen: [String])
        /// Several stores and none chosen: never guess between them.
        case severalStores([String])
        /// The master to try. `rivals` lists every master of the store (`address:port|epoch`)
        /// when more than one epoch announces it, else is empty.
        case master(MasterCandidate, rivals: [String])
    }

    /// What to do after an attempt that failed.
    public enum Verdict: Equatable, Sendable {
        /// Another candidate has not failed since the last browse: try it soon.
        case tryAnother
        /// Every candidate failed since the last browse, or this one failed
        /// `failuresBeforeRebrowse` times in a row: forget every resolution and browse again.
        case rebrowse
        /// Wait the backoff and choose again (nothing to forget, or a browse was started less
        /// than `minimumRebrowseInterval` ago).
        case backOff
    }

    /// Failures in a row on one address after which the resolutions are forgotten.
    public static let failuresBeforeRebrowse = 3
    /// The most withdrawn services remembered.
    public static let maxWithdrawn = 256
    /// Shortest time between two fresh browses.
    public static let minimumRebrowseInterval: Duration = .seconds(4)

    /// No service seen yet.
    public init() {}

    /// Services by instance name, domain and interface, with the order in which they were seen.
    private var services: [String: (service: MasterCandidate, seen: Int)] = [:]
    private var seenCounter = 0
    /// Addresses (`address:port`) whose attempt failed since the last browse or success.
    private var failedSinceBrowse: Set<String> = []
    /// Failed attempts in a row per address, kept across browses until one succeeds.
    private var failuresInARow: [String: Int] = [:]
    private var lastRebrowse: Duration?
    /// Services whose goodbye came (by instance name, domain and interface): found again, they
    /// are a master that came back, not a stale address reported again.
    private var withdrawn: Set<String> = []
    /// Epochs announced for any store since this slave started (kept across browses).
    private var epochsSeen: Set<String> = []
    /// The host the last link came up with: the replica's master.
    public private(set) var home: String?
    /// Fresh browses started so far.
    public private(set) var rebrowses = 0
    /// The node ids of the master this slave paired with (current and earlier keys); empty
    /// while the slave is not paired (or pairing anew), when no service is refused by its id.
    public var trustedIds: Set<String> = []

    /// True when `service` announces a node id (`id=`) that is not the trusted master's, and no
    /// previous id (`previd=`) that is: the slave never connects to it.
    public func isUntrusted(_ service: MasterCandidate) -> Bool {
        guard !trustedIds.isEmpty, let id = service.txt["id"] else { return false }
        if trustedIds.contains(id) { return false }
        if let previous = service.txt["previd"], trustedIds.contains(previous) { return false }
        return true
    }

    /// True when `service` announces a trusted node id (`id=` or `previd=`).
    private func announcesTrustedId(_ service: MasterCandidate) -> Bool {
        guard !trustedIds.isEmpty else { return false }
        return [service.txt["id"], service.txt["previd"]].contains { $0.map(trustedIds.contains) ?? false }
    }

    /// The services known, oldest seen first.
    public var seen: [MasterCandidate] {
        services.values.sorted { $0.seen < $1.seen }.map(\.service)
    }

    /// Addresses that failed since the last browse.
    public var failedCount: Int { failedSinceBrowse.count }

    /// Records a resolution; returns true when it is new or differs from the one held. A
    /// service announced again after its goodbye (a master that restarted) has its address's
    /// failures wiped, so that it is tried at once; a stale address a fresh browse reports again
    /// keeps them.
    public mutating func found(_ service: MasterCandidate) -> Bool {
        let key = "\(service.name)|\(service.domain)|\(service.interfaceIndex)"
        let previous = services[key]?.service
        if withdrawn.remove(key) != nil {
            failuresInARow[Self.address(of: service)] = nil
            failedSinceBrowse.remove(Self.address(of: service))
        }
        seenCounter += 1
        services[key] = (service, seenCounter)
        if !isUntrusted(service), let epoch = service.txt["epoch"] { epochsSeen.insert(epoch) }
        return previous != service
    }

    /// Forgets the instance `name` in `domain` on every interface; returns true when it was held.
    public mutating func lost(name: String, domain: String) -> Bool {
        let gone = services.keys.filter { $0.hasPrefix("\(name)|\(domain)|") }
        for key in gone { services[key] = nil }
        // Bounded: a LAN full of goodbyes costs at most this much memory (and a fast retry).
        if withdrawn.count >= Self.maxWithdrawn { withdrawn.removeAll() }
        withdrawn.formUnion(gone)
        return !gone.isEmpty
    }

    /// The master to try for `store` (nil: the only store announced), keeping to `epoch` (the
    /// replica's) when a master of it is announced.
    public func choose(store: String?, epoch: String?) -> Choice {
        let pool: [(service: MasterCandidate, seen: Int)]
        switch candidatePool(store: store, epoch: epoch) {
        case .refused(let choice): return choice
        case .candidates(let found): pool = found
        }
        let untried = pool.filter { !failedSinceBrowse.contains(Self.address(of: $0.service)) }
        guard let best = (untried.isEmpty ? pool : untried).max(by: { $0.seen < $1.seen }) else { return .none }
        let admissible = services.values.filter { !isUntrusted($0.service) }
        let all = store.map { wanted in admissible.filter { $0.service.txt["store"] == wanted } } ?? admissible
        let epochs = Set(all.compactMap { $0.service.txt["epoch"] })
        let rivals = epochs.count > 1 ? Set(all.map { "\(Self.address(of: $0.service))|\($0.service.txt["epoch"] ?? "")" }).sorted() : []
        return .master(best.service, rivals: rivals)
    }

    /// True when `address:port` is the address of a service held.
    public func holds(address: String, port: UInt16) -> Bool {
        services.values.contains { $0.service.address == address && $0.service.port == port }
    }

    /// Failed attempts in a row on `address:port`.
    public func failures(address: String, port: UInt16) -> Int {
        failuresInARow["\(address):\(port)"] ?? 0
    }

    /// Candidates of `store` (and `epoch`) that are held now.
    public func candidateCount(store: String?, epoch: String?) -> Int {
        if case .candidates(let pool) = candidatePool(store: store, epoch: epoch) { return pool.count }
        return 0
    }

    /// An attempt on `address:port` failed at `now` (any fixed origin): what to do next.
    public mutating func failed(address: String, port: UInt16, store: String?, epoch: String?, now: Duration) -> Verdict {
        let key = "\(address):\(port)"
        failuresInARow[key, default: 0] += 1
        failedSinceBrowse.insert(key)
        guard case .candidates(let pool) = candidatePool(store: store, epoch: epoch), !pool.isEmpty else { return .backOff }
        let everyOneFailed = pool.allSatisfy { failedSinceBrowse.contains(Self.address(of: $0.service)) }
        guard everyOneFailed || failuresInARow[key, default: 0] >= Self.failuresBeforeRebrowse else { return .tryAnother }
        if let last = lastRebrowse, now - last < Self.minimumRebrowseInterval { return .backOff }
        return .rebrowse
    }

    /// The link to `address:port` came up: its failures are forgotten.
    public mutating func succeeded(address: String, port: UInt16) {
        home = address
        failuresInARow["\(address):\(port)"] = nil
        failedSinceBrowse.removeAll()
    }

    /// Forgets every resolution held (a fresh browse starts at `now`); failures in a row stay,
    /// so a stale address reported again is not tried at once.
    public mutating func forgetResolutions(now: Duration) {
        services.removeAll()
        failedSinceBrowse.removeAll()
        lastRebrowse = now
        rebrowses += 1
    }

    /// The services a choice is made among, or the choice when none can be.
    private enum Pool {
        case refused(Choice)
        case candidates([(service: MasterCandidate, seen: Int)])
    }

    private func candidatePool(store: String?, epoch: String?) -> Pool {
        // A master announcing another key's id is never a candidate (logged `master.untrusted`).
        let all = services.values.filter { !isUntrusted($0.service) }
        var pool = all
        if let wanted = store {
            pool = all.filter { $0.service.txt["store"] == wanted }
            if pool.isEmpty, !all.isEmpty {
                return .refused(.waitingForStore(store: wanted, seen: Set(all.compactMap { $0.service.txt["store"] }).sorted()))
            }
        } else {
            let stores = Set(all.compactMap { $0.service.txt["store"] })
            if stores.count > 1 { return .refused(.severalStores(stores.sorted())) }
        }
        // Two masters for one store (a second master started by mistake, or a device posing as
        // one): keep to the master whose database this replica comes from. While that master is
        // away, another epoch is taken only from the host this slave last synced with (its
        // database was replaced in place); until a master of the replica's epoch was seen at all
        // (a replica whose master was replaced while this slave was off), any master of the store.
        // A master announcing the trusted key's id is the replica's own master in any epoch, on
        // any host (its database restored or replaced): the handshake proves the key.
        if let known = epoch {
            let same = pool.filter { $0.service.txt["epoch"] == known || announcesTrustedId($0.service) }
            if !same.isEmpty {
                pool = same
            } else if epochsSeen.contains(known) {
                pool = pool.filter { $0.service.address == home }
            }
        }
        return .candidates(pool)
    }

    private static func address(of service: MasterCandidate) -> String {
        "\(service.address):\(service.port)"
    }
}
