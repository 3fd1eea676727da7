import Dispatch
import EventLoopIO
import Foundation
import JSON
import Logging
import NodePolicy
import OrderStore
import SyncCore

/// What waits for the next group: the master's work that reads or writes the store, in the
/// order it arrived.
enum GroupWork {
    /// A sync message from a terminal (decrypted, for a slave).
    case message(session: Int, bytes: [UInt8])
    /// A write through the master's local API, answered once its group is on disk.
    case local(OperationMessage, origin: String, single: String?, respond: LocalAPIServer.Respond)
    /// An operator adopts (`adopt`) or clears foreign orders (`ForeignOrder`; nil: all waiting).
    case foreign(adopt: Bool, uuids: [String]?, origin: String, respond: LocalAPIServer.Respond)
    /// A terminal's link ended after messages of it that still wait here.
    case disconnected(session: Int)
    /// The engine's housekeeping (it saves what is known of the terminals: a write like the
    /// others, committed with them off the loop).
    case maintenance
    /// A promoted node's own outbox, applied as the master's own writes (`MasterNode+OwnOutbox`).
    case ownOutbox([OutboxEntry])
}

/// The master's side of group commit (Docs/ARCHITECTURE.md, "The master's hot path"): every
/// message that arrived in one loop turn is applied in one transaction, committed with one
/// `fsync` off the loop by the `StoreWriter` while the loop goes on serving sockets and timers;
/// what the engine answered (broadcasts, results, refusals) leaves only once the commit is on
/// disk. Work arriving during a commit waits here for the next group, so the order of
/// operations is the order of arrival. Whether a group is open or committing is the writer's
/// phase.
struct GroupCommitState {
    /// The most messages in one group (a bound on the answers held in memory).
    static let maxGroup = 2_000

    var queue: [GroupWork] = []
    var queueHead = 0
    /// A group is due at the end of this loop turn.
    var scheduled = false
    /// The engine's answers to the group being committed, and the local API's (each body as
    /// the bytes it is sent as, and kept as for a repeat).
    var held: [MasterEngine.Action] = []
    var answers: [(respond: LocalAPIServer.Respond, status: Int, body: [UInt8], failed: (status: Int, body: JSONValue)?)] = []
    /// Terminals whose snapshot parts wait for the commit.
    var snapshotWaiting: Set<Int> = []
    var stats = CommitStatus()
    /// Each group's stages, stamped (`ORDERSYNC_STAGE_TRACE`; nil: nothing is stamped).
    var trace: GroupStageTrace?

    var pending: Int { queue.count - queueHead }
}

extension MasterNode {
    /// Queues `work` for the next group.
    func enqueue(_ work: GroupWork) {
        group.queue.append(work)
        group.trace?.queued(read: loop.turnWokeAt)
        scheduleGroup()
    }

    /// True while work is queued or a group commits: then new work queues behind it.
    var groupIsBusy: Bool { writer.isCommitting || group.pending > 0 }

    private func scheduleGroup() {
        guard !group.scheduled, !writer.isCommitting else { return }
        group.scheduled = true
        let run = { [weak self] in
            guard let self else { return }
            self.group.scheduled = false
            self.runGroup()
        }
        // The log's checkpoint goes first, so that the group starts the log over (`StoreWriter`).
        if writer.holdsGroupsForCheckpoint { writer.whenIdle(run) } else { loop.runSoon(run) }
    }

    /// Applies what waits, in one transaction, and hands the commit to the commit thread.
    func runGroup() {
        guard writer.phase == .idle, group.pending > 0 else { return }
        guard !writer.holdsGroupsForCheckpoint else { return scheduleGroup() }
        do {
            try writer.openGroup()
        } catch {
            // The store takes no transaction (busy, closed): each operation goes its own way
            // and fails or succeeds alone, answered at once (no group will finish for its
            // answers, nor for the snapshot parts its messages hold back).
            logger.error("store.group_failed", metadata: ["error": "\(error)"])
            while let work = takeWork() { perform(apply(work)) }
            let answers = group.answers
            group.answers = []
            for a in answers { a.respond.send(a.status, a.body) }
            awaitStandbys(takeCommittingReplications())
            finishGroupRound()
            return
        }
        engine.beginGroup()
        group.trace?.applying()
        let started = loop.now
        var taken = 0
        // A snapshot started in the group ends it: its read begins once the group is on disk,
        // at the group's last sequence (`pinSnapshotReads`).
        while taken < GroupCommitState.maxGroup, !snapshotReads.waitsForStore, let work = takeWork() {
            group.held.append(contentsOf: apply(work))
            taken += 1
        }
        noteStableSeq()
        let applied = engine.groupApplied.count
        let messages = taken
        group.trace?.handingOff()
        writer.commit { [weak self] result in
            self?.groupFinished(result, operations: applied, messages: messages, started: started)
        }
    }

