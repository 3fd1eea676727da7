import EventLoopIO
import JSON
import Logging
import SyncCore

/// A write through the master's local API whose answer waits for standbys to hold it
/// (`--sync-replicas`): the answer both ways, and what the kept answer (a retried `opId`) says.
struct PendingReplication {
    var respond: LocalAPIServer.Respond
    var status: Int
    /// The write's journal sequence.
    var seq: Int64
    /// The caller's operation id when its answer is kept (`api_answers`), else nil.
    var keptOpId: String?
    /// The body with `"replicated":true`, and with `"replicated":false`.
    var replicated: [UInt8]
    var unreplicated: [UInt8]
    /// Which of the two the group's transaction kept (the one expected when it was applied).
    var keptReplicated: Bool
    /// The answer if the group's commit fails: every applied order refused.
    var failed: (status: Int, body: JSONValue)?
}

/// The writes waiting for standbys and the timer of the next deadline.
struct ReplicaWaitState {
    var waits = ReplicationWaits<PendingReplication, MonotonicInstant>()
    var timer: TimerHandle?
    /// Answers of the group being committed that wait for standbys once it is on disk.
    var committing: [PendingReplication] = []
}

extension MasterNode {
    /// Whether local API writes wait for standbys (`--sync-replicas` above 0).
    var waitsForStandbys: Bool { configuration.syncReplicas > 0 }

    /// The answer to a local API write as it is first sent, when it waits for standbys: a batch
    /// answer (`POST /v1/operations`) ends with `"replicated"`; a single order's answer is the
    /// order, unchanged (it waits all the same). Returns nil when it does not wait (the body is
    /// answered as is).
    func pendingReplication(
        status: Int, body: JSONValue, single: Bool, seq: Int64?, keptOpId: String?, failed: (status: Int, body: JSONValue)?,
        respond: LocalAPIServer.Respond
    ) -> PendingReplication? {
        guard waitsForStandbys, let seq, (200..<300).contains(status), case .object(var o) = body else { return nil }
        if !single { o["replicated"] = .bool(true) }
        let yes = JSONValue.object(o).serializedBytes()
        if !single { o["replicated"] = .bool(false) }
        let no = JSONValue.object(o).serializedBytes()
        return PendingReplication(
            respond: respond, status: status, seq: seq, keptOpId: keptOpId, replicated: yes, unreplicated: no,
            keptReplicated: engine.standbys.contains(where: { $0.voter && !$0.isTakingSnapshot }), failed: failed)
    }

    /// The group's writes are on disk: each waits for its standbys (or is answered at once when
    /// none is connected or enough already hold it).
    func awaitStandbys(_ pending: [PendingReplication]) {
        let deadline = loop.now + configuration.syncTimeout
        let standbys = engine.standbys
        for p in pending {
            if let done = replicas.waits.add(
                seq: p.seq, replicas: configuration.syncReplicas, standbys: standbys, deadline: deadline, answer: p)
            {
                answerReplicated(done)
            }
        }
        standbysHeard()
    }

    /// After a group (acks raise `held`, standbys leave): the writes the standbys now hold
    /// are answered; the timer follows the next deadline.
    func standbysHeard() {
        guard replicas.waits.count > 0 else { return }
        for done in replicas.waits.heard(engine.standbys) { answerReplicated(done) }
        scheduleReplicaDeadline()
    }

    private func scheduleReplicaDeadline() {
        if let t = replicas.timer { _ = loop.cancel(t) }
        replicas.timer = nil
        guard let next = replicas.waits.nextDeadline else { return }
        let delay = max(.zero, next - loop.now)
        replicas.timer = loop.schedule(after: delay) { [weak self] in
            guard let self else { return }
            self.replicas.timer = nil
            for done in self.replicas.waits.expired(now: self.loop.now) { self.answerReplicated(done) }
            self.scheduleReplicaDeadline()
        }
    }

    /// Answers a write that waited. An unreplicated one is counted and, when it waited for a
    /// standby, logged; when the kept answer said otherwise it is rewritten first, so a retry
    /// of its `opId` gets these very bytes.
    /// With `--auto-failover`, an answer given once the lease has lapsed is a refusal instead
    /// (`leaseRefusesLateAnswer`): the write is not acknowledged.
    func answerReplicated(_ done: ReplicationWaits<PendingReplication, MonotonicInstant>.Finished) {
        let p = done.answer
        if let refusal = leaseRefusesLateAnswer(seq: done.seq) {
            p.respond(refusal.status, refusal.body)
            return
        }
        let body = done.replicated ? p.replicated : p.unreplicated
        if !done.replicated {
            metrics.counts.unreplicatedWrites += 1
            if done.wanted > 0 {
                logger.warning(
                    "api.unreplicated",
                    metadata: [
                        "seq": .stringConvertible(done.seq), "wanted": .stringConvertible(done.wanted),
                        "held_by": "\(done.heldBy.joined(separator: ","))",
                    ])
            }
        }
        guard let id = p.keptOpId, p.keptReplicated != done.replicated else {
            p.respond.send(p.status, body)
            return
        }
        let now = WallClock.nowMillis()
        storeWrite({ try $0.saveAPIAnswer(opId: id, status: p.status, body: body, atMillis: now) }) { [weak self] result in
            if case .failure(let error) = result {
                self?.logger.error("api.answer_not_kept", metadata: ["op.id": "\(id)", "error": "\(error)"])
            }
            p.respond.send(p.status, body)
        }
    }

    /// The answers of the group just committed (or failed) that wait for standbys.
    func takeCommittingReplications() -> [PendingReplication] {
        defer { replicas.committing = [] }
        return replicas.committing
    }

    /// At shutdown: the writes still waiting are not answered (as the links, the local API's
    /// callers retry; a kept answer stands), and the timer stops.
    func dropReplicaWaits() {
        if let t = replicas.timer { _ = loop.cancel(t) }
        replicas.timer = nil
        _ = replicas.waits.drain()
    }
}
