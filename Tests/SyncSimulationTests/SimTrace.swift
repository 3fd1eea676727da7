import SyncCore

/// A bounded record of what happened in a run (the last lines are printed when an invariant
/// fails) and a stable hash of everything that happened (two runs of a seed must agree).
final class SimTrace {
    struct Line {
        let time: Int64
        let node: String
        let what: String
        let text: String?
        let log: EngineLog?

        var rendered: String {
            var s = "t=\(time) \(node) \(what)"
            if let l = log {
                s += " " + l.metadata.map { "\($0.0)=\($0.1)" }.joined(separator: " ")
            }
            if let t = text {
                s += " " + (t.utf8.count > 240 ? String(t.prefix(240)) + "..." : t)
            }
            return s
        }
    }

    private var ring: [Line] = []
    private var next = 0
    private let capacity: Int
    /// Mix in whole message texts (slow in a debug build), not just their lengths.
    let hashesText: Bool
    private(set) var hash = StableHash()
    private(set) var count = 0

    init(capacity: Int = 80, hashesText: Bool = false) {
        self.capacity = capacity
        self.hashesText = hashesText
        ring.reserveCapacity(capacity)
    }

    /// Records one line: `what` is short, `text` is a message or detail kept by reference and
    /// only rendered when printed.
    func add(_ time: Int64, _ node: String, _ what: String, _ text: String? = nil, log: EngineLog? = nil) {
        count += 1
        hash.add(time)
        hash.add(node)
        hash.add(what)
        if let t = text {
            if hashesText { hash.add(t) } else { hash.add(Int64(t.utf8.count)) }
        }
        let line = Line(time: time, node: node, what: what, text: text, log: log)
        if ring.count < capacity {
            ring.append(line)
        } else {
            ring[next] = line
        }
        next = (next + 1) % capacity
    }

    /// Records an engine's log record.
    func log(_ time: Int64, _ node: String, _ l: EngineLog) {
        add(time, node, l.event, log: l)
    }

    /// The last `n` lines, oldest first, rendered.
    func tail(_ n: Int) -> [String] {
        let ordered = ring.count < capacity ? ring : Array(ring[next...] + ring[..<next])
        return ordered.suffix(n).map(\.rendered)
    }
}
