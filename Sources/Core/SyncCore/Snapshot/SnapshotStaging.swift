/// A slave store that takes a snapshot part by part (Docs/PROTOCOL.md 4.2.2): each part's
/// orders are staged beside the replica as they arrive, the replica staying as it was, and a
/// commit with `SlaveCommit.replaceAllWithStaged` switches to them. Memory stays bounded by a
/// part; a snapshot that never ends (a lost link, a part out of order) leaves the replica whole.
/// A store without it (the simulation's in-memory stores) gets the parts collected and applied
/// whole, as `SlaveCommit.replaceAll`.
public protocol SnapshotStagingStore: SlaveStore {
    /// Stages one part's orders; `first` drops whatever an earlier snapshot staged. An order
    /// staged twice keeps its last copy.
    func stageSnapshot(_ orders: [Order], first: Bool) throws
    /// The staged copy of the order with this UUID (any case), or nil.
    func stagedOrder(uuid: String) throws -> Order?
}

/// Where a staged snapshot's reception stands: which part comes next, and what the parts so far
/// carried. Parts come in order on one link: anything else (a part out of order, another
/// snapshot's part after part 1) ends the reception, and the staged parts count for nothing.
///
///     idle --part 1 of n>1--> receiving(next 2) --part k<n--> receiving(next k+1) --part n--> idle (switch)
///     idle --part 1 of 1--> idle (switch)
///     receiving --part 1--> receiving(next 2) (starts anew)
///     any --another part--> idle (unexpected)         any --interrupted--> idle
struct StagedSnapshotReceipt {
    /// What a part means for the reception.
    enum Step: Equatable {
        /// Stage it; `first` starts the staged snapshot anew.
        case stage(first: Bool)
        /// Stage it (`first` when it is the only part), then switch: the snapshot holds
        /// `orders` orders (as sent) and these outbox entries already applied.
        case last(first: Bool, orders: Int, applied: [String: Int64])
        /// Not the part expected: nothing of it is staged; the reception ended.
        case unexpected(String)
    }

    private enum State {
        case idle
        case receiving(seq: Int64, next: Int, orders: Int, applied: [String: Int64])
    }

    private var state = State.idle

    /// True between a snapshot's first part and its last.
    var isReceiving: Bool {
        if case .receiving = state { return true }
        return false
    }

    /// A snapshot part carrying `orders` orders arrived.
    mutating func part(_ snap: SnapshotPart, orders: Int) -> Step {
        var (count, applied) = (0, [String: Int64]())
        if snap.part != 1 {
            guard case .receiving(let seq, let next, let o, let a) = state, seq == snap.seq, next == snap.part else {
                var expected = "a first part"
                if case .receiving(let seq, let next, _, _) = state { expected = "part \(next) of the snapshot at \(seq)" }
                state = .idle
                return .unexpected("part \(snap.part) of \(snap.parts) of the snapshot at \(snap.seq) came, \(expected) was expected")
            }
            (count, applied) = (o, a)
        }
        count += orders
        applied.merge(snap.applied) { a, _ in a }
        guard snap.part >= snap.parts else {
            state = .receiving(seq: snap.seq, next: snap.part + 1, orders: count, applied: applied)
            return .stage(first: snap.part == 1)
        }
        state = .idle
        return .last(first: snap.part == 1, orders: count, applied: applied)
    }

    /// The link ended, or staging failed: the parts staged so far count for nothing.
    mutating func interrupted() {
        state = .idle
    }
}
