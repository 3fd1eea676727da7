/// The simulation's virtual clock and its pending events, ordered by (time, insertion number):
/// two events due at the same millisecond run in the order they were scheduled, so a run depends
/// on its seed only.
final class SimEventQueue {
    private struct Item {
        let time: Int64
        let order: UInt64
        let action: () -> Void

        func precedes(_ other: Item) -> Bool {
            time < other.time || (time == other.time && order < other.order)
        }
    }

    /// A binary min-heap of pending events.
    private var heap: [Item] = []
    private var inserted: UInt64 = 0
    /// Virtual milliseconds since the start of the run.
    private(set) var now: Int64 = 0
    /// Events run so far.
    private(set) var executed = 0

    /// Events waiting.
    var count: Int { heap.count }

    /// The time of the next event, if any.
    var nextTime: Int64? { heap.first?.time }

    /// Runs `action` at virtual time `time` (never before now).
    func schedule(at time: Int64, _ action: @escaping () -> Void) {
        inserted += 1
        heap.append(Item(time: max(time, now), order: inserted, action: action))
        var i = heap.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard heap[i].precedes(heap[parent]) else { break }
            heap.swapAt(i, parent)
            i = parent
        }
    }

    /// Runs `action` `delay` milliseconds from now.
    func schedule(after delay: Int64, _ action: @escaping () -> Void) {
        schedule(at: now + max(0, delay), action)
    }

    /// Runs the next event; false when there is none.
    @discardableResult
    func runNext() -> Bool {
        guard let first = heap.first else { return false }
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            var i = 0
            while true {
                let l = 2 * i + 1
                let r = l + 1
                var m = i
                if l < heap.count, heap[l].precedes(heap[m]) { m = l }
                if r < heap.count, heap[r].precedes(heap[m]) { m = r }
                if m == i { break }
                heap.swapAt(i, m)
                i = m
            }
        }
        now = first.time
        executed += 1
        first.action()
        return true
    }
}
