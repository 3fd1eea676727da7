import Foundation
import JSON
import OrderStore
import SyncCore
import WireTestSupport
import XCTest

/// Snapshots handed out a part at a time (`MasterEngine.pacesSnapshots`), with the operations
/// applied meanwhile held and sent after the last part, on the real SQLite stores.
final class SnapshotStreamTests: XCTestCase {
    var dir: String!

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "ordersync-stream-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    private func order(_ uuid: String, _ name: String) -> JSONValue {
        .object(
            JSONObject([
                ("uuid", .string(uuid)), ("customerName", .string(name)),
                ("created", .string("2016-01-12T21:35:16+0800")),
            ]))
    }

    private func sends(_ actions: [MasterEngine.Action], to peer: Int) -> [String] {
        actions.compactMap {
            switch $0 {
            case .send(let p, let text) where p == peer: return text.text
            case .broadcast(let text, let peers) where peers.contains(peer): return text.text
            default: return nil
            }
        }
    }

    /// A paced master with `count` orders, snapshot parts of 2, and a slave engine connected
    /// as peer 1 that has sent its hello.
    private func joinedPair(orders count: Int) throws -> (MasterEngine, SlaveEngine, OrderDatabase, [MasterEngine.Action]) {
        let master = try MasterEngine(
            store: SQLiteMasterStore(db: try OrderDatabase(path: dir + "/m.sqlite")), storeId: "s", epoch: "e")
        master.pacesSnapshots = true
        master.snapshotChunk = 2
        for i in 0..<count {
            _ = master.apply(OperationMessage(operation: .create, orders: [order(UUID().uuidString, "c\(i)")]), origin: "m", now: 1_000)
        }
        let sdb = try OrderDatabase(path: dir + "/s.sqlite")
        let slave = try SlaveEngine(store: SQLiteSlaveStore(db: sdb), terminalId: "t", terminalName: "bar", configuredStore: "s")
        XCTAssertEqual(master.peerConnected(1, address: "10.0.0.2:1", terminal: AuthenticatedTerminal(nodeId: "t", name: "bar")), [])
        var hello: String?
        for case .send(let text) in slave.linkOpened() { hello = text.text }
        let started = master.received(try XCTUnwrap(hello), from: 1, now: 1_000)
        return (master, slave, sdb, started)
    }

    func testPartsComeOnlyWhenAskedAndOperationsMeanwhileFollowTheLastPartInOrder() throws {
        let (master, slave, sdb, started) = try joinedPair(orders: 5)
        XCTAssertEqual(sends(started, to: 1), [], "a paced snapshot sends nothing until asked")
        XCTAssertTrue(master.isReceivingSnapshot(1))
        XCTAssertEqual(master.peers[1]?.phase, .receivingSnapshot)

        // A second terminal is live; it writes while peer 1's snapshot goes out.
        master.storePOSFence = 2
        _ = master.peerConnected(2, address: "10.0.0.3:1", terminal: nil)
        XCTAssertTrue(master.isReceivingSnapshot(2), "a StorePOS terminal's snapshot is paced too")
        var toPeer2: [String] = []
        var pauses = 0
        while master.isReceivingSnapshot(2) {
            if master.isSnapshotSettling(2) {
                XCTAssertEqual(master.snapshotDue(for: 2), [], "nothing while it waits at a pause")
                pauses += 1
                toPeer2 += sends(master.snapshotSettled(2), to: 2)
            } else {
                toPeer2 += sends(master.snapshotDue(for: 2), to: 2)
            }
        }
        XCTAssertEqual(pauses, 2)
        XCTAssertEqual(
            toPeer2.count, 12, "a Remove per order, a fence of 2, three parts of two orders, a fence, no ready for StorePOS")

        var toPeer1: [String] = []
        toPeer1 += sends(master.snapshotDue(for: 1), to: 1)
        let extra = UUID().uuidString
        let (outcome, write) = master.localWrite(
            OperationMessage(operation: .create, orders: [order(extra, "during")], opId: "w1"), origin: "api", now: 2_000)
        XCTAssertEqual(outcome.seq, 6)
        XCTAssertEqual(sends(write, to: 1), [], "a live operation does not overtake the snapshot")
        XCTAssertEqual(sends(write, to: 2).count, 1, "a live terminal gets it at once")
        let update = master.localWrite(
            OperationMessage(operation: .update, orders: [.object(JSONObject([("uuid", .string(extra)), ("tableSize", .int(4))]))]),
            origin: "api", now: 2_001
        ).1
        XCTAssertEqual(sends(update, to: 1), [])

        while master.isReceivingSnapshot(1) { toPeer1 += sends(master.snapshotDue(for: 1), to: 1) }
        XCTAssertEqual(master.snapshotDue(for: 1), [], "nothing more once complete")
        XCTAssertEqual(master.peers[1]?.phase, .live)
        // Parts 1-3 (at seq 5), ready, then the two held operations (seq 6, 7).
        XCTAssertEqual(toPeer1.count, 6, "\(toPeer1)")
        XCTAssertTrue(toPeer1[0].contains("\"part\":1") && toPeer1[2].contains("\"part\":3"), toPeer1[2])
        XCTAssertTrue(toPeer1[3].contains("ready"), toPeer1[3])
        XCTAssertTrue(toPeer1[4].contains("\"seq\":6") && toPeer1[5].contains("\"seq\":7"), "\(toPeer1[4...])")

        for text in toPeer1 { _ = slave.received(text, now: 3_000) }
        XCTAssertEqual(slave.lastSeq, 7)
        XCTAssertEqual(try sdb.orderCount(), 6)
        XCTAssertEqual(try sdb.order(uuid: extra)?.tableSize, 4)

        // Once live, broadcasts reach it directly.
        let later = master.localWrite(
            OperationMessage(operation: .create, orders: [order(UUID().uuidString, "after")]), origin: "api", now: 4_000)
        XCTAssertEqual(sends(later.1, to: 1).count, 1)
    }

    func testATerminalFallingTooFarBehindDuringItsSnapshotIsClosedToStartAgain() throws {
        let (master, _, _, _) = try joinedPair(orders: 3)
        master.maxHeldSnapshotBytes = 400
        _ = master.snapshotDue(for: 1)
        var closed: [MasterEngine.Action] = []
        for i in 0..<10 where closed.isEmpty {
            let write = master.localWrite(
                OperationMessage(operation: .create, orders: [order(UUID().uuidString, "w\(i)")]), origin: "api", now: 2_000
            ).1
            closed = write.filter { if case .close(1, _, _) = $0 { return true } else { return false } }
        }
        XCTAssertEqual(closed, [.close(peer: 1, code: MasterEngine.tryAgainLater, reason: "too far behind during its snapshot")])
        XCTAssertFalse(master.isReceivingSnapshot(1))
        XCTAssertEqual(master.peers[1]?.phase, .closing)
        XCTAssertEqual(master.snapshotDue(for: 1), [])
        _ = master.peerDisconnected(1, now: 3_000)
        XCTAssertNil(master.peers[1])
    }

    func testTerminalsJoiningAtOneSequenceShareOneRead() throws {
        let (master, _, _, _) = try joinedPair(orders: 4)
        _ = master.peerConnected(2, address: "10.0.0.3:1", terminal: nil)
        var a: [String] = []
        var b: [String] = []
        while master.isReceivingSnapshot(1) || master.isReceivingSnapshot(2) {
            a += sends(master.snapshotStep(for: 1), to: 1)
            b += sends(master.snapshotStep(for: 2), to: 2)
        }
        // The StorePOS terminal's Creates follow a Remove per order; the orders are the same.
        func orders(_ texts: some Sequence<String>) -> [JSONValue] {
            texts.flatMap { (try? JSONParser.parse($0).objectValue?["orders"]?.arrayValue) ?? [] }
        }
        XCTAssertEqual(b.count, 4 + 2 * master.storePOSFence + 2)
        XCTAssertEqual(
            orders(a.prefix(2)), orders(b.filter { $0.contains(#""operation":0"#) }), "the same orders from the same read")
        XCTAssertEqual(try master.snapshotMessages().messages.map(\.text), Array(a.prefix(2)), "the unpaced snapshot is the same")
    }

    func testAStorePOSAppGetsWhatWasHeldOnlyAfterTheLastPauseAndLiveChangesOfOneOrderSpacedApart() throws {
        let master = try MasterEngine(
            store: SQLiteMasterStore(db: try OrderDatabase(path: dir + "/m.sqlite")), storeId: "s", epoch: "e")
        master.pacesSnapshots = true
        master.storePOSFence = 3
        let first = UUID().uuidString
        _ = master.apply(OperationMessage(operation: .create, orders: [order(first, "one")]), origin: "m", now: 1_000)
        _ = master.peerConnected(2, address: "10.0.0.3:1", terminal: nil)
        var sent: [String] = []
        while !master.isSnapshotSettling(2) { sent += sends(master.snapshotDue(for: 2), to: 2) }
        XCTAssertEqual(sent.count, 1 + 3, "the Remove, the fence")
        sent += sends(master.snapshotSettled(2), to: 2)
        while !master.isSnapshotSettling(2) { sent += sends(master.snapshotDue(for: 2), to: 2) }
        XCTAssertEqual(sent.count, 1 + 3 + 1 + 3, "the Create, the fence")

        // Written while it waits: held, spaced already (an Update of the order just created).
        let update = OperationMessage(
            operation: .update, orders: [.object(JSONObject([("uuid", .string(first)), ("tableSize", .int(4))]))])
        XCTAssertEqual(sends(master.localWrite(update, origin: "api", now: 2_000).1, to: 2), [])
        XCTAssertEqual(master.snapshotDue(for: 2), [])
        let after = sends(master.snapshotSettled(2), to: 2)
        XCTAssertEqual(after.count, 1, "held: the Update, no fence needed (the sequence's own fence is before it)")
        XCTAssertTrue(after[0].contains(#""operation":1"#), after[0])
        XCTAssertFalse(master.isReceivingSnapshot(2))
        XCTAssertEqual(master.peers[2]?.phase, .live)

        // Live: a second Update of the same order right after the held one (1 promise before):
        // two empty Removes first, so that 3 promises separate them.
        let second = OperationMessage(
            operation: .update, orders: [.object(JSONObject([("uuid", .string(first)), ("tableSize", .int(5))]))])
        let spaced = sends(master.localWrite(second, origin: "api", now: 3_000).1, to: 2)
        XCTAssertEqual(spaced.count, 2 + 1, "\(spaced)")
        XCTAssertEqual(Array(spaced.prefix(2)), Array(repeating: StorePOSSpacing.fenceMessage.text, count: 2))
        XCTAssertTrue(spaced[2].contains(#""tableSize":5"#), spaced[2])
        // Another order: no fence.
        let other = master.localWrite(
            OperationMessage(operation: .create, orders: [order(UUID().uuidString, "two")]), origin: "api", now: 4_000)
        XCTAssertEqual(sends(other.1, to: 2).count, 1)
    }

    /// A standby receiving its snapshot holds no write before its last part: a write through
    /// the local API meanwhile does not wait `--sync-timeout` for it but is answered at once,
    /// unreplicated (Docs/PROTOCOL.md 7.8); once the standby is live it is waited for again.
    func testAWriteDoesNotWaitForAStandbyStillReceivingItsSnapshot() throws {
        let (master, slave, _, _) = try joinedPair(orders: 5)
        XCTAssertEqual(master.standbys.map(\.receivingSnapshot), [true])
        let (outcome, _) = master.localWrite(
            OperationMessage(operation: .create, orders: [order(UUID().uuidString, "during")], opId: "w1"), origin: "api",
            now: 2_000)
        var waits = ReplicationWaits<String, Int>()
        let during = try XCTUnwrap(
            waits.add(seq: try XCTUnwrap(outcome.seq), replicas: 1, standbys: master.standbys, deadline: 2_000, answer: "w1"),
            "answered at once, not after the timeout")
        XCTAssertFalse(during.replicated)
        XCTAssertEqual(during.wanted, 1)

        var toSlave: [[UInt8]] = []
        while master.isReceivingSnapshot(1) {
            for case .send(1, let bytes) in master.snapshotDue(for: 1) { toSlave.append(bytes) }
        }
        XCTAssertEqual(master.standbys.map(\.receivingSnapshot), [false])
        XCTAssertEqual(master.standbys.map(\.switchingToSnapshot), [true], "gone out whole, not yet switched to")
        // Written while the standby switches its copy to the snapshot (seconds for a million
        // orders): it cannot hold it before that commit, so it is not waited for either.
        let (switching, _) = master.localWrite(
            OperationMessage(operation: .create, orders: [order(UUID().uuidString, "switching")], opId: "w2"), origin: "api",
            now: 3_000)
        let meanwhile = try XCTUnwrap(
            waits.add(seq: try XCTUnwrap(switching.seq), replicas: 1, standbys: master.standbys, deadline: 5_000, answer: "w2"),
            "answered at once, not after the timeout")
        XCTAssertFalse(meanwhile.replicated)

        // The slave takes the parts; the last one's actions (sent once its commit is on disk)
        // ack the switch at once, before `ready` is even read.
        var switchAck: [UInt8]?
        for bytes in toSlave where switchAck == nil {
            let actions = slave.received(bytes, now: 3_000)
            guard actions.contains(where: { if case .log(let l) = $0 { return l.event == "snapshot.received" } else { return false } })
            else { continue }
            for case .send(let ack) in actions where ack.text.contains(#""type":"ack""#) { switchAck = ack }
        }
        let ack = try XCTUnwrap(switchAck, "no ack with the switch")
        XCTAssertTrue(ack.text.contains(#""held":\#(try XCTUnwrap(master.peers[1]?.copyFloor))"#), ack.text)
        _ = master.received(ack, from: 1, now: 3_100)
        XCTAssertEqual(master.standbys.map(\.switchingToSnapshot), [false], "its ack says its copy holds the snapshot")
        let (after, _) = master.localWrite(
            OperationMessage(operation: .create, orders: [order(UUID().uuidString, "after")], opId: "w3"), origin: "api",
            now: 3_200)
        XCTAssertNil(
            waits.add(seq: try XCTUnwrap(after.seq), replicas: 1, standbys: master.standbys, deadline: 5_000, answer: "w3"),
            "a standby that holds its snapshot is waited for")
    }

    /// A standby that joined by a catch-up (no snapshot) is waited for before its first ack, as
    /// it always was: only a copy switching to a snapshot is passed over.
    func testAStandbyThatCaughtUpIsWaitedForBeforeItsFirstAck() throws {
        let master = try MasterEngine(
            store: SQLiteMasterStore(db: try OrderDatabase(path: dir + "/m.sqlite")), storeId: "s", epoch: "e")
        let sdb = try OrderDatabase(path: dir + "/s.sqlite")
        let slave = try SlaveEngine(store: SQLiteSlaveStore(db: sdb), terminalId: "t", terminalName: "bar", configuredStore: "s")
        // A first link: the (empty) snapshot, then the slave acks and leaves.
        _ = master.peerConnected(1, address: "10.0.0.2:1", terminal: AuthenticatedTerminal(nodeId: "t", name: "bar"))
        var hello: [UInt8]?
        for case .send(let text) in slave.linkOpened() { hello = text }
        for case .send(1, let bytes) in master.received(try XCTUnwrap(hello), from: 1, now: 1_000) {
            _ = slave.received(bytes, now: 1_000)
        }
        slave.linkClosed()
        _ = master.peerDisconnected(1, now: 1_100)
        _ = master.apply(OperationMessage(operation: .create, orders: [order(UUID().uuidString, "missed")]), origin: "m", now: 1_200)
        // The second link catches up (one entry), no snapshot.
        _ = master.peerConnected(2, address: "10.0.0.2:2", terminal: AuthenticatedTerminal(nodeId: "t", name: "bar"))
        for case .send(let text) in slave.linkOpened() { hello = text }
        _ = master.received(try XCTUnwrap(hello), from: 2, now: 1_300)
        XCTAssertEqual(master.peers[2]?.phase, .live)
        XCTAssertEqual(master.peers[2]?.copyIsSnapshot, false)
        XCTAssertEqual(master.standbys.map(\.isTakingSnapshot), [false])
        let (write, _) = master.localWrite(
            OperationMessage(operation: .create, orders: [order(UUID().uuidString, "w")], opId: "w1"), origin: "api", now: 1_400)
        var waits = ReplicationWaits<String, Int>()
        XCTAssertNil(
            waits.add(seq: try XCTUnwrap(write.seq), replicas: 1, standbys: master.standbys, deadline: 5_000, answer: "w1"),
            "waited for")
    }

    /// Parts asked for several at a time are the parts asked for one at a time.
    func testPartsAskedForTogetherAreThoseAskedForOneByOne() throws {
        var streams: [[String]] = []
        for together in [1, 4, 1_000] {
            let master = try MasterEngine(
                store: SQLiteMasterStore(db: try OrderDatabase(path: dir + "/m\(together).sqlite")), storeId: "s", epoch: "e")
            master.pacesSnapshots = true
            master.snapshotChunk = 2
            master.storePOSFence = 3
            for i in 0..<7 {
                _ = master.apply(
                    OperationMessage(operation: .create, orders: [order("9437C8F5-D742-46CB-9847-00000000000\(i)", "c\(i)")]),
                    origin: "m", now: 1_000)
            }
            _ = master.peerConnected(2, address: "10.0.0.3:1", terminal: nil)
            var sent: [String] = []
            while master.isReceivingSnapshot(2) {
                if master.isSnapshotSettling(2) {
                    sent += sends(master.snapshotSettled(2), to: 2)
                } else {
                    let due = sends(master.snapshotDue(for: 2, maxParts: together), to: 2)
                    XCTAssertLessThanOrEqual(due.count, together)
                    sent += due
                }
            }
            streams.append(sent)
        }
        XCTAssertEqual(streams[0].count, 7 + 3 + 4 + 3)
        XCTAssertEqual(streams[1], streams[0])
        XCTAssertEqual(streams[2], streams[0])
        // A byte budget stops at the part that reaches it.
        let (master, _, _, _) = try joinedPair(orders: 5)
        XCTAssertEqual(sends(master.snapshotDue(for: 1, maxParts: 10, maxBytes: 1), to: 1).count, 1)
    }
}