    private func takeWork() -> GroupWork? {
        guard group.queueHead < group.queue.count else {
            group.queue.removeAll(keepingCapacity: true)
            group.queueHead = 0
            return nil
        }
        let work = group.queue[group.queueHead]
        group.queueHead += 1
        return work
    }

    /// Applies one piece of work; its answers are returned (held until the commit).
    private func apply(_ work: GroupWork) -> [MasterEngine.Action] {
        let now = WallClock.nowMillis()
        switch work {
        case .message(let id, let bytes):
            group.snapshotWaiting.insert(id)
            return engine.received(bytes, from: id, now: now)
        case .disconnected(let id):
            return engine.peerDisconnected(id, now: now)
        case .maintenance:
            return engine.maintenance(now: now)
        case .ownOutbox(let entries):
            return applyOwnOutbox(entries, now: now)
        case .foreign(let adopt, let uuids, let origin, let respond):
            return applyForeign(adopt: adopt, uuids: uuids, origin: origin, now: now, respond: respond)
        case .local(var message, let origin, let single, let respond):
            // An operation id the caller chose: a repeat gets the first answer, byte for byte.
            let callerOpId = single == nil ? message.opId : nil
            if let id = callerOpId, let first = try? writer.read({ try $0.keptAPIAnswer(opId: id) }) {
                // Sent as kept: not parsed again.
                group.answers.append((respond, first.status, first.body, nil))
                return []
            }
            if message.opId == nil { message.opId = UUID().uuidString.lowercased() }
            let (outcome, actions) = engine.localWrite(message, origin: origin, now: now, ackNow: waitsForStandbys)
            let answer = LocalAPIRoute.writeAnswer(
                single: single, operation: message.operation, applied: outcome.applied,
                unchanged: outcome.unchanged, errors: outcome.errors + outcome.repeatedErrors,
                seq: outcome.seq)
            // The answer if the group's commit fails: every applied order refused.
            var failed: (status: Int, body: JSONValue)?
            if !outcome.applied.isEmpty, !outcome.isRepeat {
                let errors = outcome.applied.map { WireError(.storageFailed, "the master could not store the change", uuid: $0.uuid) }
                failed = LocalAPIRoute.writeAnswer(
                    single: single, operation: message.operation, applied: [], unchanged: outcome.unchanged,
                    errors: outcome.errors + errors, seq: nil)
            }
            let keeps = writer.phase == .collecting && !outcome.errors.contains(where: { $0.code == .storageFailed })
            // With `--sync-replicas`, answered once standbys hold it (`MasterNode+Replicas.swift`).
            let waiting = pendingReplication(
                status: answer.status, body: answer.body, single: single != nil, seq: outcome.seq,
                keptOpId: keeps ? callerOpId : nil, failed: failed, respond: respond)
            let body = waiting.map { $0.keptReplicated ? $0.replicated : $0.unreplicated } ?? answer.body.serializedBytes()
            if let id = callerOpId, keeps {
                // In the group's transaction: kept exactly when the operation is. Should it fail
                // (or the store take no group), a repeat is answered from the journal and the
                // rejections, as before.
                try? writer.collect { try $0.saveAPIAnswer(opId: id, status: answer.status, body: body, atMillis: now) }
            }
            if let w = waiting {
                replicas.committing.append(w)
            } else {
                group.answers.append((respond, answer.status, body, failed))
            }
            return actions
        }
    }

