import SecureLink

/// The master's pairing windows (Docs/SECURITY.md, "Pairing"): up to `maxOpen` codes open at
/// once, each with its terminal name and good for one pairing until it expires, and the wrong
/// tries of each source address. Wrong codes never close a window: an address that tried
/// `maxFailures` wrong codes is refused pairing for `lockoutMillis` (it only locks itself out).
/// Pure: the node passes the time (wall-clock milliseconds), the codes and the addresses.
public struct PairingWindows: Equatable {
    /// The most codes open at once (a pairing handshake tries its last message against each).
    public static let maxOpen = 8
    /// Wrong codes one address may try before it is locked out.
    public static let maxFailures = 5
    /// How long a locked-out address is refused pairing; also how long a wrong try is remembered.
    public static let lockoutMillis: Int64 = 300_000
    /// The longest (and default) time a window stays open.
    static let maxValidSeconds = 600
    /// The most addresses whose tries are remembered (the oldest are forgotten first).
    static let maxTrackedAddresses = 1024

    /// An open window.
    public struct Open: Equatable {
        /// The code a terminal must know.
        public var code: PairingCode
        /// The name the operator gave the terminal to pair, if any.
        public var name: String?
        /// When it opened, wall-clock milliseconds.
        public var openedAtMillis: Int64
        /// When it closes, wall-clock milliseconds.
        public var expiresAtMillis: Int64
        /// Whether the terminal pairing with it votes in a promotion (false: a handheld,
        /// `ordersync pair --handheld`).
        public var voter = true
    }

    /// The wrong tries of one source address.
    struct Tries: Equatable {
        /// Wrong codes since the last lockout (or since the tries were forgotten).
        public var failures = 0
        /// The last wrong try.
        var lastMillis: Int64
        /// Refused pairing until then, if locked out.
        var lockedUntilMillis: Int64?
    }

    /// What a wrong code did to its address.
    public enum FailureOutcome: Equatable {
        /// Counted; this many tries remain before the address is locked out.
        case counted(remaining: Int)
        /// It was the last try: the address is refused pairing until then.
        case lockedOut(untilMillis: Int64)
    }

    /// The open windows, oldest first.
    public private(set) var open: [Open] = []
    /// How the last window to close closed, for status (`.closed` when none closed yet).
    private(set) var lastClosed = PairingWindowStatus.State.closed
    /// The terminal that paired with the last window used.
    private(set) var lastTerminal: String?
    /// Each address's wrong tries.
    private(set) var tries: [String: Tries] = [:]

    /// No window open and no tries remembered.
    public init() {}

    /// Opens one more window for `code`, valid for `validForSeconds` (clamped to 1...600) from
    /// `now`; nil when `maxOpen` are open already.
    @discardableResult
    public mutating func open(code: PairingCode, name: String?, validForSeconds: Int, now: Int64, voter: Bool = true) -> Open? {
        expire(now: now)
        guard open.count < Self.maxOpen else { return nil }
        let seconds = min(max(validForSeconds, 1), Self.maxValidSeconds)
        var window = Open(code: code, name: name, openedAtMillis: now, expiresAtMillis: now + Int64(seconds) * 1000)
        window.voter = voter
        open.append(window)
        return window
    }

    /// Closes the windows whose code is `codeOrName` (as typed: case, dashes and look-alikes
    /// ignored) or whose name is it; returns them.
    public mutating func cancel(_ codeOrName: String, now: Int64) -> [Open] {
        expire(now: now)
        let code = try? PairingCode(parsing: codeOrName)
        let cancelled = open.filter { $0.code == code || $0.name == codeOrName }
        guard !cancelled.isEmpty else { return [] }
        open.removeAll { $0.code == code || $0.name == codeOrName }
        lastClosed = .closed
        return cancelled
    }

    /// Closes every window (the operator's `DELETE /v1/pairing`); returns them.
    @discardableResult
    public mutating func closeAll() -> [Open] {
        let closed = open
        open = []
        if !closed.isEmpty { lastClosed = .closed }
        return closed
    }

    /// Closes the windows past their expiry at `now`; returns them.
    @discardableResult
    public mutating func expire(now: Int64) -> [Open] {
        let expired = open.filter { now >= $0.expiresAtMillis }
        guard !expired.isEmpty else { return [] }
        open.removeAll { now >= $0.expiresAtMillis }
        lastClosed = .expired
        return expired
    }

