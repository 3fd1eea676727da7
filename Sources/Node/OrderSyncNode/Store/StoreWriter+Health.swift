import NodePolicy
import OrderStore

/// The store's health as its one writer sees it: every group's commit (and every group that
/// could not even begin) is noted, so `ready.store` fails and `ordersync check` is CRITICAL
/// from the first failed commit until one succeeds, whatever reads still succeed meanwhile.
extension StoreWriter {
    /// Notes how a commit (or the start of a group) went.
    func noteCommit(_ result: Result<Void, StoreError>) {
        switch result {
        case .success:
            health.committed()
        case .failure(let error):
            health.failed(problem: error.problem, error: error.message, path: error.path ?? path, atMillis: WallClock.nowMillis())
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
