import EventLoopIO
import Logging
import OrderStore
import SyncCore

/// The master's messages that arrived in one loop turn, applied to the replica in one
/// transaction (one `fsync` for the lot); what the engine answered (acks, the answers to the
/// POS app's writes) leaves only once that transaction is on disk.
struct SlaveBatch {
    var actions: [SlaveEngine.Action] = []
    var messages = 0
    /// The engine asked for the link to end: what else arrived in this turn is not applied.
    var closing = false
    /// When its first message arrived, on the loop's clock (the commit latency runs from it).
    var started: MonotonicInstant
}

/// How the replica's batches went, for `GET /v1/status` (`commits`).
public struct ReplicaCommitStatus: Codable, Equatable, Sendable {
    /// Transactions committed (or failed) for the master's messages.
    public var batches: Int64 = 0
    /// The master's messages applied in them.
    public var messages: Int64 = 0
    /// The most messages in one batch.
    public var largestBatch: Int64 = 0
    /// Batches whose commit failed.
    public var failed: Int64 = 0

    public init() {}
}

extension SlaveNode {
    /// A message from the master: applied in this loop turn's batch.
    func masterMessage(_ text: [UInt8]) {
        // Several stores became visible while this one was syncing: do not join one by chance.
        if mustChooseStore { engine.joinAllowed = chooseTarget() != nil }
        if batch == nil {
            do {
                try db.beginGroup()
            } catch {
                // No transaction to batch in: this message goes alone, as it comes.
                logger.warning("replica.batch_unavailable", metadata: ["error": "\(error)"])
                perform(engine.received(text, now: WallClock.nowMillis()))
                changeFeed?.wake()
                return
            }
            batch = SlaveBatch(started: loop.now)
            loop.runSoon { [weak self] in self?.commitBatch() }
        }
        guard batch?.closing == false else { return }
        let actions = engine.received(text, now: WallClock.nowMillis())
        batch?.messages += 1
        batch?.actions.append(contentsOf: actions)
        if actions.contains(where: {
            switch $0 {
            case .resync, .abort: return true
            default: return false
            }
        }) {
            batch?.closing = true
        }
    }

    /// Commits the open batch, then carries out what its messages asked for. Anything else
    /// that touches the replica calls this first, so it never sees or answers from an
    /// uncommitted batch.
    func commitBatch() {
        guard let b = batch else { return }
        batch = nil
        replicaCommits.batches += 1
        replicaCommits.messages += Int64(b.messages)
        replicaCommits.largestBatch = max(replicaCommits.largestBatch, Int64(b.messages))
        do {
            try db.commitGroup()
            metrics.recordCommit(loop.now - b.started, failed: false)
        } catch {
            metrics.recordCommit(loop.now - b.started, failed: true)
            replicaCommits.failed += 1
            db.rollbackGroup()
            logger.error("replica.commit_failed", metadata: ["error": "\(error)", "messages": "\(b.messages)"])
            // The engine's state ran ahead of the disk: it is read again from the replica, and
            // the link starts over (catch-up from what is on disk; the outbox is sent again).
            do {
                engine = try SlaveEngine(
                    store: SQLiteSlaveStore(db: db), terminalId: terminalId, terminalName: terminalName,
                    configuredStore: configuration.store)
                engine.logsOwnOperations = logger.logLevel <= .info
            } catch {
                logger.critical("replica.unreadable", metadata: ["error": "\(error)"])
            }
            linkState.link?.abort(reason: "the replica could not store the master's messages")
            return
        }
        perform(b.actions)
        changeFeed?.wake()
    }
}
