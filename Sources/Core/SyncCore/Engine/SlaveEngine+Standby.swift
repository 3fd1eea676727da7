import JSON

/// The standby copy (`Docs/PROTOCOL.md` 7): what a slave keeps so that it can become the master
/// — the master's journal entries and tombstones with each broadcast it applies, the store's
/// members and settings, other terminals' refusals — and the terms it follows.
extension SlaveEngine {
    /// A message only standbys get: stored in one commit each.
    func standbyReceived(_ message: Result<StandbyMessage, WireError>, _ out: inout [Action]) {
        switch message {
        case .failure(let e):
            out.append(.log(EngineLog(.warning, "master.message_invalid", [("reason", "\(e)")])))
        case .success(.members(let m)):
            var c = SlaveCommit()
            c.members = m
            noteTerm(m.term, seq: nil, starts: nil, into: &c)
            commitStandby(c, &out)
        case .success(.refused(let opId, let origin, let t, let errors)):
            var c = SlaveCommit()
            c.rejections = errors.map {
                Rejection(
                    recordedAtMillis: now, origin: origin, opId: opId, operation: nil, orderUUID: $0.uuid, code: $0.code,
                    message: $0.message)
            }
            noteTerm(t, seq: nil, starts: nil, into: &c)
            commitStandby(c, &out)
        case .success(.diverged(let keep, let t)):
            diverged(keep: keep, term: t, &out)
        case .success(.appliedIds(let part)):
            appliedIdsReceived(part, &out)
        }
    }

    /// Commits `c` (and adopts the terms it records); a failure ends the link like any replica
    /// write failure.
    private func commitStandby(_ c: SlaveCommit, _ out: inout [Action]) {
        do {
            try store.commit(c)
            adoptTerms(of: c)
            if c.members != nil { membersCommitted += 1 }
        } catch {
            out.append(.log(EngineLog(.error, "replica.write_failed", [("error", "\(error)")])))
            out.append(.abort(reason: "replica write failed"))
        }
    }

    /// Records in `c` what a message of term `t` (an entry at `seq`, or the master's `starts`)
    /// teaches: a higher `sync.term`, and the start of a term not known yet.
    func noteTerm(_ t: Int64, seq: Int64?, starts: TermStarts?, into c: inout SlaveCommit) {
        if t > (c.term ?? term) { c.term = t }
        var known = c.termStarts ?? termStarts
        if let s = starts {
            known = s
        } else if let s = seq, known.starts[t] == nil, t > (known.starts.keys.max() ?? 1) {
            known.starts[t] = s
        }
        if known != termStarts { c.termStarts = known }
    }

    /// After a commit: the terms it recorded are this engine's (and the term of its last
    /// entry, when it applied one or a snapshot).
    func adoptTerms(of c: SlaveCommit) {
        if let t = c.term { term = t }
        if let s = c.termStarts { termStarts = s }
        if let b = c.baseTerm { lastTerm = b }
        if let e = c.journal.last { lastTerm = e.term }
    }

    /// A message from the master read for a standby (`ServerMessage.decodeForStandby`): true
    /// when it was a standby message (handled) or a broadcast of a term whose reign is over
    /// (ignored); otherwise notes its term and bytes for the standby journal.
    func standbyHandled(_ reading: StandbyReading, bytes: [UInt8], _ out: inout [Action]) -> Bool {
        if let standby = reading.standby {
            standbyReceived(standby, &out)
            return true
        }
        (receivedTerm, receivedWhole) = (reading.term ?? 1, bytes)
        guard case .success(.applied(_, _, let seq, _, _, nil, _)) = reading.message, isStale(seq: seq, term: receivedTerm) else {
            return false
        }
        out.append(.log(EngineLog(.warning, "sync.stale_term", [("term", "\(receivedTerm)"), ("sync.term", "\(term)")])))
        return true
    }

    /// The standby copy of a broadcast applied at `seq` goes in `c`: its journal entry and
    /// what its term teaches.
    func standbyCopy(_ op: OperationKind, _ orders: [Order], seq: Int64?, opId: String?, origin: String?, into c: inout SlaveCommit) {
        guard let s = seq else { return }
        c.journal = [standbyEntry(op, orders, seq: s, opId: opId, origin: origin, bytes: receivedWhole)]
        noteTerm(receivedTerm, seq: s, starts: nil, into: &c)
    }

    /// A snapshot's last part: it empties the standby journal (its seq is the new base) and
    /// brings the master's term starts.
    func snapshotTerms(_ snap: SnapshotPart, into c: inout SlaveCommit) {
        (c.standbyBase, c.baseTerm) = (snap.seq, snap.term ?? 1)
        c.appliedOpIds = takeAppliedIds(forSnapshotAt: snap.seq)
        noteTerm(snap.term ?? 1, seq: nil, starts: snap.termStarts, into: &c)
    }

    /// A broadcast of a term below the one this slave follows, at a seq that a later term it
    /// knows already holds: it comes from a master whose reign is over and is ignored. (A
    /// catch-up replays older entries with their own terms: those are applied.)
    func isStale(seq: Int64?, term t: Int64) -> Bool {
        guard t < term else { return false }
        guard let s = seq, let next = termStarts.starts.filter({ $0.key > t }).map(\.value).min() else { return false }
        return s >= next
    }

