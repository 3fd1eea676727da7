internal import CAvahi
import Glibc

/// The client's life: connect, notice the daemon going away, reconnect. Runs on Avahi's thread.
extension AvahiDiscovery {
    /// The reconnect timer: frees a failed client and creates a new one.
    func reconnect() {
        releaseClient()
        var error: Int32 = 0
        // "AVAHI_CLIENT_NO_FAIL: Don't fail if the daemon is not available when
        // avahi_client_new() is called, instead enter AVAHI_CLIENT_CONNECTING state and wait
        // for the daemon to appear" (avahi-client/client.h). It still fails without a D-Bus
        // system bus: then retry with backoff.
        // The state callback may already run inside avahi_client_new(); it adopts the client.
        clientPhase = .connecting
        let created = avahi_client_new(pollAPI, AVAHI_CLIENT_NO_FAIL, clientStateCallback, userdata, &error)
        guard let created else {
            dropClientObjects()
            let delay = backoff.next()
            reportUnavailable("cannot connect to avahi-daemon: \(avahiErrorText(error)); retrying in \(delay)")
            schedule(after: delay)
            return
        }
        client = created
    }

    /// AvahiClientCallback.
    func clientStateChanged(_ changed: OpaquePointer, _ state: AvahiClientState) {
        if client == nil {
            client = changed
        }
        guard changed == client, clientPhase != .failed else {
            return
        }
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            // "The server has startup successfully and registered its host name on the network,
            // so it's time to create our services" (Avahi's client-publish-service example).
            clientPhase = .running
            backoff.reset()
            if daemonReported != true {
                daemonReported = true
                emit(.daemonAvailable)
            }
            registerAnnouncement(replacing: false)
            for (type, family) in browseTypes where browsers[type] == nil {
                startBrowser(type: type, family: family)
            }
        case AVAHI_CLIENT_S_COLLISION, AVAHI_CLIENT_S_REGISTERING:
            // "Let's drop our registered services. When the server is back in
            // AVAHI_SERVER_RUNNING state we will register them again with the new host name."
            clientPhase = .registering
            if let group = entryGroup {
                avahi_entry_group_reset(group)
            }
        case AVAHI_CLIENT_CONNECTING:
            if clientPhase == .running || clientPhase == .registering {
                // The daemon went away under a connected client: start over with a fresh one.
                clientFailed(reason: "avahi-daemon disconnected", retryAfter: .zero)
            } else {
                clientPhase = .connecting
                reportUnavailable("avahi-daemon is not running; waiting for it to start")
            }
        case AVAHI_CLIENT_FAILURE:
            let error = avahi_client_errno(changed)
            // With AVAHI_CLIENT_NO_FAIL a client whose daemon goes away enters
            // AVAHI_CLIENT_FAILURE with AVAHI_ERR_DISCONNECTED; it is not reconnected by Avahi:
            // the application frees it and creates a new one.
            let disconnected = error == Int32(AVAHI_ERR_DISCONNECTED)
            clientFailed(
                reason: disconnected ? "avahi-daemon disconnected" : avahiErrorText(error),
                retryAfter: disconnected ? .zero : backoff.next())
        default:
            break
        }
    }

    /// The client is unusable: report it, report every known service lost, and schedule a new
    /// client. The old one is freed by the timer, outside its own callback.
    private func clientFailed(reason: String, retryAfter delay: Duration) {
        clientPhase = .failed
        reportUnavailable(reason)
        schedule(after: delay)
    }

    /// Reports the daemon unavailable (once per transition) and every service known so far lost.
    func reportUnavailable(_ reason: String) {
        let lost = services.removeAll()
        if daemonReported != false {
            daemonReported = false
            emit(.daemonUnavailable(reason: reason))
        }
        for instance in lost {
            emit(.serviceLost(name: instance.name, type: instance.type, domain: instance.domain))
        }
    }

    /// Frees the client. avahi_client_free: "Free a client instance. This will automatically
    /// free all associated browser, resolve and entry group objects. All pointers to such
    /// objects become invalid!"
    func releaseClient() {
        if let old = client {
            avahi_client_free(old)
        }
        dropClientObjects()
    }

    /// Forgets the client and the pointers of the objects it owned.
    func dropClientObjects() {
        client = nil
        clientPhase = .none
        entryGroup = nil
        browsers.removeAll()
        resolvers.removeAll()
        freshResolvers.removeAll()
    }

    /// Arms the reconnect timer. Avahi timeouts take an absolute time of day.
    func schedule(after delay: Duration) {
        guard let api = pollAPI, let timer = reconnectTimer else {
            return
        }
        let (seconds, attoseconds) = max(.zero, delay).components
        var when = timeval()
        gettimeofday(&when, nil)
        let micros = Int(when.tv_usec) + Int(attoseconds / 1_000_000_000_000)
        when.tv_sec += Int(seconds) + micros / 1_000_000
        when.tv_usec = micros % 1_000_000
        api.pointee.timeout_update(timer, &when)
    }
}
