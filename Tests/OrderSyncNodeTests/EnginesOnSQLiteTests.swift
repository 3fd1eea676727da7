import Foundation
import JSON
import OrderStore
import SyncCore
import WireTestSupport
import XCTest

@testable import OrderSyncNode

/// The master and slave engines on their real SQLite stores.
final class EnginesOnSQLiteTests: XCTestCase {
    var dir: String!

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "ordersync-node-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    func order(_ uuid: String, _ name: String) -> JSONValue {
        .object(
            JSONObject([
                ("uuid", .string(uuid)), ("customerName", .string(name)),
                ("created", .string("2016-01-12T21:35:16+0800")),
            ]))
    }

    func testMasterNumbersJournalsAndAnswersRepeatsFromTheJournal() throws {
        let db = try OrderDatabase(path: dir + "/m.sqlite")
        let ledger = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e")
        let a = UUID().uuidString, b = UUID().uuidString
        let first = ledger.apply(
            OperationMessage(operation: .create, orders: [order(a, "A"), order(b, "B")], opId: "op-1"), origin: "t1", now: 1_000)
        XCTAssertEqual(first.seq, 1)
        XCTAssertEqual(first.applied.count, 2)
        XCTAssertFalse(first.isRepeat)
        let repeatOutcome = ledger.apply(
            OperationMessage(operation: .create, orders: [order(a, "A"), order(b, "B")], opId: "op-1"), origin: "t1", now: 1_000)
        XCTAssertTrue(repeatOutcome.isRepeat)
        XCTAssertEqual(repeatOutcome.seq, 1)
        XCTAssertEqual(repeatOutcome.broadcast, first.broadcast)
        XCTAssertEqual(try db.lastJournalSeq(), 1, "a repeated opId is not applied again")

        let bad = ledger.apply(
            OperationMessage(
                operation: .update,
                orders: [
                    .object(JSONObject([("uuid", .string(a)), ("tableSize", .int(5))])),
                    .object(JSONObject([("uuid", .string(UUID().uuidString))])),
                ]), origin: "t2", now: 1_000)
        XCTAssertEqual(bad.seq, 2)
        XCTAssertEqual(bad.errors.map(\.code), [.notFound])
        XCTAssertEqual(try db.order(uuid: a)?.tableSize, 5)
        XCTAssertEqual(try db.order(uuid: a)?.version, 2)

        let nothing = ledger.apply(
            OperationMessage(operation: .remove, orders: [.object(JSONObject([("uuid", .string("x"))]))]), origin: "t2", now: 1_000)
        XCTAssertNil(nothing.seq)
        XCTAssertNil(nothing.broadcast)
        XCTAssertEqual(try db.lastJournalSeq(), 2)
        let journal = try db.journal(since: 0, orderUUID: nil, limit: 10)
        XCTAssertEqual(journal.map(\.seq), [1, 2])
        XCTAssertEqual(journal.map(\.origin), ["t1", "t2"])

        // A new ledger on the same file continues the numbering.
        let again = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e")
        XCTAssertEqual(again.lastSeq, 2)
    }

    func testSnapshotPartsThenLiveOperationsInOrder() throws {
        let mdb = try OrderDatabase(path: dir + "/m.sqlite")
        let ledger = try MasterEngine(store: SQLiteMasterStore(db: mdb), storeId: "s", epoch: "e")
        var uuids: [String] = []
        for i in 0..<5 {
            let u = UUID().uuidString
            uuids.append(u)
            _ = ledger.apply(OperationMessage(operation: .create, orders: [order(u, "c\(i)")]), origin: "m", now: 1_000)
        }
        ledger.snapshotChunk = 2
        let snap = try ledger.snapshotMessages()
        XCTAssertEqual(snap.messages.count, 3)
        XCTAssertEqual(snap.count, 5)

        let sdb = try OrderDatabase(path: dir + "/s.sqlite")
        let stale = Order(uuid: UUID().uuidString, customerName: "stale", created: OrderTimestamp(epochMillis: 0))
        try sdb.insertOrder(stale)
        let slave = try SlaveEngine(store: SQLiteSlaveStore(db: sdb), terminalId: "t", terminalName: "bar", configuredStore: "s")
        _ = slave.linkOpened()
        for m in snap.messages.dropLast() {
            _ = slave.received(m, now: 0)
            XCTAssertEqual(slave.lastSeq, 0, "a snapshot is applied only once every part is in")
        }
        _ = slave.received(snap.messages.last!, now: 0)
        XCTAssertNil(try sdb.order(uuid: stale.uuid), "a snapshot replaces the replica")
        XCTAssertEqual(try sdb.orderCount(), 5)
        XCTAssertEqual(slave.lastSeq, 5)
        XCTAssertEqual(slave.joinedStore, "s")

        let live = ledger.apply(
            OperationMessage(operation: .remove, orders: [.object(JSONObject([("uuid", .string(uuids[0]))]))]), origin: "m", now: 1_000)
        let text = try XCTUnwrap(live.broadcast)
        XCTAssertEqual(slave.received(text, now: 0).filter { if case .log = $0 { return false } else { return true } }, [.scheduleAck])
        XCTAssertEqual(slave.lastSeq, 6)
        XCTAssertEqual(slave.received(text, now: 0), [], "an operation already applied is ignored")
        let skipped = text.text.replacingOccurrences(of: "\"seq\":6", with: "\"seq\":9")
        XCTAssertTrue(slave.received(skipped, now: 0).contains(.resync(reason: "resync")), "a gap makes the slave catch up again")
        XCTAssertEqual(slave.lastSeq, 6)
        XCTAssertEqual(try sdb.orderCount(), 4)
        XCTAssertEqual(try sdb.allOrders().map(\.uuid), try mdb.allOrders().map(\.uuid))
        // The replica's position survives a restart.
        XCTAssertEqual(
            try SlaveEngine(store: SQLiteSlaveStore(db: sdb), terminalId: "t", terminalName: "bar", configuredStore: nil).lastSeq, 6)
    }

    func testAnOutboxEntryLeavesWithTheBroadcastThatCarriesItAndARefusalSurvivesARestart() throws {
        let mdb = try OrderDatabase(path: dir + "/m.sqlite")
        let master = try MasterEngine(store: SQLiteMasterStore(db: mdb), storeId: "s", epoch: "e")
        let sdb = try OrderDatabase(path: dir + "/s.sqlite")
        let slave = try SlaveEngine(store: SQLiteSlaveStore(db: sdb), terminalId: "t", terminalName: "bar", configuredStore: "s")
        let a = UUID().uuidString.lowercased(), b = UUID().uuidString.lowercased()
        // Order b exists on the master only, completed: an update from the slave is refused.
        _ = master.apply(OperationMessage(operation: .create, orders: [order(b, "B")]), origin: "m", now: 1_000)
        _ = master.apply(
            OperationMessage(operation: .update, orders: [.object(JSONObject([("uuid", .string(b)), ("status", .string("completed"))]))]),
            origin: "m", now: 1_000)
        var local = try XCTUnwrap(mdb.order(uuid: b))
        local.status = .open
        try sdb.insertOrder(local)

        // Offline: both changes go to the outbox and show as pending.
        let (w, _) = slave.localWrite(OperationMessage(operation: .create, orders: [order(a, "A")]), opId: "op-a", now: 5_000)
        XCTAssertNil(w.failure)
        XCTAssertFalse(w.sent)
        let (w2, _) = slave.localWrite(
            OperationMessage(operation: .update, orders: [.object(JSONObject([("uuid", .string(b)), ("note", .string("x"))]))]),
            opId: "op-b", now: 5_000)
        XCTAssertNil(w2.failure)
        XCTAssertEqual(try sdb.outboxCount(), 2)
        XCTAssertEqual(slave.syncState(of: a), .pending)

        // Connected: hello, catch-up, ready, then the outbox goes out in order.
        let hello = slave.linkOpened()
        guard case .send(let helloText)? = hello.first else { return XCTFail("no hello") }
        _ = master.peerConnected(1, address: "10.0.0.2:5000", terminal: AuthenticatedTerminal(nodeId: "t", name: "bar"))
        var toSlave: [String] = []
        var toMaster: [String] = []
        func run(_ actions: [MasterEngine.Action]) {
            for x in actions {
                switch x {
                case .send(1, let t): toSlave.append(t.text)
                case .broadcast(let t, let peers) where peers.contains(1): toSlave.append(t.text)
                default: break
                }
            }
        }
        run(master.received(helloText, from: 1, now: 6_000))
        XCTAssertEqual(master.peers[1]?.outbox, 2, "the hello says how many changes wait in the outbox")
        var acksAsked = 0
        while !toSlave.isEmpty || !toMaster.isEmpty {
            for t in toSlave {
                for x in slave.received(t, now: 6_000) {
                    if case .send(let m) = x { toMaster.append(m.text) }
                    if case .scheduleAck = x { acksAsked += 1 }
                }
            }
            toSlave = []
            for t in toMaster { run(master.received(t, from: 1, now: 6_000)) }
            toMaster = []
        }
        XCTAssertEqual(try sdb.outboxCount(), 0, "both entries were answered")
        // The outbox emptied: the next ack says so, and the master keeps it for the terminal.
        XCTAssertGreaterThan(acksAsked, 0)
        XCTAssertEqual(master.peers[1]?.outbox, 2, "not known before the ack")
        XCTAssertEqual(slave.ackDue(), [.send(ClientMessage.encodeAck(seq: slave.ackSeq, outbox: 0))])
        run(master.received(ClientMessage.encodeAck(seq: slave.ackSeq, outbox: 0), from: 1, now: 6_500))
        XCTAssertEqual(master.peers[1]?.outbox, 0)
        _ = master.peerDisconnected(1, now: 7_000)
        XCTAssertEqual(try mdb.knownTerminals().first { $0.id == "t" }?.outbox, 0, "kept for while it is away")
        // The slave's change feed, numbered by the replica: each local change pending, the
        // master's snapshot (a new slave) and changes with its seq, the outcome of each local change.
        let feed = try sdb.feed(after: 0, limit: 100).map { try XCTUnwrap(JSONParser.parse(Array($0.text.utf8)).objectValue) }
        XCTAssertEqual(feed.map { $0["seq"] }, (1...feed.count).map { .int(Int64($0)) })
        XCTAssertEqual(feed.prefix(2).map { $0["pending"] }, [.bool(true), .bool(true)])
        XCTAssertEqual(feed.prefix(2).map { $0["opId"] }, [.string("op-a"), .string("op-b")])
        let fromMaster = feed.filter { $0["masterSeq"] != nil && $0["outcome"] == nil }
        XCTAssertEqual(fromMaster.map { $0["operation"] }, [.string("snapshot"), .string("create")])
        XCTAssertEqual(fromMaster.map { $0["masterSeq"] }, [.int(2), .int(3)])
        let outcomes = Dictionary(
            uniqueKeysWithValues: feed.filter { $0["operation"] == .string("outcome") }.map { ($0["opId"]?.stringValue ?? "", $0) })
        XCTAssertEqual(outcomes["op-a"]?["outcome"], .string("synced"))
        XCTAssertEqual(outcomes["op-a"]?["masterSeq"], .int(3))
        XCTAssertEqual(outcomes["op-b"]?["outcome"], .string("rejected"))
        XCTAssertEqual(outcomes["op-b"]?["error"]?.objectValue?["code"], .string("invalid_transition"))
        XCTAssertEqual(slave.syncState(of: a), .synced)
        guard case .rejected(let e) = slave.syncState(of: b) else { return XCTFail("the refusal is shown") }
        XCTAssertEqual(e.code, .invalidTransition)
        XCTAssertEqual(try mdb.journalEntry(opId: "op-a")?.seq, 3)
        XCTAssertEqual(try mdb.order(uuid: a)?.customerName, "A")
        // The refusal is still shown after a restart, until the next local change to the order.
        let restarted = try SlaveEngine(store: SQLiteSlaveStore(db: sdb), terminalId: "t", terminalName: "bar", configuredStore: "s")
        guard case .rejected(let kept) = restarted.syncState(of: b) else { return XCTFail("the refusal was not kept") }
        XCTAssertEqual(kept.code, e.code)
        XCTAssertEqual(kept.message, e.message)
        _ = restarted.localWrite(
            OperationMessage(operation: .update, orders: [.object(JSONObject([("uuid", .string(a)), ("note", .string("y"))]))]),
            opId: "op-c", now: 7_000)
        XCTAssertEqual(restarted.syncState(of: b), .rejected(kept))
        XCTAssertEqual(restarted.syncState(of: a), .pending)
        XCTAssertTrue(slave.needsSnapshot, "a refused change sends the replica back to the master's truth")
        XCTAssertTrue(restarted.needsSnapshot, "and that survives a restart")
    }
}

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

