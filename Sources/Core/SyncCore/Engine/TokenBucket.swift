/// How many operations a terminal may send: a sustained rate and a burst on top of it.
public struct RateLimit: Equatable, Sendable {
    /// Operations per second a terminal may send for ever.
    public var operationsPerSecond: Double
    /// Operations a terminal may send at once after a quiet spell (the bucket's capacity).
    public var burst: Double

    /// A limit from its parts; both are at least 1.
    public init(operationsPerSecond: Double, burst: Double) {
        self.operationsPerSecond = max(1, operationsPerSecond)
        self.burst = max(1, burst)
    }

    /// 200 operations per second, bursts of 1,000: a busy till sends a few operations a second
    /// and a slave back from an outage sends its outbox at once, which the burst and a few
    /// seconds of retries cover, while a flood of thousands per second is refused.
    public static let `default` = RateLimit(operationsPerSecond: 200, burst: 1000)

    /// The same limit as an allowance of operations.
    public var allowance: Allowance { Allowance(perSecond: operationsPerSecond, capacity: burst) }
}

/// A quantity (bytes, snapshots, journal bytes) a terminal may use: `capacity` at once, given
/// back at `perSecond`. Unlike `RateLimit`, a rate below one per second is kept (one snapshot
/// every 15 s is 1/15 per second).
public struct Allowance: Equatable, Sendable {
    /// Units given back per second.
    public var perSecond: Double
    /// Units that may be used at once after a quiet spell (the bucket's capacity).
    public var capacity: Double

    /// An allowance from its parts: a rate above zero and a capacity of at least 1.
    public init(perSecond: Double, capacity: Double) {
        self.perSecond = max(1e-6, perSecond)
        self.capacity = max(1, capacity)
    }
}

/// A token bucket: `capacity` tokens, refilled at `perSecond`. `take` spends tokens only when
/// there are enough; `charge` spends them whatever is left (a cost known only afterwards), so
/// the bucket may owe tokens. Pure: the caller passes the time, in milliseconds.
public struct TokenBucket: Equatable, Sendable {
    /// What it gives and holds.
    public let allowance: Allowance
    /// Tokens left (fractional while refilling; negative while it owes).
    public private(set) var tokens: Double
    /// When `tokens` was last brought up to date.
    private var updatedMillis: Int64

    /// A full bucket at `now`.
    public init(allowance: Allowance, now: Int64) {
        self.allowance = allowance
        self.tokens = allowance.capacity
        self.updatedMillis = now
    }

    /// A full bucket of operations at `now`.
    public init(limit: RateLimit, now: Int64) {
        self.init(allowance: limit.allowance, now: now)
    }

    /// Takes one token at `now`; false when there was none. A clock that went back refills
    /// nothing.
    public mutating func take(now: Int64) -> Bool { take(1, now: now) }

    /// Takes `cost` tokens at `now`; false (and nothing taken) when there were fewer.
    public mutating func take(_ cost: Double, now: Int64) -> Bool {
        refill(now: now)
        guard tokens + Self.slack >= cost else { return false }
        tokens -= cost
        return true
    }

    /// What rounding may take from a refill (1/15 per second for 15 s is 0.999…): a bucket
    /// that short of a token holds it.
    private static let slack = 1e-9

    /// True when `cost` tokens could be taken at `now` (nothing is taken).
    public func holds(_ cost: Double, now: Int64) -> Bool {
        var copy = self
        copy.refill(now: now)
        return copy.tokens + Self.slack >= cost
    }

    /// Spends `cost` tokens at `now` even if fewer are left: the bucket then owes the rest.
    public mutating func charge(_ cost: Double, now: Int64) {
        refill(now: now)
        tokens -= cost
    }

    /// Milliseconds from `now` until the bucket is full again (0 when it is).
    public func millisUntilFull(now: Int64) -> Int64 { millisUntil(holding: allowance.capacity, now: now) }

    /// Milliseconds from `now` until the bucket holds `wanted` tokens (0 when it does; never
    /// more than until it is full).
    public func millisUntil(holding wanted: Double, now: Int64) -> Int64 {
        var copy = self
        copy.refill(now: now)
        let missing = min(wanted, allowance.capacity) - copy.tokens
        guard missing > Self.slack else { return 0 }
        return max(1, Int64((missing * 1000 / allowance.perSecond - 1e-6).rounded(.up)))
    }

    /// True when the bucket is full at `now`: forgetting it changes nothing.
    public func isFull(now: Int64) -> Bool { millisUntilFull(now: now) == 0 }

    private mutating func refill(now: Int64) {
        guard now > updatedMillis else { return }
        let elapsed = Double(now - updatedMillis)
        tokens = min(allowance.capacity, tokens + elapsed * allowance.perSecond / 1000)
        updatedMillis = now
    }
}