    /// The windows open at `now`, oldest first (expiring those whose time is up).
    public mutating func openWindows(now: Int64) -> [Open] {
        expire(now: now)
        return open
    }

    /// The earliest expiry of an open window.
    public var nextExpiryMillis: Int64? { open.map(\.expiresAtMillis).min() }

    /// Whether `address` is refused pairing at `now`.
    public func isLockedOut(_ address: String, now: Int64) -> Bool {
        guard let until = tries[address]?.lockedUntilMillis else { return false }
        return now < until
    }

    /// A pairing handshake from `address` failed on its last message (a wrong code, or no code
    /// open, or the address was locked out: the peer cannot tell these apart, and each counts).
    public mutating func recordFailure(address: String, now: Int64) -> FailureOutcome {
        forget(now: now)
        var t = tries[address] ?? Tries(lastMillis: now)
        if let until = t.lockedUntilMillis, now < until { return .lockedOut(untilMillis: until) }
        t.lockedUntilMillis = nil
        t.failures += 1
        t.lastMillis = now
        if t.failures >= Self.maxFailures {
            t.failures = 0
            t.lockedUntilMillis = now + Self.lockoutMillis
        }
        tries[address] = t
        if let until = t.lockedUntilMillis { return .lockedOut(untilMillis: until) }
        return .counted(remaining: Self.maxFailures - t.failures)
    }

    /// Forgets tries older than `lockoutMillis` and lockouts that ended; past
    /// `maxTrackedAddresses`, the addresses tried longest ago.
    private mutating func forget(now: Int64) {
        tries = tries.filter { _, t in
            if let until = t.lockedUntilMillis { return now < until }
            return now - t.lastMillis < Self.lockoutMillis
        }
        while tries.count >= Self.maxTrackedAddresses, let oldest = tries.min(by: { $0.value.lastMillis < $1.value.lastMillis }) {
            tries[oldest.key] = nil
        }
    }

    /// A terminal completed the pairing handshake with `code`: the window it used, now closed
    /// (single use), or nil when that window is no longer open.
    public mutating func complete(code: PairingCode, terminal: String, now: Int64) -> Open? {
        expire(now: now)
        guard let index = open.firstIndex(where: { $0.code == code }) else { return nil }
        let window = open.remove(at: index)
        lastClosed = .used
        lastTerminal = terminal
        return window
    }

    /// The addresses refused pairing at `now`.
    public func lockedOut(now: Int64) -> Int {
        tries.values.filter { ($0.lockedUntilMillis ?? 0) > now }.count
    }

    /// The windows as status shows them: open while any is, with the soonest to expire.
    public func status(now: Int64) -> PairingWindowStatus {
        guard let next = open.min(by: { $0.expiresAtMillis < $1.expiresAtMillis }) else {
            return PairingWindowStatus(
                state: lastClosed, name: lastClosed == .used ? lastTerminal : nil, openCodes: 0,
                lockedOutAddresses: lockedOut(now: now))
        }
        return PairingWindowStatus(
            state: .open, name: next.name, expiresAtMillis: next.expiresAtMillis, openCodes: open.count,
            lockedOutAddresses: lockedOut(now: now))
    }
}

/// The pairing windows in a master's status.
public struct PairingWindowStatus: Sendable, Equatable {
    /// Where pairing stands.
    public enum State: String, Sendable {
        /// None open (none opened yet, or the last ones closed by the operator).
        case closed
        /// At least one code is open: a terminal may pair with it.
        case open
        /// None open; the last one closed when a terminal paired with it.
        case used
        /// None open; the last one closed because it was not used in time.
        case expired
    }

    /// Where it stands.
    public var state: State
    /// Open: the name the terminal of the code closing soonest will get, if the operator gave
    /// one; used: the terminal that paired.
    public var name: String?
    /// Open: when the code closing soonest closes, wall-clock milliseconds.
    public var expiresAtMillis: Int64?
    /// How many codes are open.
    public var openCodes: Int
    /// How many source addresses are refused pairing for too many wrong codes.
    public var lockedOutAddresses: Int

    /// A status from its fields.
    public init(
        state: State, name: String? = nil, expiresAtMillis: Int64? = nil, openCodes: Int = 0, lockedOutAddresses: Int = 0
    ) {
        self.state = state
        self.name = name
        self.expiresAtMillis = expiresAtMillis
        self.openCodes = openCodes
        self.lockedOutAddresses = lockedOutAddresses
    }
}
