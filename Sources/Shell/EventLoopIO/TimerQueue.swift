/// Identifies a scheduled timer so it can be cancelled.
public struct TimerHandle: Hashable, Sendable {
    let id: UInt64
}

/// Timers ordered by deadline in a binary min-heap.
///
/// Cancelled timers are removed from `bodies` at once and their heap entries are skipped when
/// they reach the top; the heap is rebuilt when stale entries outnumber live ones.
struct TimerQueue {
    private struct Entry {
        let deadline: MonotonicInstant
        let id: UInt64

        func precedes(_ other: Entry) -> Bool {
            deadline != other.deadline ? deadline < other.deadline : id < other.id
        }
    }

    private var heap: [Entry] = []
    private var bodies: [UInt64: () -> Void] = [:]
    private var nextID: UInt64 = 1

    /// Number of timers still scheduled.
    var count: Int { bodies.count }

    mutating func schedule(deadline: MonotonicInstant, _ body: @escaping () -> Void) -> TimerHandle {
        let id = nextID
        nextID += 1
        bodies[id] = body
        push(Entry(deadline: deadline, id: id))
        return TimerHandle(id: id)
    }

    /// Returns `true` when the timer was still scheduled.
    @discardableResult
    mutating func cancel(_ handle: TimerHandle) -> Bool {
        guard bodies.removeValue(forKey: handle.id) != nil else {
            return false
        }
        if heap.count > 64 && heap.count > 2 * bodies.count {
            heap = heap.filter { bodies[$0.id] != nil }
            heapify()
        }
        return true
    }

    /// The earliest live deadline, if any.
    mutating func nextDeadline() -> MonotonicInstant? {
        dropCancelledTop()
        return heap.first?.deadline
    }

    /// Removes and returns the bodies of every timer due at `now`, earliest first.
    mutating func popExpired(now: MonotonicInstant) -> [() -> Void] {
        var due: [() -> Void] = []
        while true {
            dropCancelledTop()
            guard let top = heap.first, top.deadline <= now else {
                return due
            }
            pop()
            if let body = bodies.removeValue(forKey: top.id) {
                due.append(body)
            }
        }
    }

    private mutating func dropCancelledTop() {
        while let top = heap.first, bodies[top.id] == nil {
            pop()
        }
    }

    private mutating func push(_ entry: Entry) {
        heap.append(entry)
        siftUp(heap.count - 1)
    }

    private mutating func pop() {
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            siftDown(0)
        }
    }

    private mutating func heapify() {
        var index = heap.count / 2
        while index > 0 {
            index -= 1
            siftDown(index)
        }
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count && heap[left].precedes(heap[smallest]) { smallest = left }
            if right < heap.count && heap[right].precedes(heap[smallest]) { smallest = right }
            if smallest == parent { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
