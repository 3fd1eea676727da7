/// The limits of an HTTP listener (the dashboard, `--metrics-listen`), so that idle or slow
/// connections cannot hold its slots: each address may hold only a few of them, and a
/// connection that does not send a whole request head in time, or sits idle between
/// requests too long, is closed (Docs/SECURITY.md, "The HTTP listeners").
public struct HTTPListenerLimits: Equatable, Sendable {
    /// Most connections open at once.
    public var maxConnections: Int
    /// Most connections open at once from one IP address.
    public var maxConnectionsPerAddress: Int
    /// A request must arrive whole (its head, and the small body a listener accepts) within
    /// this time of its first byte; a new connection (TLS handshake included) starts counting
    /// at once.
    public var headTimeout: Duration
    /// A kept-alive connection may wait this long for its next request.
    public var idleTimeout: Duration

    /// Limits from their parts.
    public init(maxConnections: Int, maxConnectionsPerAddress: Int, headTimeout: Duration, idleTimeout: Duration) {
        self.maxConnections = maxConnections
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.headTimeout = headTimeout
        self.idleTimeout = idleTimeout
    }

    /// The defaults: 128 connections, 12 per address (a browser opens at most 6 to one host),
    /// 5 s for a request head, 30 s idle.
    public static let standard = HTTPListenerLimits(
        maxConnections: 128, maxConnectionsPerAddress: 12, headTimeout: .seconds(5), idleTimeout: .seconds(30))
}

/// Which connections an HTTP listener admits: it counts them in all and per address, and
/// refuses one past either cap. Pure: the listener tells it of every connection opened and
/// closed.
public struct HTTPAdmission {
    /// What to do with a new connection.
    public enum Decision: Equatable {
        case admit
        /// The listener holds `open` connections, its cap.
        case listenerFull(open: Int)
        /// The address holds `open` connections, its cap.
        case addressFull(open: Int)
    }

    let limits: HTTPListenerLimits
    /// Connections open.
    private(set) var total = 0
    private var perAddress: [String: Int] = [:]

    /// No connection open yet.
    public init(limits: HTTPListenerLimits) {
        self.limits = limits
    }

    /// Connections open from `host`.
    public func open(from host: String) -> Int { perAddress[host, default: 0] }

    /// A connection from `host` arrived: counted when admitted.
    public mutating func admit(_ host: String) -> Decision {
        let fromHost = open(from: host)
        // The address's cap first: a flood from one address is told so even when it also
        // filled the listener.
        if fromHost >= limits.maxConnectionsPerAddress { return .addressFull(open: fromHost) }
        if total >= limits.maxConnections { return .listenerFull(open: total) }
        total += 1
        perAddress[host] = fromHost + 1
        return .admit
    }

    /// An admitted connection from `host` closed.
    public mutating func release(_ host: String) {
        guard let n = perAddress[host] else { preconditionFailure("released a connection from \(host) never admitted") }
        perAddress[host] = n > 1 ? n - 1 : nil
        total -= 1
    }
}

/// The deadline of one HTTP connection, as its phase changes: a request head arriving (from
/// the connection's opening or the request's first byte), idle between requests, or taken over
/// by a stream (no deadline). Pure: the listener arms the timer it says.
public struct HTTPConnectionDeadline {
    /// What the connection waits for.
    public enum Phase: Equatable {
        case request
        case idle
        case streaming
    }

    /// What to do with the connection's timer.
    public enum Timer: Equatable {
        /// Leave it as it is.
        case keep
        /// Close the connection after this long, from now (replacing any timer).
        case arm(Duration)
        /// No timer any more.
        case disarm
    }

    let limits: HTTPListenerLimits
    /// What the connection waits for now.
    public private(set) var phase = Phase.request

    /// A connection that has just opened: waiting for its first request.
    public init(limits: HTTPListenerLimits) {
        self.limits = limits
    }

    /// The connection opened: its first request must arrive in time.
    public func opened() -> Timer { .arm(limits.headTimeout) }

    /// Bytes of a request arrived: an idle connection starts the clock of its next request;
    /// a request already counting keeps its deadline (trickling bytes buys no time).
    public mutating func received() -> Timer {
        guard phase == .idle else { return .keep }
        phase = .request
        return .arm(limits.headTimeout)
    }

    /// A request was answered and the connection stays open: it may idle until the next.
    public mutating func answered() -> Timer {
        guard phase != .streaming else { preconditionFailure("answered a request on a streaming connection") }
        phase = .idle
        return .arm(limits.idleTimeout)
    }

    /// A handler took the connection over (an event stream): no deadline any more.
    public mutating func streaming() -> Timer {
        phase = .streaming
        return .disarm
    }
}
