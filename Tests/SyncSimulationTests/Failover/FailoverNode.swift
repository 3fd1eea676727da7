@testable import SyncCore

/// One entry of a node's journal in the failover model: an operation id applied at `seq` in
/// `term`.
struct FailoverEntry: Equatable {
    var seq: Int64
    var term: Int64
    var opId: String
}

/// What a node plays now.
enum FailoverRole: String {
    /// Follows a master (or pre-votes for a candidate).
    case slave
    /// Bids for a term (`Candidacy`).
    case candidate
    /// Takes writes and serves slaves.
    case master
    /// Crashed; restarts from its store.
    case down
    /// Died for good: its store is gone.
    case gone
}

/// A peer connected to a node that serves (a master or a candidate).
struct FailoverPeer {
    /// The link.
    let link: SimConnection
    /// The connecting node.
    let node: Int
    /// Its hello, once received: where its journal ends and its term.
    var hello: (history: TermHistory, term: Int64)?
    /// True once it was sent its catch-up and `ready` by a master.
    var live = false
    /// The highest seq it said it holds (`ack` `held`).
    var held: Int64 = 0
}

/// A node of the failover model: what its store keeps (journal with terms, `sync.term`,
/// `sync.vote`, term starts, outbox, the master it follows) and what its process holds while it
/// runs (role, links, candidacy).
final class FailoverNode: FailoverLANNode {
    let index: Int
    let id: String
    let name: String
    /// False for a handheld (`ordersync pair --handheld`).
    let isVoter: Bool

    // MARK: The store (survives a crash; gone with `.gone`)
    var journal: [FailoverEntry] = []
    var term: Int64 = 1
    var vote: TermVote?
    var termStarts: [Int64: Int64] = [1: 1]
    /// Operation ids waiting for a master's answer, oldest first.
    var outbox: [String] = []
    /// The member it follows.
    var followed: String?
    /// True when it was master when it stopped (it starts as master again).
    var wasMaster = false

    // MARK: The process
    var role: FailoverRole = .slave
    var incarnation = 0
    /// Its link to the node it follows or pre-votes for, and that node's index.
    var link: SimConnection?
    var linkTarget: Int?
    /// True once the master it follows sent `ready`.
    var linkReady = false
    /// Links of the nodes connected to it (as master or candidate), by link id.
    var served: [Int: FailoverPeer] = [:]
    var candidacy: Candidacy?
    /// The voter a candidate fetches from, and how many entries it sent so far.
    var fetchSource: Int?
    var fetchedEntries = 0
    /// Bumped whenever a deadline is armed: an older timer does nothing.
    var deadlineGeneration = 0
    /// Local writes a master waits to see held by a standby: op id, seq, and the term it was
    /// applied in.
    var pendingLocal: [(opId: String, seq: Int64, term: Int64)] = []
    /// Cut off from the network until then (a partition, or a frozen old master).
    var isolatedUntil: Int64 = 0
    var writes = 0

    init(index: Int, id: String, name: String, isVoter: Bool) {
        self.index = index
        self.id = id
        self.name = name
        self.isVoter = isVoter
    }

    /// The peers of `served` in link order (a dictionary's order differs from one instance to
    /// the next, and a seed must give one run).
    var servedPeers: [FailoverPeer] { served.keys.sorted().compactMap { served[$0] } }

    /// The links of `servedPeers`.
    var servedLinks: [SimConnection] { servedPeers.map(\.link) }

    /// What it announces while it serves: its term as master or candidate.
    var announcement: FollowPolicy.Announcement? {
        switch role {
        case .master: return .init(id: id, term: announcedTerm, role: .master)
        case .candidate: return .init(id: id, term: announcedTerm, role: .candidate)
        case .slave, .down, .gone: return nil
        }
    }

    /// The newest link of node `id` among the peers.
    func peer(id: String, in nodes: [FailoverNode]) -> FailoverPeer? {
        servedPeers.last { nodes[$0.node].id == id }
    }

    /// Its member number (`TermBallot`): the original master is 1, node i is i + 1.
    var memberNumber: Int64 { Int64(index + 1) }

    var lastSeq: Int64 { journal.last?.seq ?? 0 }
    var lastTerm: Int64 { journal.last?.term ?? 1 }
    var position: LogPosition { LogPosition(lastSeq: lastSeq, lastTerm: lastTerm) }
    var isUp: Bool { role != .down && role != .gone }
    var tag: String { "n\(index)" }

    /// The entry at `seq`, if the journal holds it.
    func entry(at seq: Int64) -> FailoverEntry? {
        guard seq >= 1, seq <= Int64(journal.count) else { return nil }
        return journal[Int(seq - 1)]
    }

    /// The term a node announces in TXT: the candidacy's while it bids.
    var announcedTerm: Int64 { candidacy?.configuration.term ?? term }

    /// The node's history by terms: the first entry of each term its journal holds, and the
    /// term it became master in.
    var history: TermHistory {
        var starts = termStarts.filter { $0.value > lastSeq }
        for e in journal where starts[e.term] == nil || starts[e.term]! > e.seq { starts[e.term] = e.seq }
        if starts.isEmpty || journal.isEmpty { starts[1] = 1 }
        return TermHistory(starts: starts, lastSeq: lastSeq)
    }

    /// Takes the entries after `keep` out of the journal and puts their operation ids back in
    /// the outbox (oldest first, before what waits there, skipping one already there); the
    /// number of entries taken.
    @discardableResult
    func requeue(after keep: Int64) -> Int {
        let tail = journal.dropFirst(Int(max(0, keep)))
        let back = tail.map(\.opId).filter { !outbox.contains($0) }
        outbox = back + outbox
        journal.removeLast(tail.count)
        return tail.count
    }
}
