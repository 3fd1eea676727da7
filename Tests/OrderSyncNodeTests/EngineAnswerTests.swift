import Foundation
import JSON
import OrderStore
import SyncCore
import WireTestSupport
import XCTest

@testable import OrderSyncNode

/// Answers that must not change with retries, and pending writes that stay visible.
final class EngineAnswerTests: XCTestCase {
    var dir: String!

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "ordersync-answers-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    func update(_ uuid: String, _ fields: [(String, JSONValue)]) -> JSONValue {
        .object(JSONObject([("uuid", .string(uuid))] + fields))
    }

    func texts(_ actions: [MasterEngine.Action], to peer: Int) -> [String] { actions.texts(to: peer) }

    func testARefusedOperationIsAnsweredTheSameWayWhenRetriedEvenIfItWouldNowSucceed() throws {
        let db = try OrderDatabase(path: dir + "/m.sqlite")
        let master = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e")
        _ = master.peerConnected(1, address: "a", terminal: AuthenticatedTerminal(nodeId: "t1", name: "bar"))
        _ = master.received(
            HelloMessage(terminalId: "t1", terminalName: "bar", store: "s", lastSeq: 0, epoch: "e").encoded(), from: 1, now: 1)
        let u = UUID().uuidString.lowercased()
        let op = OperationMessage(operation: .update, orders: [update(u, [("note", .string("late"))])], opId: "op-1").encoded()
        let first = texts(master.received(op, from: 1, now: 2), to: 1)
        XCTAssertEqual(first.count, 2, "an error, then the result")
        XCTAssertTrue(first[0].contains("not_found"))
        XCTAssertTrue(first[1].contains("\"failed\":1"))
        // The order appears; the same operation id sent again is not applied now.
        _ = master.apply(
            OperationMessage(operation: .create, orders: [.object(JSONObject([("uuid", .string(u)), ("customerName", .string("A"))]))]),
            origin: "m", now: 3)
        let again = texts(master.received(op, from: 1, now: 4), to: 1)
        // The same answer, word for word: the order's place in the message is found again.
        XCTAssertEqual(again, first)
        XCTAssertNil(try db.order(uuid: u)?.note)
        XCTAssertEqual(master.lastSeq, 1)

        // Partly applied: the refused second order keeps its index when the operation is repeated.
        let unknown = UUID().uuidString.lowercased()
        let partly = OperationMessage(
            operation: .update,
            orders: [
                update(u, [("note", .string("now"))]),
                update(unknown.uppercased(), [("note", .string("x"))]),
            ],
            opId: "op-2"
        ).encoded()
        let firstPartly = texts(master.received(partly, from: 1, now: 5), to: 1)
        XCTAssertTrue(firstPartly[0].contains("\"index\":1"), firstPartly[0])
        let error = try XCTUnwrap(firstPartly.first { $0.contains("not_found") })
        let repeated = texts(master.received(partly, from: 1, now: 6), to: 1)
        XCTAssertEqual(repeated.filter { $0.contains("not_found") }, [error])
        XCTAssertEqual(master.lastSeq, 2, "the repeat is not applied again")
    }

    func testErrorsReachTheSenderBeforeTheBroadcastAndTheResultLast() throws {
        let db = try OrderDatabase(path: dir + "/m.sqlite")
        let master = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e")
        _ = master.peerConnected(1, address: "a", terminal: AuthenticatedTerminal(nodeId: "t1", name: "bar"))
        _ = master.received(
            HelloMessage(terminalId: "t1", terminalName: "bar", store: "s", lastSeq: 0, epoch: "e").encoded(), from: 1, now: 1)
        let good = UUID().uuidString.lowercased()
        let op = OperationMessage(
            operation: .create,
            orders: [
                .object(JSONObject([("uuid", .string(good)), ("customerName", .string("A"))])),
                .object(JSONObject([("uuid", .string("nope"))])),
            ], opId: "op-2"
        ).encoded()
        let out = texts(master.received(op, from: 1, now: 2), to: 1)
        XCTAssertEqual(out.count, 3)
        XCTAssertTrue(out[0].hasPrefix("{\"type\":\"error\""), out[0])
        XCTAssertTrue(out[1].contains("\"seq\":1"), out[1])
        XCTAssertTrue(out[2].contains("\"type\":\"result\""), out[2])
    }

    /// A master and a live slave on SQLite files, both holding order `u` (seq 1).
    func masterAndSlaveSharingAnOrder() throws -> (OrderDatabase, MasterEngine, OrderDatabase, SlaveEngine, String) {
        let mdb = try OrderDatabase(path: dir + "/m.sqlite")
        let master = try MasterEngine(store: SQLiteMasterStore(db: mdb), storeId: "s", epoch: "e")
        let sdb = try OrderDatabase(path: dir + "/s.sqlite")
        let slave = try SlaveEngine(store: SQLiteSlaveStore(db: sdb), terminalId: "t", terminalName: "bar", configuredStore: "s")
        let u = UUID().uuidString.lowercased()
        let created = master.apply(
            OperationMessage(operation: .create, orders: [.object(JSONObject([("uuid", .string(u)), ("customerName", .string("A"))]))]),
            origin: "m", now: 1)
        _ = slave.linkOpened()
        _ = slave.received(try XCTUnwrap(created.broadcast), now: 1)
        return (mdb, master, sdb, slave, u)
    }

    func testAPendingChangeStaysVisibleOverAnotherTerminalsBroadcast() throws {
        let (_, master, sdb, slave, u) = try masterAndSlaveSharingAnOrder()
        // Offline, this terminal renames the order; meanwhile another terminal sets the table.
        let (w, _) = slave.localWrite(
            OperationMessage(operation: .update, orders: [update(u, [("customerName", .string("Mine"))])]), opId: "op-m", now: 2)
        XCTAssertNil(w.failure)
        let other = master.apply(
            OperationMessage(operation: .update, orders: [update(u, [("tableName", .string("T4"))])]), origin: "m", now: 3)
        _ = slave.received(try XCTUnwrap(other.broadcast), now: 3)
        let shown = try XCTUnwrap(sdb.order(uuid: u))
        XCTAssertEqual(shown.customerName, "Mine", "the terminal still reads its own write")
        XCTAssertEqual(shown.tableName, "T4", "and sees the other terminal's change")
        XCTAssertEqual(slave.lastSeq, 2)
        XCTAssertEqual(slave.syncState(of: u), .pending)
        XCTAssertEqual(slave.ackSeq, 1, "while the change waits, the slave acknowledges no more than where it was made")
        // Across a restart too.
        let restarted = try SlaveEngine(store: SQLiteSlaveStore(db: sdb), terminalId: "t", terminalName: "bar", configuredStore: "s")
        XCTAssertEqual(restarted.ackSeq, 1)
        XCTAssertEqual(restarted.lastSeq, 2)
    }

    /// Runs hello, snapshot or catch-up and everything after between one slave and the master.
    func converse(_ slave: SlaveEngine, _ master: MasterEngine, peer: Int = 1, now: Int64) {
        var toMaster = slave.linkOpened().compactMap { a -> String? in
            if case .send(let t) = a { return t.text }; return nil
        }
        _ = master.peerConnected(peer, address: "10.0.0.2:5000", terminal: AuthenticatedTerminal(nodeId: "t", name: "bar"))
        while !toMaster.isEmpty {
            let toSlave = toMaster.flatMap { texts(master.received($0, from: peer, now: now), to: peer) }
            toMaster = toSlave.flatMap { t in
                slave.received(t, now: now).compactMap { a -> String? in
                    if case .send(let m) = a { return m.text }; return nil
                }
            }
        }
    }

    func testASnapshotSettlesTheOutboxEntriesTheMasterAlreadyAppliedInsteadOfApplyingThemAgain() throws {
        let (mdb, master, sdb, slave, u) = try masterAndSlaveSharingAnOrder()
        slave.linkClosed()
        // Two renames wait in the outbox; the master applied both, but the link dropped before
        // the answers arrived.
        _ = slave.localWrite(
            OperationMessage(operation: .update, orders: [update(u, [("customerName", .string("Zoë"))])]), opId: "op-1", now: 2)
        _ = slave.localWrite(
            OperationMessage(operation: .update, orders: [update(u, [("customerName", .string("Table party")), ("version", .int(2))])]),
            opId: "op-2", now: 2)
        for e in slave.outbox {
            guard case .success(.operation(let m)) = ClientMessage.decode(e.message) else { return XCTFail("outbox entry is an operation") }
            XCTAssertNotNil(master.apply(m, origin: "bar", now: 3).seq)
        }
        XCTAssertEqual(try mdb.order(uuid: u)?.customerName, "Table party")
        // Far behind (or another epoch): the master answers with a snapshot.
        master.maxCatchUpEntries = 0
        converse(slave, master, now: 4)
        XCTAssertEqual(try sdb.outboxCount(), 0, "the snapshot said both are applied")
        XCTAssertEqual(try sdb.order(uuid: u)?.customerName, "Table party", "the older rename is not applied again on top")
        XCTAssertEqual(try sdb.order(uuid: u)?.version, 3)
        XCTAssertEqual(master.lastSeq, 3, "nothing applied twice")
        XCTAssertEqual(slave.syncState(of: u), .synced)
        XCTAssertEqual(try sdb.answeredOperation(opId: "op-2")?.seq, 3)
        XCTAssertEqual(try sdb.answeredOperation(opId: "op-2")?.applied.map(\.customerName), ["Table party"])
    }

    func testARetryOfAnAnsweredOperationGetsTheFirstAnswerAndChangesNothingEvenAfterARestart() throws {
        let mdb = try OrderDatabase(path: dir + "/m.sqlite")
        let master = try MasterEngine(store: SQLiteMasterStore(db: mdb), storeId: "s", epoch: "e")
        let sdb = try OrderDatabase(path: dir + "/s.sqlite")
        let slave = try SlaveEngine(store: SQLiteSlaveStore(db: sdb), terminalId: "t", terminalName: "bar", configuredStore: "s")
        let u = UUID().uuidString.lowercased()
        let create = OperationMessage(
            operation: .create, orders: [.object(JSONObject([("uuid", .string(u)), ("customerName", .string("A"))]))])
        _ = slave.localWrite(create, opId: "op-c", now: 1)
        converse(slave, master, now: 2)
        XCTAssertEqual(try sdb.outboxCount(), 0)
        // Removed elsewhere; the POS app, which lost the first answer, sends its Create again.
        _ = master.apply(OperationMessage(operation: .remove, orders: [.object(JSONObject([("uuid", .string(u))]))]), origin: "m", now: 3)
        let restarted = try SlaveEngine(store: SQLiteSlaveStore(db: sdb), terminalId: "t", terminalName: "bar", configuredStore: "s")
        converse(restarted, master, peer: 2, now: 4)
        XCTAssertNil(try sdb.order(uuid: u))
        let (again, actions) = restarted.localWrite(create, opId: "op-c", now: 5)
        guard case .answered(let first)? = again.failure else {
            return XCTFail("not answered from memory: \(String(describing: again.failure))")
        }
        XCTAssertEqual(first.seq, 1)
        XCTAssertEqual(first.applied.map(\.key), [u])
        XCTAssertTrue(again.changes.isEmpty)
        XCTAssertTrue(actions.isEmpty, "nothing is sent")
        XCTAssertNil(try sdb.order(uuid: u), "the removed order does not come back on this terminal")
        XCTAssertEqual(try sdb.outboxCount(), 0)
    }

    func testAStorageFailureOnTheMasterEndsTheSendersLinkSoNothingOvertakesTheFailedOperation() throws {
        let db = try OrderDatabase(path: dir + "/m.sqlite")
        let failing = FailingCommitStore(SQLiteMasterStore(db: db))
        let master = try MasterEngine(store: failing, storeId: "s", epoch: "e")
        _ = master.peerConnected(1, address: "a", terminal: AuthenticatedTerminal(nodeId: "t1", name: "bar"))
        _ = master.received(
            HelloMessage(terminalId: "t1", terminalName: "bar", store: "s", lastSeq: 0, epoch: "e").encoded(), from: 1, now: 1)
        let u = UUID().uuidString.lowercased()
        failing.failCommits = true
        let first = master.received(
            OperationMessage(operation: .create, orders: [.object(JSONObject([("uuid", .string(u))]))], opId: "op-1").encoded(),
            from: 1, now: 2)
        XCTAssertTrue(texts(first, to: 1).first?.contains("storage_failed") == true)
        XCTAssertTrue(first.contains(.close(peer: 1, code: MasterEngine.internalError, reason: "the master could not store an operation")))
        failing.failCommits = false
        let next = master.received(
            OperationMessage(operation: .update, orders: [update(u, [("note", .string("x"))])], opId: "op-2").encoded(),
            from: 1, now: 3)
        XCTAssertTrue(next.isEmpty, "nothing more is read from the closing link")
        XCTAssertEqual(master.lastSeq, 0)
        // On the next link the same operation id is applied (a storage failure is not a refusal
        // to repeat), and its answer carries no stale storage_failed.
        _ = master.peerDisconnected(1, now: 4)
        _ = master.peerConnected(2, address: "a", terminal: AuthenticatedTerminal(nodeId: "t1", name: "bar"))
        _ = master.received(
            HelloMessage(terminalId: "t1", terminalName: "bar", store: "s", lastSeq: 0, epoch: "e").encoded(), from: 2, now: 5)
        let retry = texts(
            master.received(
                OperationMessage(operation: .create, orders: [.object(JSONObject([("uuid", .string(u))]))], opId: "op-1").encoded(),
                from: 2, now: 6), to: 2)
        XCTAssertEqual(master.lastSeq, 1)
        XCTAssertFalse(retry.contains { $0.contains("storage_failed") }, "\(retry)")
        let repeated = texts(
            master.received(
                OperationMessage(operation: .create, orders: [.object(JSONObject([("uuid", .string(u))]))], opId: "op-1").encoded(),
                from: 2, now: 7), to: 2)
        XCTAssertFalse(repeated.contains { $0.contains("storage_failed") }, "a repeat is not answered with the old failure: \(repeated)")
        XCTAssertTrue(repeated.last?.contains("\"seq\":1") == true)
    }
}
