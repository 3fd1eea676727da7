import Foundation
import JSON
import SyncCore
import WireTestSupport
import XCTest

@testable import OrderStore

/// Base class of the retention tests: a master engine and slave engines on real SQLite files
/// in the test's directory, wall-clock times given by hand so a test can jump past the 30 days
/// the master keeps its journal and its terminals.
class RetentionTestCase: StoreTestCase {
    /// One day of wall clock, in milliseconds.
    let day: Int64 = 24 * 3600 * 1000
    /// The wall clock at which each test starts.
    let t0: Int64 = 1_750_000_000_000
    /// The paired terminal the slave engines are.
    let terminal = AuthenticatedTerminal(nodeId: "TILL-0001-AAAA", name: "till-1")

    /// A master engine with its shipped retention (30 days, the newest 100,000 entries).
    func makeMaster() throws -> (OrderDatabase, MasterEngine) {
        let db = try OrderDatabase(path: directory + "/master.sqlite")
        let master = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "shop", epoch: "e1")
        XCTAssertEqual(master.journalKeepMillis, 30 * day, "the shipped retention")
        XCTAssertEqual(master.terminalHorizonMillis, 30 * day)
        return (db, master)
    }

    /// A slave engine on its own SQLite file.
    func makeSlave() throws -> (OrderDatabase, SlaveEngine) {
        let db = try OrderDatabase(path: directory + "/slave.sqlite")
        let slave = try SlaveEngine(
            store: SQLiteSlaveStore(db: db), terminalId: terminal.nodeId, terminalName: terminal.name, configuredStore: "shop")
        return (db, slave)
    }

    /// A Create of one order.
    func create(_ uuid: String, opId: String? = nil) -> OperationMessage {
        OperationMessage(
            operation: .create, orders: [.object(JSONObject([("uuid", .string(uuid)), ("customerName", .string("Ann"))]))],
            opId: opId)
    }

    /// An Update setting the note of one order.
    func note(_ uuid: String, _ text: String, opId: String? = nil) -> OperationMessage {
        OperationMessage(operation: .update, orders: [.object(JSONObject([("uuid", .string(uuid)), ("note", .string(text))]))], opId: opId)
    }

    /// The texts `actions` send to `peer`, in order (its own sends and the broadcasts it is in).
    func texts(_ actions: [MasterEngine.Action], to peer: Int) -> [String] {
        actions.compactMap { a -> String? in
            switch a {
            case .send(peer, let t): return t.text
            case .broadcast(let t, let peers) where peers.contains(peer): return t.text
            default: return nil
            }
        }
    }

    /// What the master answers a slave that connects as peer `peer` and says hello from
    /// `lastSeq` of `epoch`, with `pending` operation ids in its outbox.
    func hello(_ master: MasterEngine, peer: Int, lastSeq: Int64, epoch: String?, pending: [String] = [], now: Int64) -> [String] {
        _ = master.peerConnected(peer, address: "10.0.0.2:\(5000 + peer)", terminal: terminal)
        var h = HelloMessage(terminalId: terminal.nodeId, terminalName: terminal.name, store: "shop", lastSeq: lastSeq, epoch: epoch)
        h.pending = pending
        return texts(master.received(h.encoded(), from: peer, now: now), to: peer)
    }

    /// Connects `slave` to `master` as `peer` and carries every message both ways until neither
    /// has more to say, acks included (sent at once); the slave's own resync (after an answer from before)
    /// is carried out by connecting again. Returns the messages the master sent.
    @discardableResult
    func converse(_ slave: SlaveEngine, _ master: MasterEngine, peer: Int, now: Int64) -> [String] {
        var sentBySlave: [String] = []
        var resync = false
        func collect(_ actions: [SlaveEngine.Action]) {
            for a in actions {
                switch a {
                case .send(let t): sentBySlave.append(t.text)
                case .scheduleAck: collect(slave.ackDue())
                case .resync: resync = true
                default: break
                }
            }
        }
        _ = master.peerConnected(peer, address: "10.0.0.2:\(5000 + peer)", terminal: terminal)
        collect(slave.linkOpened())
        var fromMaster: [String] = []
        while !sentBySlave.isEmpty {
            let batch = sentBySlave
            sentBySlave = []
            for text in batch {
                let answer = texts(master.received(text, from: peer, now: now), to: peer)
                fromMaster += answer
                for t in answer { collect(slave.received(t, now: now)) }
            }
        }
        slave.linkClosed()
        _ = master.peerDisconnected(peer, now: now)
        if resync { fromMaster += converse(slave, master, peer: peer + 1, now: now) }
        return fromMaster
    }

    /// The journal entries that carry `opId`, by sequence number.
    func journalSeqs(of opId: String, in db: OrderDatabase) throws -> [Int64] {
        try db.journal(since: 0, orderUUID: nil, limit: 1_000).filter { $0.opId == opId }.map(\.seq)
    }
}
