@testable import SyncCore

/// A node of a failover simulation as the LAN sees it (`FailoverNode` in the model,
/// `EngineFailoverNode` over the engines).
protocol FailoverLANNode: AnyObject {
    var index: Int { get }
    var tag: String { get }
    var isUp: Bool { get }
    /// Cut off from the network until then (a partition, or a frozen old master).
    var isolatedUntil: Int64 { get set }
    /// Its link to the node it follows or pre-votes for.
    var link: SimConnection? { get }
    /// The links of the nodes connected to it (as master or candidate), in link order.
    var servedLinks: [SimConnection] { get }
    /// What it announces on the LAN while it serves (a master or a candidate); nil otherwise.
    var announcement: FollowPolicy.Announcement? { get }
}

/// The LAN of a store in the failover simulations: what the promotion model and the engine
/// simulation share (the faults of the fault phase, partitions, and what a node sees when it
/// browses). Node 0 is the original master.
protocol FailoverLAN: AnyObject {
    associatedtype Node: FailoverLANNode
    var nodes: [Node] { get }
    var rng: SimRandom { get }
    var clock: SimEventQueue { get }
    var network: SimNetwork { get }
    var trace: SimTrace { get }
    var faultsOn: Bool { get }
    /// The original master dies for good (else it is cut off and returns).
    var masterDiesForGood: Bool { get }
    /// A rogue on the LAN announces the store with `term=999`.
    var rogue: Bool { get }
    /// The process of `n` crashes (and starts again later).
    func crash(_ n: Node)
}

/// The rogue's announcement: a service of the store at `term=999` whose key is no member's.
let rogueAnnouncement = FollowPolicy.Announcement(id: "rogue", term: 999, role: .master)

extension FailoverLAN {
    /// One fault every 0.3-2.5 s while faults are on: a link cut (50 %), a slave isolated for
    /// 0.5-5 s (20 %), a node crashed (15 %; not the original master once it is to die for good).
    func chaosTick() {
        guard faultsOn else { return }
        let r = rng.unit()
        let up = nodes.filter { $0.isUp && $0.isolatedUntil <= clock.now }
        if r < 0.5 {
            let linked = up.filter { $0.link != nil }
            if !linked.isEmpty, let c = rng.pick(linked).link {
                trace.add(clock.now, "net", "cut", "link \(c.id)")
                network.cut(c, dead: nil)
            }
        } else if r < 0.7, let n = up.filter({ $0.index != 0 }).randomElement(using: rng) {
            isolate(n, for: rng.int(Int64(500)...5000))
        } else if r < 0.85, let n = up.filter({ $0.index != 0 || !masterDiesForGood }).randomElement(using: rng) {
            crash(n)
        }
        clock.schedule(after: rng.int(Int64(300)...2500)) { [unowned self] in self.chaosTick() }
    }

    /// Cuts `n` off the network for `millis`: its links break, it browses and is browsed by
    /// nobody, and nobody connects to it.
    func isolate(_ n: Node, for millis: Int64) {
        n.isolatedUntil = clock.now + millis
        trace.add(clock.now, n.tag, "isolated", "\(millis) ms")
        if let c = n.link { network.cut(c, dead: nil) }
        for c in n.servedLinks { network.cut(c, dead: nil) }
    }

    /// What `n` sees when it browses: the members serving, not cut off, highest term first (then
    /// by index), and the rogue when there is one (node nil). Nothing while `n` is cut off.
    func announcements(seenBy n: Node) -> [(node: Node?, announcement: FollowPolicy.Announcement)] {
        guard n.isolatedUntil <= clock.now else { return [] }
        var seen: [(node: Node?, announcement: FollowPolicy.Announcement)] = nodes.compactMap { other in
            guard other !== n, other.isUp, other.isolatedUntil <= clock.now, let a = other.announcement else { return nil }
            return (other, a)
        }
        if rogue { seen.append((nil, rogueAnnouncement)) }
        seen.sort { a, b in
            a.announcement.term != b.announcement.term
                ? a.announcement.term > b.announcement.term : (a.node?.index ?? -1) < (b.node?.index ?? -1)
        }
        return seen
    }
}

extension Array {
    /// A random element drawn from the simulation's generator.
    func randomElement(using rng: SimRandom) -> Element? { isEmpty ? nil : rng.pick(self) }
}

/// The one master of each term, for both failover checkers: node 0 alone in term 1 (the
/// original master's), one node in any other term, and that node the owner of the term's
/// ballot (`TermBallot`) unless `ballots` is false (a mutation that bids `+1`).
struct TermMasters {
    private var masters: [Int64: Int] = [:]

    /// Node `index` (`tag`, member `number`) did `what` as master of `term`: how that breaks
    /// "one master per term", if it does.
    mutating func claim(term: Int64, by index: Int, number: Int64, ballots: Bool, tag: String, _ what: String) -> [String] {
        var problems: [String] = []
        if term == 1 && index != 0 { problems.append("\(tag) \(what) in term 1, the original master's") }
        if ballots, let owner = TermBallot.owner(of: term), owner != number {
            problems.append("\(tag) \(what) in term \(term), a ballot of member \(owner)")
        }
        if let other = masters[term], other != index { problems.append("\(tag) \(what) in term \(term), which is n\(other)'s") }
        masters[term] = index
        return problems
    }
}
