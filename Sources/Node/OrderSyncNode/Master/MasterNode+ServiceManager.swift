/// The master's readiness for systemd: the store is open and the port and the local API socket
/// listen once `start()` ran; it is ready when the service is published too.
extension MasterNode {
    /// Called at the end of `start()`: reports ready now when there is nothing to publish (or
    /// Avahi cannot be used at all), else when the service is published, and at the latest after
    /// ``ServiceManager/publicationWaitLimit`` (a hung avahi-daemon must not keep the unit from
    /// starting: terminals that name the master with `--master` are served meanwhile).
    func reportReadiness() {
        serviceManager.startWatchdog()
        switch avahiState {
        case .notUsed, .notUsedWithFixedMaster:
            serviceManager.ready(status: readinessStatus)
        case .unavailable:
            serviceManager.ready(status: readinessStatus + " (Avahi unavailable)")
        case .starting, .up, .down:
            if publishedName != nil {
                serviceManager.ready(status: readinessStatus)
            } else {
                serviceManager.readyAtTheLatest(after: ServiceManager.publicationWaitLimit) { [weak self] in
                    guard let self else { return "" }
                    return self.readinessStatus + " (not published yet: Avahi \(self.avahiState.rawValue))"
                }
            }
        }
    }

    /// The status line `systemctl status` shows.
    var readinessStatus: String {
        var text = "master of store \(storeId) on port \(port)"
        if let name = publishedName { text += ", published as \(name)" }
        return text
    }
}
