import SyncCore
import WireTestSupport

/// A deliberate bug in an engine, for the checker's self-tests. Each is made from outside the
/// engine where that is possible (rewriting the actions it returns or the events fed to it); the
/// master's sequence counter is bumped through its module-internal setter.
enum SimMutation: String, CaseIterable {
    /// The master engine skips a sequence number now and then (its `lastSeq` jumps by one before
    /// a local write): the journal has a hole. Caught by "journal gapless".
    case skipJournalEntry
    /// Every fifth answer (`result`) a slave engine would receive for its own operation never
    /// reaches it, nor any later answer for that operation id: the terminal waits for ever.
    /// Caught by "convergence" (the run does not settle).
    case dropAnswers
    /// A slave's engine sends some operations out of order: one operation message is held back
    /// and sent after the next one on the same link. Caught by "per-terminal order".
    case reorderTerminalOps
    /// The master engine takes an operation it already applied for a new one: now and then a
    /// copy of an Update a slave sent (same operation id, no base `version`) reaches the engine
    /// (on that slave's link when it has one, else through the local API) with its repeat lookup
    /// bypassed and the journal's unique operation ids off for that call, so it is applied and
    /// journalled a second time. Caught by "applied twice" (two journal entries for one
    /// operation id, and on a link two sequence numbers answered for it).
    case applyRepeat
}

/// The mutations that rewrite what an engine sees or sends.
extension Simulation {
    /// True when the `dropAnswers` mutation swallows this message before the slave engine sees it.
    func dropsAnswer(_ text: String) -> Bool {
        guard text.hasPrefix("{\"type\":\"result\""),
            case .success(.result(let opId, _, _, _, _)) = ServerMessage.decode(text)
        else { return false }
        if droppedAnswers.contains(opId) { return true }
        answersSeen += 1
        guard answersSeen % 5 == 0 else { return false }
        droppedAnswers.insert(opId)
        trace.add(clock.now, "sim", "mutation", "answer for op \(opId) dropped")
        return true
    }

    /// Keeps an Update without a base `version` the master received from a slave, for
    /// `applyRepeat` (a copy with a base version would be refused as a conflict, not applied).
    func noteReceivedUpdate(_ text: String, from slave: Int) {
        guard case .success(.operation(let m)) = ClientMessage.decode(text), m.operation == .update, let id = m.opId,
            !m.orders.contains(where: { $0.objectValue?["version"] != nil }),
            !receivedUpdates.contains(where: { $0.opId == id })
        else { return }
        receivedUpdates.append((id, m, text, slave))
    }

    /// Feeds the master engine a copy of an Update it applied, whose journal entry it still
    /// holds, as if it were new (`applyRepeat`): the newest such one whose order changed since,
    /// so applying it again changes something.
    func applyRepeat() {
        guard let e = master.engine, let store = master.store as? InMemoryMasterStore else { return }
        let rows = store.journalRows
        let candidate = receivedUpdates.last { update in
            guard let first = rows.first(where: { $0.opId == update.opId }) else { return false }
            let keys = Set(first.orderUUIDs.map { $0.lowercased() })
            return rows.contains { $0.seq > first.seq && $0.orderUUIDs.contains { keys.contains($0.lowercased()) } }
        }
        guard let picked = candidate else { return }
        let link = master.links.values.filter { $0.slave == picked.slave }.min { $0.id < $1.id }
        store.opIdsHidden = true
        store.uniqueOpIds = false
        defer {
            store.opIdsHidden = false
            store.uniqueOpIds = true
        }
        if let c = link {
            trace.add(clock.now, "sim", "mutation", "op \(picked.opId) of s\(picked.slave) fed to the master again as new on link \(c.id)")
            performMaster(e.received(picked.text.bytes, from: c.id, now: masterNow))
        } else {
            let (outcome, actions) = e.localWrite(picked.message, origin: "office (local API)", now: masterNow)
            trace.add(
                clock.now, "sim", "mutation",
                "op \(picked.opId) fed to the master again as new: seq "
                    + (outcome.seq.map(String.init) ?? "nil"))
            performMaster(actions)
        }
    }

    /// Sends a slave engine's message on its link; under `reorderTerminalOps` every fourth
    /// operation message is held back and sent after the next one.
    func sendFromSlave(_ s: SlaveNode, _ text: String, on c: SimConnection) {
        guard config.mutation == .reorderTerminalOps, text.hasPrefix("{\"operation\":") else {
            network.send(text, on: c, from: .slave)
            return
        }
        if let held = s.heldBack, held.link == c.id {
            s.heldBack = nil
            network.send(text, on: c, from: .slave)
            trace.add(clock.now, "sim", "mutation", "\(s.tag) sends a held-back operation after a later one")
            network.send(held.text, on: c, from: .slave)
            return
        }
        operationsSent += 1
        if operationsSent % 4 == 0 {
            s.heldBack = (c.id, text)
            return
        }
        network.send(text, on: c, from: .slave)
    }
}