    /// The standby journal entry of a broadcast applied at `seq`: `bytes` as received (one
    /// message) or the broadcast encoded again from its parts.
    func standbyEntry(_ op: OperationKind, _ orders: [Order], seq: Int64, opId: String?, origin: String?, bytes: [UInt8]?)
        -> JournalEntry
    {
        var message = bytes ?? []
        if bytes == nil {
            var o = ServerMessage.applied(operation: op, orders: orders, seq: seq, opId: opId, origin: origin, snapshot: nil)
                .jsonObject()
            o["term"] = .int(receivedTerm)
            message = JSONValue.object(o).serializedBytes()
        }
        return JournalEntry(
            seq: seq, term: receivedTerm, opId: opId, origin: origin ?? "", operation: op, orderUUIDs: orders.map(\.uuid),
            message: message, recordedAtMillis: now)
    }

    /// `diverged`: the entries after `keep` are not in the master's history. In one commit they
    /// go back into the outbox (each once, by its op id or `requeue-<term>-<seq>`) and leave the
    /// journal; the snapshot that follows brings the master's truth, with them on top.
    func diverged(keep: Int64, term t: Int64, _ out: inout [Action]) {
        do {
            let tail = try store.standbyJournal(after: keep)
            var c = SlaveCommit()
            var queued: [OutboxEntry] = []
            for e in tail {
                let id = OutboxEntry.requeuedId(e)
                guard outboxKeys[id] == nil, !queued.contains(where: { $0.opId == id }),
                    let entry = OutboxEntry.requeued(e, baseSeq: keep, now: now)
                else { continue }
                queued.append(entry)
            }
            c.truncateJournal = keep
            c.prependOutbox = queued
            c.lastSeq = min(lastSeq, keep)
            c.needsSnapshot = true
            noteTerm(t, seq: nil, starts: nil, into: &c)
            try store.commit(c)
            adoptTerms(of: c)
            lastSeq = min(lastSeq, keep)
            needsSnapshot = true
            outbox.insert(contentsOf: queued, at: 0)
            for e in queued { track(e) }
            out.append(
                .log(
                    EngineLog(
                        .warning, "sync.diverged",
                        [("keep", "\(keep)"), ("entries", "\(tail.count)"), ("requeued", "\(queued.count)"), ("term", "\(t)")])))
        } catch {
            out.append(.log(EngineLog(.error, "replica.write_failed", [("error", "\(error)")])))
            out.append(.abort(reason: "replica write failed"))
        }
    }

    /// `ready` of term `t` with the master's term starts: recorded when they teach something.
    func readyTerms(_ t: Int64?, starts: TermStarts?, _ out: inout [Action]) {
        var c = SlaveCommit()
        noteTerm(t ?? 1, seq: nil, starts: starts, into: &c)
        guard c.term != nil || c.termStarts != nil else { return }
        commitStandby(c, &out)
    }
}

extension ServerMessage {
    /// A message from the master as a standby reads it: a standby message (`StandbyMessage`),
    /// or a usual one with the terms it carries (`term`, `termStarts`). One parse.
    static func decodeForStandby(_ bytes: [UInt8]) -> StandbyReading {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes, maxMembersPerObject: max(JSONParser.peerMaxMembersPerObject, HelloMessage.maxPending))
        } catch {
            return StandbyReading(message: .failure(WireError(.malformedJSON, "message from master is not valid JSON: \(error)")))
        }
        if let o = value.objectValue, let standby = StandbyMessage.decode(o) {
            return StandbyReading(message: .failure(WireError(.invalidMessage, "a standby message")), standby: standby)
        }
        var reading = StandbyReading(message: decode(value))
        reading.term = value.objectValue?["term"]?.intValue
        reading.termStarts = value.objectValue?["termStarts"]?.objectValue.map(TermStarts.init(json:))
        if case .success(.heartbeat) = reading.message {
            reading.clock = HeartbeatClock(value.objectValue)
            reading.stableSeq = value.objectValue?["stableSeq"]?.intValue
        }
        return reading
    }
}

/// A message from the master with what `ServerMessage.decodeForStandby` read of it: pure and
/// `Sendable`, so a slave's shell can decode a large message (a snapshot part) on a thread of its
/// own while its loop applies the messages before it (`SlaveEngine.received(_:now:)` in order).
public struct DecodedMasterMessage: Sendable {
    /// The message as received (its UTF-8 JSON).
    public let bytes: [UInt8]
    let reading: StandbyReading

    /// Decodes `bytes` (one JSON parse).
    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        self.reading = ServerMessage.decodeForStandby(bytes)
    }
}

/// What `ServerMessage.decodeForStandby` read.
struct StandbyReading: Sendable {
    var message: Result<ServerMessage, WireError>
    /// Set when the message is a standby message (then `message` is not used).
    var standby: Result<StandbyMessage, WireError>?
    /// The message's `term` (a broadcast's, `ready`'s), when it has one.
    var term: Int64?
    /// `ready`'s `termStarts`.
    var termStarts: TermStarts?
    /// A heartbeat's `time` and `clockOffset` (`Docs/PROTOCOL.md` 4.8).
    var clock: HeartbeatClock?
    /// A heartbeat's `stableSeq` (`Docs/PROTOCOL.md` 7.18).
    var stableSeq: Int64?
}
