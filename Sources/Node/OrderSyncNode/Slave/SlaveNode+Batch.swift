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
    /// How its COMMIT reaches the disk: NORMAL (no sync) for a batch of snapshot parts that only
    /// stage (`SlaveEngine.onlyStages`), FULL for every other. A batch holds messages of one
    /// kind: a message of the other kind commits it first and waits for the next batch.
    var synchronous: SynchronousLevel
}

extension SlaveNode {
    /// A message from the master: applied in this loop turn's batch. While the last batch's
    /// COMMIT runs off the loop it waits, with the others that arrive meanwhile, for the next
    /// batch; whatever else waited for the store before it goes first (`StoreWriter.whenIdle`).
    func masterMessage(_ text: [UInt8]) {
        if electionMessage(text) { return }
        // Decoded (off the loop when large: `MasterMessageDecoder`), then applied in order.
        decoder.received(text)
    }

    /// A message from the master, decoded, in the order it came.
    func masterMessage(_ message: DecodedMasterMessage) {
        // While the log's checkpoint runs before the next batch (`StoreWriter`), the message waits.
        if writer.phase != .committing, !writer.holdsGroupsForCheckpoint, waitingMessages.isEmpty,
            applyMasterMessage(message)
        {
            return
        }
        waitingMessages.append(message)
        if waitingMessages.count == 1 {
            writer.whenIdle { [weak self] in self?.applyWaitingMessages() }
        }
    }

    /// The master's messages that arrived during the last commit, in the order they came.
    private func applyWaitingMessages() {
        var texts = waitingMessages[...]
        waitingMessages = []
        while let text = texts.first {
            // A batch of the other kind was committed first: this message waits for it.
            guard applyMasterMessage(text) else { break }
            texts.removeFirst()
            // A snapshot's switch committed its batch early: the rest waits for that COMMIT.
            if writer.phase == .committing { break }
        }
        guard !texts.isEmpty else { return }
        waitingMessages = Array(texts)
        writer.whenIdle { [weak self] in self?.applyWaitingMessages() }
    }

    /// Applies `message` in the open batch (opening one when none is). Returns false, having
    /// applied nothing, when the open batch is of the other kind (`SlaveBatch.synchronous`):
    /// that batch is committed now and the message waits for it.
    private func applyMasterMessage(_ message: DecodedMasterMessage) -> Bool {
        let synchronous: SynchronousLevel = engine.onlyStages(message) ? .normal : .full
        if let open = batch, open.synchronous != synchronous {
            commitBatch()
            return false
        }
        // Several stores became visible while this one was syncing: do not join one by chance.
        if mustChooseStore { engine.joinAllowed = chooseTarget() != nil }
        if batch == nil {
            do {
                try writer.openGroup(synchronous: synchronous)
            } catch {
                // No transaction to batch in: this message goes alone, as it comes.
                logger.warning("replica.batch_unavailable", metadata: ["error": "\(error)"])
                perform(engine.received(message, now: WallClock.nowMillis()))
                changeFeed?.wake()
                return true
            }
            batch = SlaveBatch(started: loop.now, synchronous: synchronous)
            loop.runSoon { [weak self] in self?.commitBatch() }
        }
        guard batch?.closing == false else { return true }
        let actions = writer.collect { _ in engine.received(message, now: WallClock.nowMillis()) }
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
        // A snapshot's last part: the staged orders replace the replica's at this batch's
        // COMMIT, on the commit thread (Docs/PROTOCOL.md 4.2.2). Nothing else may write the
        // replica in this batch: it is committed now, and what comes next waits for it.
        if writer.switchesAtCommit { commitBatch() }
        return true
    }

    /// Hands the open batch to the store writer, whose COMMIT runs off the loop; what its
    /// messages asked for is carried out once it is on disk (`batchFinished`).
    func commitBatch() {
        guard let b = batch else { return }
        batch = nil
        replicaCommits.batches += 1
        replicaCommits.messages += Int64(b.messages)
        replicaCommits.largestBatch = max(replicaCommits.largestBatch, Int64(b.messages))
        writer.commit { [weak self] result in self?.batchFinished(b, result) }
    }

    /// Runs `body` once the replica holds every message received before it (the batch open or
    /// committing now is on disk, and its answers left): anything else that touches the replica
    /// goes through here, so it never sees or answers from an uncommitted batch.
    func afterBatch(_ body: @escaping () -> Void) {
        writer.whenIdle(body)
    }

    /// The batch's COMMIT is over (on the loop).
    private func batchFinished(_ b: SlaveBatch, _ result: Result<Void, StoreError>) {
        switch result {
        case .success:
            metrics.recordCommit(loop.now - b.started, failed: false)
            perform(b.actions)
            changeFeed?.wake()
        case .failure(let error):
            metrics.recordCommit(loop.now - b.started, failed: true)
            replicaCommits.failed += 1
            logger.error("replica.commit_failed", metadata: ["error": "\(error)", "messages": "\(b.messages)"])
            replicaRolledBack()
        }
    }

    /// A commit of the replica failed: the engine's state ran ahead of the disk. It is read
    /// again from the replica, and the link starts over (catch-up from what is on disk; the
    /// outbox is sent again).
    func replicaRolledBack() {
        do {
            engine = try SlaveEngine(
                store: writer.slaveStore(), terminalId: terminalId, terminalName: terminalName,
                configuredStore: configuration.store)
            engine.logsOwnOperations = logger.logLevel <= .info
        } catch {
            logger.critical("replica.unreadable", metadata: ["error": "\(error)"])
        }
        linkState.link?.abort(reason: "the replica could not store the master's messages")
    }

    /// At shutdown, the loop stopped: the batch committing is waited for (explicitly), the one
    /// collecting is committed here; messages still waiting are dropped (the master sends
    /// them again: they were not acknowledged).
    func finishBatchesAtShutdown() {
        waitingMessages = []
        writer.waitForCommitAtShutdown()
        guard let b = batch else { return }
        batch = nil
        do {
            try writer.commitAtShutdown()
        } catch {
            logger.error("replica.commit_failed", metadata: ["error": "\(error)", "messages": "\(b.messages)"])
        }
    }
}