    /// The group's commit is over (on the loop thread): its answers leave, or, if it failed
    /// (`result` carries the store's typed error), every operation of it is refused and the
    /// terminals' links are closed.
    func groupFinished(_ result: Result<Void, StoreError>, operations: Int, messages: Int, started: MonotonicInstant) {
        let finishedAt = group.trace == nil ? nil : MonotonicInstant.now
        var error: StoreError?
        if case .failure(let failure) = result { error = failure }
        pinSnapshotReads(storeHoldsGroup: error == nil || operations == 0)
        let held = group.held
        let answers = group.answers
        group.held = []
        group.answers = []
        let (seconds, attoseconds) = (loop.now - started).components
        group.stats.record(
            messages: messages, operations: operations, micros: seconds * 1_000_000 + attoseconds / 1_000_000_000_000,
            failed: error != nil)
        metrics.recordCommit(loop.now - started, failed: error != nil)
        if let error {
            logger.error(
                "store.commit_failed",
                metadata: ["error": "\(error)", "operations": "\(operations)", "messages": "\(messages)"])
            if operations == 0 {
                // Nothing of the group was an operation (acks, hellos, refusals): its answers
                // stand on what was already on disk.
                engine.groupCommitted()
                perform(held)
            } else {
                perform(engine.groupFailed(error, now: WallClock.nowMillis()))
                for a in answers {
                    if let failed = a.failed { a.respond(failed.status, failed.body) } else { a.respond.send(a.status, a.body) }
                }
                for w in takeCommittingReplications() {
                    if let failed = w.failed { w.respond(failed.status, failed.body) } else { w.respond.send(w.status, w.unreplicated) }
                }
                // What else the group answered may rest on the rolled-back changes: every
                // terminal starts again from what is on disk (slaves resend their outboxes).
                for s in sessions.values where s.phase == .open {
                    s.close(code: .internalError, reason: "the master could not store operations")
                }
                finishGroupRound()
                return
            }
        } else {
            noteCommitted(engine.groupApplied)
            dashboard?.committed(refusals: engine.refusals.values.reduce(0, +))
            engine.groupCommitted()
            feedCommitted()
            perform(held)
        }
        for a in answers { a.respond.send(a.status, a.body) }
        if let finishedAt {
            group.trace?.sent(
                commit: writer.lastCommitStamps, loopWoke: loop.turnWokeAt, finished: finishedAt, messages: messages,
                operations: operations)
        }
        awaitStandbys(takeCommittingReplications())
        finishGroupRound()
    }

    /// A write outside the groups (a pairing, a revocation, a dashboard token): committed off
    /// the loop by the writer like a group (`StoreWriter.write(_:then:)`); `then` runs once it
    /// is on disk or failed. What waited for the store meanwhile (work queued for the next
    /// group, snapshot parts) goes on after it.
    func storeWrite<T>(_ body: @escaping StoreWriter.WriteBody<T>, then: @escaping (Result<T, any Error>) -> Void) {
        writer.write(body) { [weak self] result in
            then(result)
            self?.finishGroupRound()
        }
    }

    /// After a commit: snapshot parts held back by it leave, and work that waits gets its group.
    private func finishGroupRound() {
        let waiting = group.snapshotWaiting
        group.snapshotWaiting = []
        for id in waiting.sorted() {
            if let s = sessions[id] { sendSnapshotParts(to: s) }
        }
        // What waited for the store (an operator's write) goes before the next group.
        if group.pending > 0 { writer.whenIdle { [weak self] in self?.runGroup() } }
    }

    /// At shutdown: waits for a running commit and applies what still waits, committed on
    /// this thread (the links are closed; nothing is answered).
    func finishGroups() {
        guard groupIsBusy else { return }
        let committed = writer.waitForCommitAtShutdown()
        // A role handed over (a step-down) keeps the local API: its callers are answered.
        if seat.handingOver { answerAtHandOver(committed) }
        group.held = []
        group.answers = []
        replicas.committing = []
        guard group.pending > 0 else { return }
        do {
            try writer.openGroup()
            engine.beginGroup()
            while let work = takeWork() { _ = apply(work) }
            try writer.commitAtShutdown()
            noteCommitted(engine.groupApplied)
            engine.groupCommitted()
        } catch {
            if writer.phase == .collecting { writer.rollbackGroup() }
            _ = engine.groupFailed(error, now: WallClock.nowMillis())
            logger.error("store.commit_failed", metadata: ["error": "\(error)", "at": "shutdown"])
        }
    }
}