/// A master store whose commits fail while `failCommits` is set (nothing reaches the disk).
final class FailingCommitStore: MasterStore {
    let base: any MasterStore
    var failCommits = false
    init(_ base: any MasterStore) { self.base = base }
    struct Failure: Error, CustomStringConvertible { var description: String { "disk I/O error (test)" } }
    func order(uuid: String) throws -> Order? { try base.order(uuid: uuid) }
    func hasTombstone(uuid: String) throws -> Bool { try base.hasTombstone(uuid: uuid) }
    func allOrders() throws -> [Order] { try base.allOrders() }
    func lastJournalSeq() throws -> Int64 { try base.lastJournalSeq() }
    func firstJournalSeq() throws -> Int64? { try base.firstJournalSeq() }
    func journal(since seq: Int64, limit: Int) throws -> [JournalEntry] { try base.journal(since: seq, limit: limit) }
    func journalEntry(opId: String) throws -> JournalEntry? { try base.journalEntry(opId: opId) }
    func rejections(opId: String) throws -> [Rejection] { try base.rejections(opId: opId) }
    func commit(_ changes: [OrderChange], entry: JournalEntry) throws {
        if failCommits { throw Failure() }
        try base.commit(changes, entry: entry)
    }
    func appendRejection(_ rejection: Rejection) throws { try base.appendRejection(rejection) }
    func saveTerminals(_ terminals: [KnownTerminal]) throws { try base.saveTerminals(terminals) }
    func knownTerminals() throws -> [KnownTerminal] { try base.knownTerminals() }
    func forgetTerminals(lastSeenBefore millis: Int64) throws -> Int { try base.forgetTerminals(lastSeenBefore: millis) }
    func compactTombstones(through seq: Int64) throws -> Int { try base.compactTombstones(through: seq) }
    func compactJournal(through seq: Int64, recordedBefore millis: Int64) throws -> Int {
        try base.compactJournal(through: seq, recordedBefore: millis)
    }
}
