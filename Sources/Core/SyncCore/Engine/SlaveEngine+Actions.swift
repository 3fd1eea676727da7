/// What the slave engine speaks in: its link and sync states, the actions the shell carries
/// out, and what a local write did.
extension SlaveEngine {
    public enum LinkState: String, Sendable {
        case offline
        /// Hello sent; catch-up or snapshot arriving.
        case syncing
        case live
    }

    /// An order's sync state as the local API shows it.
    public enum SyncState: Equatable, Sendable {
        case synced
        case pending
        case rejected(WireError)
    }

    /// Every order's sync state as it stands now: a value that can be read on another thread
    /// while the engine goes on (a local API page is encoded off the node's loop).
    public struct SyncStates: Sendable {
        fileprivate let pending: [String: Int]
        fileprivate let errors: [String: WireError]

        /// The sync state of the order with this key (lower-case UUID).
        public func of(_ key: String) -> SyncState {
            if pending[key] != nil { return .pending }
            if let e = errors[key] { return .rejected(e) }
            return .synced
        }
    }

    /// Every order's sync state now (copies of the engine's tables, shared until it changes).
    public var syncStates: SyncStates { SyncStates(pending: pendingKeys, errors: syncErrors) }

    public enum Action: Equatable, Sendable {
        /// Send `bytes` (one message, UTF-8 JSON text) to the master.
        case send([UInt8])
        /// Close the link normally and connect again: the hello brings the replica up to date.
        case resync(reason: String)
        /// Drop the link at once.
        case abort(reason: String)
        /// Call `ackDue()` after a short delay (acks are batched on a busy link).
        case scheduleAck
        /// Call `retryOutbox()` after `millis`.
        case scheduleOutboxRetry(millis: Int64)
        /// The master answered the operation sent from the outbox. `pending`: it could not store
        /// it, the change stays in the outbox and is sent again.
        case answered(opId: String, seq: Int64?, applied: [Order], errors: [WireError], pending: Bool)
        /// The replica is up to date with the master (after its `ready`).
        case synced(seq: Int64, epoch: String?, store: String?)
        case log(EngineLog)
    }

    /// What a local write did.
    public struct LocalWrite: Sendable {
        public enum Failure: Equatable, Sendable {
            /// An outbox entry with this operation id is already waiting.
            case duplicateOperation
            /// The replica could not store it; nothing was changed.
            case storage(String)
            /// The master answered this operation id before: this is its answer (nothing is
            /// applied again).
            case answered(AnsweredOperation)
        }

        public var opId: String
        public var operation: OperationKind
        /// Changes applied to the replica and queued for the master.
        public var changes: [OrderChange] = []
        /// Harmless repeats (nothing queued).
        public var unchanged: [Order] = []
        /// Orders refused here (not sent).
        public var errors: [WireError] = []
        public var failure: Failure?
        /// True when it went out on a live link at once.
        public var sent = false
    }
}
