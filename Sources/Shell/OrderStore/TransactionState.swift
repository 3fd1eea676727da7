/// Where an `OrderDatabase`'s connection is in its transactions: one state instead of a depth,
/// a group flag and a commit in flight that could disagree.
///
///     none --transaction--> transaction(1) --nested--> transaction(2) ... --ended--> none
///     none --beginGroup--> group(1) --nested--> group(2) ... --detach--> committing
///     committing --finishGroupCommit--> none
///     group(1) --rollbackGroup--> none
///
/// An impossible move (a group inside a transaction, a transaction while the COMMIT runs on
/// another thread) is our own bug: a `preconditionFailure`.
enum TransactionState: Equatable {
    /// Autocommit: no transaction open.
    case none
    /// `transaction` bodies running, `depth` deep (savepoints past the first).
    case transaction(depth: Int)
    /// A group (`beginGroup()`) open; `depth` counts the group as one, its savepoints after.
    case group(depth: Int)
    /// The group's COMMIT runs on another thread; the connection is lent to it.
    case committing

    /// How many transactions are open on the connection (0 when none is, or when committing).
    var depth: Int {
        switch self {
        case .none, .committing: return 0
        case .transaction(let depth), .group(let depth): return depth
        }
    }

    /// True while a group is open (not yet detached or rolled back).
    var isGroupOpen: Bool {
        if case .group = self { return true }
        return false
    }

    /// An outermost `transaction` began.
    mutating func began() {
        guard case .none = self else { preconditionFailure("a transaction began in state \(self)") }
        self = .transaction(depth: 1)
    }

    /// The outermost `transaction` ended (committed or rolled back).
    mutating func ended() {
        guard case .transaction(depth: 1) = self else { preconditionFailure("a transaction ended in state \(self)") }
        self = .none
    }

    /// A savepoint opened inside the transaction or group.
    mutating func nested() {
        switch self {
        case .transaction(let depth): self = .transaction(depth: depth + 1)
        case .group(let depth): self = .group(depth: depth + 1)
        case .none, .committing: preconditionFailure("a savepoint opened in state \(self)")
        }
    }

    /// A savepoint was released or rolled back.
    mutating func released() {
        switch self {
        case .transaction(let depth) where depth > 1: self = .transaction(depth: depth - 1)
        case .group(let depth) where depth > 1: self = .group(depth: depth - 1)
        default: preconditionFailure("a savepoint ended in state \(self)")
        }
    }

    /// `beginGroup()`.
    mutating func groupBegan() {
        guard case .none = self else { preconditionFailure("a group cannot start in state \(self)") }
        self = .group(depth: 1)
    }

    /// `detachGroupCommit()`: the COMMIT goes to another thread.
    mutating func groupDetached() {
        guard case .group(depth: 1) = self else { preconditionFailure("no group to commit in state \(self)") }
        self = .committing
    }

    /// `finishGroupCommit(_:)`: the COMMIT is over; the connection is the owner's again.
    mutating func commitFinished() {
        guard case .committing = self else { preconditionFailure("no commit to finish in state \(self)") }
        self = .none
    }

    /// `rollbackGroup()`: the open group is dropped.
    mutating func groupRolledBack() {
        guard case .group(depth: 1) = self else { preconditionFailure("no group to roll back in state \(self)") }
        self = .none
    }
}
