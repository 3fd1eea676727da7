import SyncCore

/// A master store that cannot find operation ids (no journal lookup, no rejection lookup, no
/// UNIQUE constraint): every repeat of an operation is applied again. The checker must notice.
final class ForgetfulMasterStore: InMemoryMasterStore {
    override init() {
        super.init()
        uniqueOpIds = false
    }

    override func journalEntry(opId: String) throws -> JournalEntry? { nil }

    override func rejections(opId: String) throws -> [Rejection] { [] }
}

/// A slave store that keeps no answers: a POS app's retry of an answered operation id is sent
/// to the master again (used with `ForgetfulMasterStore`, so repeats reach it often).
final class AnswerForgettingSlaveStore: InMemorySlaveStore {
    override func answeredOperation(opId: String) throws -> AnsweredOperation? { nil }
}

/// A slave store whose outbox never reached the disk: a crash loses every waiting change.
final class OutboxLosingSlaveStore: InMemorySlaveStore {
    override func crashed() { loseOutbox() }
}

/// A slave store that reports every fifth commit as done without storing it.
final class CommitDroppingSlaveStore: InMemorySlaveStore {
    private var commits = 0

    override func apply(orders o: [String: Order], outbox box: [OutboxEntry], nextPosition position: Int64, _ c: SlaveCommit) throws {
        commits += 1
        if commits % 5 == 0 { return }
        try super.apply(orders: o, outbox: box, nextPosition: position, c)
    }
}
