import Discovery
import Foundation

/// Collects `DiscoveryEvent`s delivered on Avahi's thread and lets a test wait for one.
// @unchecked Sendable: `events` is read and written only with `condition` locked (a condition
// variable, which `Mutex` does not offer, lets `wait` sleep until an event arrives).
final class EventRecorder: @unchecked Sendable {
    private let condition = NSCondition()
    private var events: [DiscoveryEvent] = []

    /// The handler to give `AvahiDiscovery`: copies the event and wakes waiters.
    var handler: @Sendable (DiscoveryEvent) -> Void {
        { [self] event in
            condition.lock()
            events.append(event)
            condition.broadcast()
            condition.unlock()
        }
    }

    /// Every event so far.
    var all: [DiscoveryEvent] {
        condition.lock()
        defer { condition.unlock() }
        return events
    }

    /// The number of events so far: pass it as `since` to wait only for later events.
    var mark: Int {
        condition.lock()
        defer { condition.unlock() }
        return events.count
    }

    /// Waits up to `timeout` seconds for an event at position `since` or later that matches
    /// `predicate`, and returns it; nil on timeout.
    func wait(
        since: Int = 0, timeout: TimeInterval,
        where predicate: (DiscoveryEvent) -> Bool
    ) -> DiscoveryEvent? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        var checked = since
        while true {
            while checked < events.count {
                if predicate(events[checked]) {
                    return events[checked]
                }
                checked += 1
            }
            if !condition.wait(until: deadline) {
                return nil
            }
        }
    }
}

extension DiscoveryEvent {
    /// The resolved service of a `serviceFound` event.
    var found: ResolvedService? {
        if case .serviceFound(let service) = self {
            return service
        }
        return nil
    }

    /// The name of a `published` event.
    var publishedName: String? {
        if case .published(let name) = self {
            return name
        }
        return nil
    }

    /// True for `daemonUnavailable`.
    var isDaemonUnavailable: Bool {
        if case .daemonUnavailable = self {
            return true
        }
        return false
    }
}
