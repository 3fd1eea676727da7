import EventLoopIO
import NodePolicy
import OrderStore

/// The store's health as its one writer sees it: every group's commit (and every group that
/// could not even begin) is noted, so `ready.store` fails and `ordersync check` is CRITICAL
/// from the first failed commit until one succeeds, whatever reads still succeed meanwhile.
/// While it fails, a probe (``StoreProbe``) writes one metadata row every 10 s, so an idle
/// node's health comes back once the disk has room again, without waiting for a write.
extension StoreWriter {
    /// Notes how a commit (or the start of a group) went.
    func noteCommit(_ result: Result<Void, StoreError>) {
        switch result {
        case .success:
            health.committed()
            if let timer = probe.committed() { loop.cancel(timer) }
        case .failure(let error):
            health.failed(problem: error.problem, error: error.message, path: error.path ?? path, atMillis: WallClock.nowMillis())
            probe.failed(arm: armProbe)
        }
    }

    /// Schedules the next probe.
    private func armProbe() -> TimerHandle {
        loop.schedule(after: StoreProbe.interval) { [weak self] in self?.runProbe() }
    }

    /// The probe's timer fired: one metadata row, written as any write outside the groups (its
    /// COMMIT off the loop, after the work queued before it); its outcome is noted like every
    /// commit's, and the probe is armed again while the store still fails.
    private func runProbe() {
        guard probe.fired() else { return }
        let now = WallClock.nowMillis()
        write({ db in try db.setMetadata(StoreProbe.metadataKey, "\(now)") }) { [weak self] _ in
            guard let self else { return }
            self.probe.ended(stillFailing: self.health.failure != nil, arm: self.armProbe)
        }
    }
}

extension StoreError {
    /// What went wrong, in the few words an operator pages on.
    var problem: String {
        switch kind {
        case .full: return "disk full"
        case .readOnly: return "read-only"
        case .busy: return "busy"
        case .damaged, .corruptRow: return "damaged"
        case .closed: return "closed"
        default: return "commit failed"
        }
    }
}
