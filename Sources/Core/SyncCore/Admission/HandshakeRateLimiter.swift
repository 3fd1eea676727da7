/// Handshake work admitted per source address and in total, with token buckets: each secure
/// handshake the master starts (the X25519 work of its first message) takes a token from its
/// address's bucket and from the total one, whether it then succeeds, fails or is abandoned.
/// Over either limit the connection is refused before any of that work. Pure: the caller
/// passes the time, in milliseconds.
public struct HandshakeRateLimiter: Sendable {
    /// The limit of one source address.
    public let perAddress: RateLimit
    /// The limit of all addresses together.
    public let total: RateLimit
    /// Addresses tracked beyond which full buckets are forgotten at the next handshake.
    public let trackedAddressesBeforePruning: Int

    private var buckets: [String: TokenBucket] = [:]
    private var totalBucket: TokenBucket

    /// Why a handshake may not start.
    public enum Refusal: Equatable, Sendable {
        /// Its address used its handshakes.
        case address
        /// All addresses together used theirs.
        case total
    }

    /// Full buckets at `now`.
    public init(perAddress: RateLimit, total: RateLimit, now: Int64, trackedAddressesBeforePruning: Int = 4096) {
        self.perAddress = perAddress
        self.total = total
        self.trackedAddressesBeforePruning = trackedAddressesBeforePruning
        self.totalBucket = TokenBucket(limit: total, now: now)
    }

    /// Addresses with a bucket that is not full (or not forgotten yet).
    public var trackedAddresses: Int { buckets.count }

    /// Whether `host` has a handshake left at `now`, taking nothing: a connection from an
    /// address over its limit is refused at accept, before the WebSocket upgrade.
    public func hasHandshakeLeft(_ host: String, now: Int64) -> Bool {
        guard var bucket = buckets[host] else { return true }
        return bucket.take(now: now)
    }

    /// Takes a handshake for `host` at `now`: nil when it may start, else why not. A try
    /// refused in total still takes its address's token (its upgrade was served): an address
    /// that keeps trying while every handshake is taken runs out, and is then refused at
    /// accept, before its upgrade, however many addresses try. The total bucket gives only to
    /// handshakes that start.
    public mutating func begin(_ host: String, now: Int64) -> Refusal? {
        var address = buckets[host] ?? TokenBucket(limit: perAddress, now: now)
        guard address.take(now: now) else { return .address }
        if buckets[host] == nil && buckets.count >= trackedAddressesBeforePruning { prune(now: now) }
        buckets[host] = address
        guard totalBucket.take(now: now) else { return .total }
        return nil
    }

    /// Forgets the addresses whose bucket is full at `now` (forgetting them changes nothing).
    public mutating func prune(now: Int64) {
        buckets = buckets.filter { !$0.value.isFull(now: now) }
    }
}
