import Foundation
import JSON
import OrderStore
import SyncCore
import WireTestSupport
import XCTest

@testable import OrderSyncNode

/// The per-terminal rate limit, end to end through both engines on SQLite: refused operations
/// are answered `rate_limited` with a hint, nothing is applied for them, a slave keeps them in
/// its outbox and sends them again in order after the hint, and other terminals go on.
final class RateLimitEngineTests: XCTestCase {
    var dir: String!

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "ordersync-rate-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    private func create(_ name: String) -> OperationMessage {
        OperationMessage(
            operation: .create,
            orders: [.object(JSONObject([("uuid", .string(UUID().uuidString.lowercased())), ("customerName", .string(name))]))])
    }

    private func sent(to peer: Int, _ actions: [MasterEngine.Action]) -> [String] {
        actions.compactMap { if case .send(peer, let t) = $0 { return t.text } else { return nil } }
    }

    func testAStorePOSTerminalOverItsLimitGetsRateLimitedWhileAnotherTerminalApplies() throws {
        let db = try OrderDatabase(path: dir + "/m.sqlite")
        let master = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e")
        master.rateLimit = RateLimit(operationsPerSecond: 10, burst: 3)
        _ = master.peerConnected(1, address: "10.0.0.5:4000", terminal: nil)
        _ = master.peerConnected(2, address: "10.0.0.6:4000", terminal: nil)
        for n in 0..<3 { _ = master.received(create("a\(n)").encoded(), from: 1, now: 1_000) }
        XCTAssertEqual(master.lastSeq, 3)
        let refused = master.received(create("a3").encoded(), from: 1, now: 1_000)
        XCTAssertEqual(master.lastSeq, 3, "nothing applied over the limit")
        let answers = sent(to: 1, refused).map { ServerMessage.decode($0) }
        guard case .success(.error(let e, _, let op))? = answers.first else { return XCTFail("\(answers)") }
        XCTAssertEqual(e.code, .rateLimited)
        XCTAssertEqual(e.retryAfterMillis, 300, "until the bucket of 3 is full again at 10/s")
        XCTAssertEqual(op, .create)
        XCTAssertTrue(refused.contains { if case .log(let l) = $0 { return l.event == "peer.rate_limited" } else { return false } })
        XCTAssertEqual(try db.rejections(since: 0, orderUUID: nil, limit: 10).count, 0, "a flood does not fill the rejection log")

        // Another terminal has its own bucket.
        _ = master.received(create("b0").encoded(), from: 2, now: 1_000)
        XCTAssertEqual(master.lastSeq, 4)
        // Still throttled until the hint has passed, then admitted again.
        _ = master.received(create("a4").encoded(), from: 1, now: 1_200)
        XCTAssertEqual(master.lastSeq, 4)
        _ = master.received(create("a5").encoded(), from: 1, now: 1_300)
        XCTAssertEqual(master.lastSeq, 5)
        // The same address reconnecting draws from the same bucket.
        _ = master.peerDisconnected(1, now: 1_300)
        _ = master.peerConnected(3, address: "10.0.0.5:4001", terminal: nil)
        _ = master.received(create("a6").encoded(), from: 3, now: 1_300)
        _ = master.received(create("a7").encoded(), from: 3, now: 1_300)
        XCTAssertEqual(master.lastSeq, 7)
        _ = master.received(create("a8").encoded(), from: 3, now: 1_300)
        XCTAssertEqual(master.lastSeq, 7)
    }

    func testASlaveKeepsRateLimitedOperationsAndSendsThemAgainInOrderAfterTheHint() throws {
        let mdb = try OrderDatabase(path: dir + "/m.sqlite")
        let master = try MasterEngine(store: SQLiteMasterStore(db: mdb), storeId: "s", epoch: "e")
        master.rateLimit = RateLimit(operationsPerSecond: 10, burst: 3)
        let sdb = try OrderDatabase(path: dir + "/s.sqlite")
        let slave = try SlaveEngine(store: SQLiteSlaveStore(db: sdb), terminalId: "t", terminalName: "bar", configuredStore: "s")
        for n in 0..<6 {
            let (w, _) = slave.localWrite(create("o\(n)"), opId: "op-\(n)", now: 5_000)
            XCTAssertNil(w.failure)
        }
        _ = master.peerConnected(1, address: "10.0.0.2:5000", terminal: AuthenticatedTerminal(nodeId: "t", name: "bar"))
        var retries: [Int64] = []
        var clock: Int64 = 6_000
        /// Runs both engines until neither has anything more to say.
        func exchange(_ first: [SlaveEngine.Action]) {
            var toMaster = first.compactMap { if case .send(let m) = $0 { return m.text } else { return nil } }
            while !toMaster.isEmpty {
                var toSlave: [String] = []
                for m in toMaster {
                    for x in master.received(m, from: 1, now: clock) {
                        switch x {
                        case .send(1, let t): toSlave.append(t.text)
                        case .broadcast(let t, let peers) where peers.contains(1): toSlave.append(t.text)
                        default: break
                        }
                    }
                }
                toMaster = []
                for t in toSlave {
                    for x in slave.received(t, now: clock) {
                        switch x {
                        case .send(let m): toMaster.append(m.text)
                        case .scheduleOutboxRetry(let millis): retries.append(millis)
                        default: break
                        }
                    }
                }
            }
        }
        exchange(slave.linkOpened())
        XCTAssertEqual(master.lastSeq, 3, "the burst went through")
        XCTAssertEqual(try sdb.outboxCount(), 3, "the refused operations stay in the outbox")
        XCTAssertEqual(retries, [300], "the slave waits as long as the master said")

        // A later operation sent before the first refused one is refused: nothing overtakes.
        clock = 6_300
        let early = master.received(
            OperationMessage(operation: .create, orders: create("late").orders, opId: "op-5").encoded(), from: 1, now: clock)
        XCTAssertEqual(master.lastSeq, 3)
        XCTAssertTrue(sent(to: 1, early).contains { $0.contains("rate_limited") })

        exchange(slave.retryOutbox())
        XCTAssertEqual(try sdb.outboxCount(), 0, "sent again after the hint, all applied")
        XCTAssertEqual(master.lastSeq, 6)
        let journal = try mdb.journal(since: 0, orderUUID: nil, limit: 10)
        XCTAssertEqual(journal.map(\.opId), (0..<6).map { "op-\($0)" }, "applied in the order they were taken")
    }

    private func logs(_ actions: [MasterEngine.Action], _ event: String) -> [EngineLog] {
        actions.compactMap { if case .log(let l) = $0, l.event == event { return l } else { return nil } }
    }

    private func errors(to peer: Int, _ actions: [MasterEngine.Action]) -> [WireError] {
        sent(to: peer, actions).compactMap {
            if case .success(.error(let e, _, _)) = ServerMessage.decode($0) { return e } else { return nil }
        }
    }

    /// A Create of one order of about `bytes` bytes (in members of 4,000 bytes, a text's limit).
    private func big(_ name: String, bytes: Int) -> OperationMessage {
        var members: [(String, JSONValue)] = [("uuid", .string(UUID().uuidString.lowercased())), ("customerName", .string(name))]
        for n in 0..<(bytes / 4_000) { members.append(("x-\(n)", .string(String(repeating: "n", count: 4_000)))) }
        return OperationMessage(operation: .create, orders: [.object(JSONObject(members))])
    }

    func testBytesAreLimitedAsWellAsMessages() throws {
        let db = try OrderDatabase(path: dir + "/m.sqlite")
        let master = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e")
        master.limits.bytes = Allowance(perSecond: 10_000, capacity: 25_000)
        _ = master.peerConnected(1, address: "10.0.0.5:4000", terminal: nil)
        _ = master.peerConnected(2, address: "10.0.0.6:4000", terminal: nil)
        for n in 0..<2 { _ = master.received(big("a\(n)", bytes: 12_000).encoded(), from: 1, now: 1_000) }
        XCTAssertEqual(master.lastSeq, 2, "two messages of 12 KB fit the 25 KB burst")
        let refused = master.received(big("a2", bytes: 12_000).encoded(), from: 1, now: 1_000)
        XCTAssertEqual(master.lastSeq, 2, "the third one does not, although 3 messages are far below 200/s")
        let e = try XCTUnwrap(errors(to: 1, refused).first)
        XCTAssertEqual(e.code, .rateLimited)
        XCTAssertTrue(e.message.contains("per second"), e.message)
        XCTAssertTrue(e.message.contains("KiB"), e.message)
        let wait = try XCTUnwrap(e.retryAfterMillis)
        XCTAssertGreaterThan(wait, 2_000, "until the bucket of 25 KB at 10 KB/s is full again")
        XCTAssertLessThanOrEqual(wait, 2_500)
        XCTAssertEqual(logs(refused, "peer.rate_limited").first?.metadata.first { $0.0 == "limit" }?.1, "bytes")
        // Small operations from another terminal go through meanwhile.
        _ = master.received(create("b").encoded(), from: 2, now: 1_000)
        XCTAssertEqual(master.lastSeq, 3)
        _ = master.received(big("a3", bytes: 12_000).encoded(), from: 1, now: 1_000 + wait)
        XCTAssertEqual(master.lastSeq, 4, "admitted again after the hint")
    }

    func testAJournalBudgetRefusesATerminalThatGrewTheJournalTooMuchAndWarnsOnce() throws {
        let db = try OrderDatabase(path: dir + "/m.sqlite")
        let master = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e")
        master.limits.journalBytesPerHour = 36_000 // 10 bytes a second
        _ = master.peerConnected(1, address: "10.0.0.5:4000", terminal: nil)
        _ = master.peerConnected(2, address: "10.0.0.6:4000", terminal: nil)
        var n = 0
        var refused: [MasterEngine.Action] = []
        while master.lastSeq < 20 {
            let before = master.lastSeq
            refused = master.received(big("a\(n)", bytes: 8_000).encoded(), from: 1, now: 1_000)
            n += 1
            if master.lastSeq == before { break }
        }
        XCTAssertEqual(master.lastSeq, 5, "36 KB of budget: five broadcasts of 8 KB (the fifth runs into debt)")
        let e = try XCTUnwrap(errors(to: 1, refused).first)
        XCTAssertEqual(e.code, .rateLimited)
        XCTAssertTrue(e.message.contains("journal budget of 35 KiB per hour"), e.message)
        let wait = try XCTUnwrap(e.retryAfterMillis)
        XCTAssertGreaterThan(wait, 400_000, "the debt, then a minute of the budget")
        XCTAssertEqual(logs(refused, "peer.journal_budget_exceeded").count, 1, "the operator is warned")
        XCTAssertEqual(try db.rejections(since: 0, orderUUID: nil, limit: 10).count, 0, "nothing recorded")
        // Still over budget after the hint's throttling: refused again, but warned only once.
        let again = master.received(big("late", bytes: 8_000).encoded(), from: 1, now: 1_000 + wait - 1)
        XCTAssertEqual(master.lastSeq, 5)
        XCTAssertEqual(logs(again, "peer.journal_budget_exceeded").count, 0, "once per episode")
        // Another terminal has its own budget.
        _ = master.received(create("b").encoded(), from: 2, now: 1_000)
        XCTAssertEqual(master.lastSeq, 6)
        // After the hint, the budget holds a minute's worth again: admitted.
        _ = master.received(create("c").encoded(), from: 1, now: 1_000 + wait)
        XCTAssertEqual(master.lastSeq, 7)
    }

    func testASlaveAskingForSnapshotsInALoopIsRefusedAndWaitsAsTold() throws {
        let mdb = try OrderDatabase(path: dir + "/m.sqlite")
        let master = try MasterEngine(store: SQLiteMasterStore(db: mdb), storeId: "s", epoch: "e")
        master.limits.snapshots = Allowance(perSecond: 0.1, capacity: 2)
        let sdb = try OrderDatabase(path: dir + "/s.sqlite")
        let slave = try SlaveEngine(store: SQLiteSlaveStore(db: sdb), terminalId: "t", terminalName: "bar", configuredStore: "s")
        let hello = slave.linkOpened().compactMap { if case .send(let m) = $0 { return m.text } else { return nil } }.first!
        let terminal = AuthenticatedTerminal(nodeId: "t", name: "bar")
        var id = 0
        /// One connection of the loop: connect and say hello (always asking for a snapshot).
        func connect(at now: Int64) -> [MasterEngine.Action] {
            id += 1
            _ = master.peerConnected(id, address: "10.0.0.2:\(5000 + id)", terminal: terminal)
            defer { _ = master.peerDisconnected(id, now: now) }
            return master.received(hello, from: id, now: now)
        }
        for n in 0..<2 {
            let actions = connect(at: 1_000 + Int64(n))
            XCTAssertTrue(sent(to: id, actions).contains { $0.contains("\"snapshot\"") }, "snapshot \(n) is sent")
        }
        let third = connect(at: 1_002)
        let e = try XCTUnwrap(errors(to: id, third).first)
        XCTAssertEqual(e.code, .rateLimited)
        XCTAssertTrue(e.message.contains("snapshot"), e.message)
        XCTAssertEqual(e.retryAfterMillis, 9_998, "until one snapshot is back at one per 10 s")
        XCTAssertFalse(sent(to: id, third).contains { $0.contains("\"snapshot\"") }, "no snapshot")
        XCTAssertTrue(third.contains(.close(peer: id, code: MasterEngine.tryAgainLater, reason: "snapshot rate limited")))
        XCTAssertEqual(logs(third, "peer.snapshot_limited").count, 1)
        // The slave hears it and waits as long as it was told before connecting again.
        for t in sent(to: id, third) { _ = slave.received(t, now: 1_002) }
        XCTAssertEqual(slave.reconnectAfterMillis, 9_998)
        slave.linkClosed()
        XCTAssertEqual(slave.reconnectAfterMillis, 9_998, "kept for the shell to read after the link ended")
        _ = slave.linkOpened()
        XCTAssertNil(slave.reconnectAfterMillis, "a new link starts afresh")
        // A catch-up costs no snapshot: a terminal that is up to date is never refused.
        _ = master.peerConnected(99, address: "10.0.0.2:6000", terminal: terminal)
        var upToDate = HelloMessage(terminalId: "t", terminalName: "bar", store: "s", lastSeq: 0, epoch: "e")
        upToDate.outbox = 0
        let caughtUp = master.received(upToDate.encoded(), from: 99, now: 1_003)
        XCTAssertTrue(sent(to: 99, caughtUp).contains { $0.contains("\"ready\"") }, "\(caughtUp)")
        XCTAssertEqual(master.peers[99]?.phase, .live)
        // After the hint: a snapshot again.
        XCTAssertTrue(sent(to: id + 1, connect(at: 11_100)).contains { $0.contains("\"snapshot\"") })
    }

    func testAFloodOfRefusalsFromOneSourceIsSummarisedNotLoggedLineByLine() throws {
        let db = try OrderDatabase(path: dir + "/m.sqlite")
        let master = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e")
        _ = master.peerConnected(1, address: "10.0.0.5:4000", terminal: nil)
        var lines = 0
        for n in 0..<500 {
            let actions = master.received("{\"operation\":0,\"orders\":[{\"uuid\":\"bad-\(n)\"}]}", from: 1, now: 1_000 + Int64(n))
            lines += logs(actions, "message.rejected").count
            XCTAssertEqual(errors(to: 1, actions).count, 1, "every refusal is still answered")
        }
        XCTAssertEqual(lines, 20, "twenty lines in full per source and minute")
        XCTAssertEqual(master.refusals[.invalidUUID], 500, "and every one counted")
        let summary = logs(master.maintenance(now: 61_000), "refusals.summary")
        XCTAssertEqual(summary.count, 1)
        let meta = Dictionary(summary[0].metadata, uniquingKeysWith: { a, _ in a })
        XCTAssertEqual(meta["count"], "480")
        XCTAssertEqual(meta["event"], "message.rejected")
        XCTAssertEqual(meta["source"], "address 10.0.0.5")
        XCTAssertEqual(logs(master.maintenance(now: 62_000), "refusals.summary").count, 0, "once")
    }
}
