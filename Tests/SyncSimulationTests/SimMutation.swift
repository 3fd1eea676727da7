import SyncCore

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
