import Foundation
import JSON
import OrderStore
import SyncCore
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
        actions.compactMap { if case .send(peer, let t) = $0 { return t } else { return nil } }
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
            var toMaster = first.compactMap { if case .send(let m) = $0 { return m } else { return nil } }
            while !toMaster.isEmpty {
                var toSlave: [String] = []
                for m in toMaster {
                    for x in master.received(m, from: 1, now: clock) {
                        switch x {
                        case .send(1, let t): toSlave.append(t)
                        case .broadcast(let t, let peers) where peers.contains(1): toSlave.append(t)
                        default: break
                        }
                    }
                }
                toMaster = []
                for t in toSlave {
                    for x in slave.received(t, now: clock) {
                        switch x {
                        case .send(let m): toMaster.append(m)
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
}
