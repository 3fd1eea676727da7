import OrderStore

@testable import SyncCore

/// A candidate's state while it bids for a term (the node's `MasterCandidacy`): the real
/// `Candidacy`, the messages held until it is master proper, and the tail being fetched.
final class EngineCandidate {
    /// The election's rules.
    var election: Candidacy
    /// The store served and the lineage it keeps serving (the replica's epoch).
    let storeId: String
    let lineage: String
    /// Terminals' messages held until master proper, in arrival order: link id and text.
    var held: [(link: Int, text: String)] = []
    /// The voter a tail is fetched from (node index) and the entries it sent so far.
    var fetching: (voter: Int, entries: [JournalEntry])?
    /// Bumped whenever a deadline is armed: an older timer does nothing.
    var deadlineGeneration = 0

    init(_ configuration: Candidacy.Configuration, storeId: String, lineage: String) {
        election = Candidacy(configuration)
        self.storeId = storeId
        self.lineage = lineage
    }

    /// The term it stands for.
    var term: Int64 { election.configuration.term }
}

/// What a node plays now.
enum EngineFailoverRole {
    /// Follows a master through the real `SlaveEngine`.
    case slave(SlaveEngine)
    /// Bids for a term.
    case candidate(EngineCandidate)
    /// Takes writes and serves slaves through the real `MasterEngine`.
    case master(MasterEngine)
    /// Crashed; restarts from its store.
    case down
    /// Died for good: its store is gone.
    case gone

    /// A short name for the trace.
    var name: String {
        switch self {
        case .slave: return "slave"
        case .candidate: return "candidate"
        case .master: return "master"
        case .down: return "down"
        case .gone: return "gone"
        }
    }
}

/// A link served by a master or a candidate.
struct EngineFailoverPeer {
    /// The link (its id is the master engine's peer id).
    let link: SimConnection
    /// The connecting node.
    let node: Int
}

/// One terminal of the engine failover simulation: its SQLite store (an in-memory database that
/// survives a crash, gone when its disk dies) and, while its process runs, the engine of its
/// role, its links and what its POS app waits for.
final class EngineFailoverNode: FailoverLANNode {
    let index: Int
    /// Its node id (what its key proves on a link).
    let id: String
    let name: String
    /// False for a handheld (`ordersync pair --handheld`).
    let isVoter: Bool
    /// The store (nil once its disk died).
    var db: OrderDatabase?
    /// The slave adapter over `db` (with the simulation's mutation, if any).
    var slaveStore: EngineFailoverSlaveStore?

    var role: EngineFailoverRole = .down
    /// Bumped at every start, crash and change of role: timers of an earlier one do nothing.
    var incarnation = 0
    /// Its link to the node it follows or pre-votes for, and that node's index.
    var link: SimConnection?
    var linkTarget: Int?
    var reconnectScheduled = false
    /// Links of the nodes connected to it (as master or candidate), by link id.
    var served: [Int: EngineFailoverPeer] = [:]
    /// Cut off from the network until then (a partition, or a frozen old master).
    var isolatedUntil: Int64 = 0
    /// The master it follows in its term once that master's link is live (in memory, as the
    /// node's `followedMaster`).
    var followed: String?
    /// Master local API writes waiting for a standby (answer: op id).
    var waits = ReplicationWaits<String, Int64>()
    /// When a master first saw a member announce a later term (`considerStepDown`).
    var laterTermSeenAt: Int64?
    var crashes = 0

    init(index: Int, id: String, name: String, isVoter: Bool) {
        self.index = index
        self.id = id
        self.name = name
        self.isVoter = isVoter
    }

    var tag: String { "n\(index)" }

    var isUp: Bool {
        switch role {
        case .down, .gone: return false
        default: return true
        }
    }

    var master: MasterEngine? {
        if case .master(let e) = role { return e }
        return nil
    }

    var slave: SlaveEngine? {
        if case .slave(let e) = role { return e }
        return nil
    }

    var candidate: EngineCandidate? {
        if case .candidate(let c) = role { return c }
        return nil
    }

    /// The peers of `served` in link order (a seed must give one run).
    var servedPeers: [EngineFailoverPeer] { served.keys.sorted().compactMap { served[$0] } }

    /// The links of `servedPeers`.
    var servedLinks: [SimConnection] { servedPeers.map(\.link) }

    /// What it announces while it serves: its term as master or candidate.
    var announcement: FollowPolicy.Announcement? {
        switch role {
        case .master(let e): return .init(id: id, term: e.terms.term, role: .master)
        case .candidate(let c): return .init(id: id, term: c.term, role: .candidate)
        case .slave, .down, .gone: return nil
        }
    }

    /// The newest served link of node `index`.
    func peer(node: Int) -> EngineFailoverPeer? { servedPeers.last { $0.node == node } }

    /// The term it announces: a master's, a candidate's, else the stored one.
    var announcedTerm: Int64 {
        switch role {
        case .master(let e): return e.terms.term
        case .candidate(let c): return c.term
        default: return storedTerm
        }
    }

    /// `sync.term` as stored (1 without a store).
    var storedTerm: Int64 { (try? db?.term()) ?? 1 }

    /// Its member number (`TermBallot`): the original master is 1, node i is i + 1.
    var memberNumber: Int64 { Int64(index + 1) }

    /// Where its history ends (`OrderDatabase.standbyPosition`).
    var position: LogPosition { (try? db?.standbyPosition()) ?? LogPosition(lastSeq: 0, lastTerm: 1) }

    /// Every order of its store, by key.
    var orders: [String: Order] {
        Dictionary(uniqueKeysWithValues: ((try? db?.allOrders()) ?? []).map { ($0.key, $0) })
    }
}
