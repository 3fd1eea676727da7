import Foundation

/// Whether a node can do its job, as fixed values a script can compare (`ready` in
/// `GET /v1/status`).
public struct NodeReadiness: Sendable, Equatable {
    /// Whether the order store answers reads and takes commits.
    public enum Store: String, Sendable {
        /// The last read of the store succeeded, and so did its last commit.
        case ok
        /// The store could not be read, or its last commit failed (`storeFailure` says why).
        case failed
    }

    /// Whether the master's service is on the LAN (DNS-SD through Avahi).
    public enum Published: String, Sendable {
        /// Avahi confirmed the registration.
        case ok
        /// Not confirmed yet (Avahi starting, or a renamed service being registered).
        case pending
        /// Not published: avahi-daemon is down or unavailable, or the registration failed.
        case failed
        /// The node was built without discovery.
        case notUsed = "not_used"
    }

    /// Whether a slave's link to its master carries live operations.
    public enum Link: String, Sendable {
        /// Up to date; live operations flow.
        case live
        /// Connected, receiving the snapshot.
        case syncing
        /// Trying to reach its master (connecting, or waiting to try again).
        case connecting
        /// No master of its store found on the LAN yet (or several stores to choose from).
        case searching
        /// The master refuses this terminal (unknown or revoked): pair it again.
        case pairingRequired = "pairing_required"
    }

    /// The store.
    public var store: Store
    /// A master's publication; `null` on a slave.
    public var published: Published?
    /// A slave's link to its master; `null` on a master.
    public var link: Link?
    /// The streak of failed commits while the last commit failed (then `store` is `failed`);
    /// `null` while the last commit succeeded.
    public var storeFailure: StoreFailure?

    /// Readiness from its parts: the store is `failed` as well when its commits fail.
    public init(store: Store, published: Published? = nil, link: Link? = nil, storeFailure: StoreFailure? = nil) {
        self.store = storeFailure == nil ? store : .failed
        self.published = published
        self.link = link
        self.storeFailure = storeFailure
    }

    /// The node's state in one word: `failed` when the store cannot be read or its commits
    /// fail, `ready` when the master is published (or a slave is live), else `degraded`
    /// (serving, but not everything is up).
    public var state: NodeReadyState {
        guard store == .ok else { return .failed }
        if let p = published, p != .ok, p != .notUsed { return .degraded }
        if let l = link, l != .live { return .degraded }
        return .ready
    }
}

/// The overall state of a node (`state` in `GET /v1/status`).
public enum NodeReadyState: String, Sendable {
    /// Everything is up.
    case ready
    /// Serving, but not published (master) or not live to its master (slave).
    case degraded
    /// The store cannot be read, or its commits fail.
    case failed
}

extension NodeReadiness.Published {
    /// A master's publication from its Avahi connection and the name Avahi confirmed.
    public init(avahi: AvahiState, confirmedName: String?) {
        switch avahi {
        case .up: self = confirmedName == nil ? .pending : .ok
        case .starting: self = .pending
        case .down, .unavailable: self = .failed
        case .notUsed, .notUsedWithFixedMaster: self = .notUsed
        }
    }
}

extension NodeReadiness.Link {
    /// A slave's link from its state and where it stands with its master's key.
    public init(state: SlaveStatus.LinkState, pairing: SlaveStatus.PairingState) {
        if pairing == .refused, state != .live { self = .pairingRequired; return }
        switch state {
        case .live: self = .live
        case .syncing: self = .syncing
        case .connecting, .waiting: self = .connecting
        case .idle: self = .searching
        }
    }
}

/// The last event a node logged at `warning` or above (`lastError` in `GET /v1/status`).
public struct NodeError: Sendable, Equatable {
    /// The event name, as in the log (`master.disconnected`, `service.publish_failed`, ...).
    public var event: String
    /// What it said: its `reason` or `error`, else its metadata as `key=value` pairs.
    public var message: String
    /// When, as an ISO 8601 time in UTC with milliseconds (`2026-11-25T14:03:07.120Z`).
    public var at: String

    /// An error from its parts.
    public init(event: String, message: String, at: String) {
        self.event = event
        self.message = message
        self.at = at
    }

    /// The ISO 8601 text of a wall-clock time in milliseconds since 1970.
    public static func isoTime(epochMillis: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: Double(epochMillis) / 1000))
    }
}
