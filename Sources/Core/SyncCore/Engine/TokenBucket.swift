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
}

/// A token bucket: `burst` tokens, one taken per operation, refilled at
/// `operationsPerSecond`. Pure: the caller passes the time, in milliseconds.
public struct TokenBucket: Equatable, Sendable {
    /// The limit it enforces.
    public let limit: RateLimit
    /// Tokens left (fractional while refilling).
    public private(set) var tokens: Double
    /// When `tokens` was last brought up to date.
    private var updatedMillis: Int64

    /// A full bucket at `now`.
    public init(limit: RateLimit, now: Int64) {
        self.limit = limit
        self.tokens = limit.burst
        self.updatedMillis = now
    }

    /// Takes one token at `now`; false when there was none. A clock that went back refills
    /// nothing.
    public mutating func take(now: Int64) -> Bool {
        refill(now: now)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    /// Milliseconds from `now` until the bucket is full again (0 when it is).
    public func millisUntilFull(now: Int64) -> Int64 {
        var copy = self
        copy.refill(now: now)
        let missing = limit.burst - copy.tokens
        guard missing > 0 else { return 0 }
        return max(1, Int64((missing * 1000 / limit.operationsPerSecond).rounded(.up)))
    }

    /// True when the bucket is full at `now`: forgetting it changes nothing.
    public func isFull(now: Int64) -> Bool { millisUntilFull(now: now) == 0 }

    private mutating func refill(now: Int64) {
        guard now > updatedMillis else { return }
        let elapsed = Double(now - updatedMillis)
        tokens = min(limit.burst, tokens + elapsed * limit.operationsPerSecond / 1000)
        updatedMillis = now
    }
}
