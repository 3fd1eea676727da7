import SecureLink

/// The master's pairing window (Docs/SECURITY.md, "Pairing"): one code, good for one pairing
/// until it expires, closed after `maxFailures` wrong tries. Pure: the node passes the time
/// (wall-clock milliseconds) and the code.
struct PairingWindow: Equatable {
    /// Wrong codes a window takes before it closes.
    static let maxFailures = 5
    /// The longest (and default) time a window stays open.
    static let maxValidSeconds = 600

    /// An open window.
    struct Open: Equatable {
        /// The code a terminal must know.
        var code: PairingCode
        /// The name the operator gave the terminal to pair, if any.
        var name: String?
        /// When it opened and when it closes, wall-clock milliseconds.
        var openedAtMillis: Int64
        var expiresAtMillis: Int64
        /// Wrong codes tried so far.
        var failures = 0
    }

    /// Where the window stands.
    enum State: Equatable {
        /// Never opened, closed by the operator, or replaced.
        case closed
        case open(Open)
        /// A terminal paired with it (single use).
        case used(terminal: String)
        /// Closed after `maxFailures` wrong codes.
        case exhausted
        /// Not used in time.
        case expired
    }

    /// What a wrong code did.
    enum FailureOutcome: Equatable {
        /// It was for a window no longer open (replaced, used, expired): nothing counted.
        case ignored
        /// Counted; this many tries remain.
        case counted(remaining: Int)
        /// It was the last try: the window is closed.
        case exhausted
    }

    private(set) var state = State.closed

    /// Opens a window for `code` (replacing any other), valid for `validForSeconds` (clamped
    /// to 1...600) from `now`.
    @discardableResult
    mutating func open(code: PairingCode, name: String?, validForSeconds: Int, now: Int64) -> Open {
        let seconds = min(max(validForSeconds, 1), Self.maxValidSeconds)
        let window = Open(code: code, name: name, openedAtMillis: now, expiresAtMillis: now + Int64(seconds) * 1000)
        state = .open(window)
        return window
    }

    /// Closes the window (the operator's `DELETE /v1/pairing`); returns whether one was open.
    @discardableResult
    mutating func close() -> Bool {
        guard case .open = state else { return false }
        state = .closed
        return true
    }

    /// Moves an open window past its expiry to `.expired`; true when it did just now.
    @discardableResult
    mutating func expire(now: Int64) -> Bool {
        guard case .open(let w) = state, now >= w.expiresAtMillis else { return false }
        state = .expired
        return true
    }

    /// The open window at `now`, if any (expiring it when its time is up).
    mutating func openWindow(now: Int64) -> Open? {
        expire(now: now)
        guard case .open(let w) = state else { return nil }
        return w
    }

    /// A pairing handshake with `code` failed on its last message (a wrong code).
    mutating func recordFailure(code: PairingCode, now: Int64) -> FailureOutcome {
        guard var w = openWindow(now: now), w.code == code else { return .ignored }
        w.failures += 1
        if w.failures >= Self.maxFailures {
            state = .exhausted
            return .exhausted
        }
        state = .open(w)
        return .counted(remaining: Self.maxFailures - w.failures)
    }

    /// A terminal completed the pairing handshake with `code`: the window it used, now closed
    /// (`.used`), or nil when that window is no longer open.
    mutating func complete(code: PairingCode, terminal: String, now: Int64) -> Open? {
        guard let w = openWindow(now: now), w.code == code else { return nil }
        state = .used(terminal: terminal)
        return w
    }

    /// The window as status shows it.
    var status: PairingWindowStatus {
        switch state {
        case .closed: return PairingWindowStatus(state: .closed)
        case .open(let w):
            return PairingWindowStatus(
                state: .open, name: w.name, expiresAtMillis: w.expiresAtMillis, failedTries: w.failures)
        case .used(let terminal): return PairingWindowStatus(state: .used, name: terminal)
        case .exhausted: return PairingWindowStatus(state: .exhausted)
        case .expired: return PairingWindowStatus(state: .expired)
        }
    }
}

/// The pairing window in a master's status.
public struct PairingWindowStatus: Codable, Sendable, Equatable {
    /// Where a pairing window stands.
    public enum State: String, Codable, Sendable {
        /// None open.
        case closed
        /// Open: a terminal may pair with its code.
        case open
        /// A terminal paired with the last code.
        case used
        /// The last window closed after too many wrong codes.
        case exhausted
        /// The last window was not used in time.
        case expired
    }

    /// Where it stands.
    public var state: State
    /// Open: the name the terminal will get, if the operator gave one; used: the terminal
    /// that paired.
    public var name: String?
    /// Open: when it closes, wall-clock milliseconds.
    public var expiresAtMillis: Int64?
    /// Open: wrong codes tried so far.
    public var failedTries: Int?

    /// A status from its fields.
    public init(state: State, name: String? = nil, expiresAtMillis: Int64? = nil, failedTries: Int? = nil) {
        self.state = state
        self.name = name
        self.expiresAtMillis = expiresAtMillis
        self.failedTries = failedTries
    }
}

extension PairingWindowStatus {
    /// Encodes every member, absent ones as `null` (as the rest of the status).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(state, forKey: .state)
        try c.encode(name, forKey: .name)
        try c.encode(expiresAtMillis, forKey: .expiresAtMillis)
        try c.encode(failedTries, forKey: .failedTries)
    }
}
