import Dispatch
import EventLoopIO
import Foundation
import Logging
import SecureLink
import SyncCore
import XCTest

@testable import OrderStore
@testable import OrderSyncNode

/// A slave's snapshot, staged part by part, switches the replica on the store writer's commit
/// thread (Docs/PROTOCOL.md 4.2.2): the loop goes on (timers, reads of the old replica) while
/// the copy waits or runs, and the master's messages after the last part wait for that COMMIT.
final class StagedSnapshotNodeTests: XCTestCase {
    private var directory = ""
    private var loop: EventLoop!
    private var database: OrderDatabase?
    private var dataDirectory: DataDirectory?
    private let commitQueue = DispatchQueue(label: "test.staged.commit")
    private let gate = DispatchSemaphore(value: 0)

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "ordersync-staged-node-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        loop = try EventLoop()
    }

    override func tearDown() {
        database?.close()
        dataDirectory?.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func orders(_ range: ClosedRange<Int>) -> [Order] {
        range.map {
            Order(
                uuid: String(format: "7f0e2c4b-1d3a-4e5f-8a9b-%012d", $0), customerName: "c\($0)",
                created: OrderTimestamp(epochMillis: 1_000 + Int64($0)))
        }
    }

    /// Part `n` of `parts` of a snapshot at `seq`, carrying `range`'s orders.
    private func part(_ n: Int, of parts: Int, seq: Int64, _ range: ClosedRange<Int>) -> [UInt8] {
        var snap = SnapshotPart(seq: seq, part: n, parts: parts, epoch: "e")
        if n == parts { (snap.term, snap.termStarts) = (1, TermStarts()) }
        return ServerMessage.applied(operation: .create, orders: orders(range), seq: nil, opId: nil, origin: nil, snapshot: snap)
            .encodedBytes()
    }

    /// Runs `body` in a group of `writer`'s and commits it, waiting (on the loop) until it is on disk.
    private func group(_ writer: StoreWriter, _ body: (OrderDatabase) throws -> Void) throws {
        try writer.openGroup()
        try writer.collect(body)
        var done: Result<Void, StoreError>?
        writer.commit { done = $0 }
        runUntil(loop) { done != nil }
        guard case .success? = done else { return XCTFail("\(String(describing: done))") }
    }

    func testTheSwitchRunsOnTheCommitThreadWhileTheLoopAnswersFromTheOldReplica() throws {
        let db = try OrderDatabase(path: directory + "/replica.sqlite")
        database = db
        let writer = StoreWriter(database: db, loop: loop, label: "test", commitQueue: commitQueue)
        let slave = try SlaveEngine(store: writer.slaveStore(), terminalId: "TILL-0001-AAAA", terminalName: "till", configuredStore: "s")
        try group(writer) { _ in _ = slave.received(self.part(1, of: 1, seq: 3, 1...2), now: 1) }
        try group(writer) { _ in _ = slave.received(self.part(1, of: 3, seq: 9, 11...400), now: 1) }
        try group(writer) { _ in _ = slave.received(self.part(2, of: 3, seq: 9, 401...800), now: 1) }
        XCTAssertEqual(try writer.read { try $0.orderCount() }, 2, "parts are staged beside the replica")

        // The commit thread is held: the switch is handed to it and has not run.
        commitQueue.async { [gate] in gate.wait() }
        try writer.openGroup()
        writer.collect { _ in _ = slave.received(part(3, of: 3, seq: 9, 801...1_000), now: 1) }
        XCTAssertTrue(writer.switchesAtCommit)
        var result: Result<Void, StoreError>?
        writer.commit { result = $0 }
        XCTAssertEqual(writer.phase, .committing)
        XCTAssertEqual(try writer.read { try $0.orderCount() }, 2, "reads answer from the old replica meanwhile")
        XCTAssertEqual(try writer.read { try $0.metadata("replica.last_seq") }, "3")
        var events: [String] = []
        _ = loop.schedule(after: .milliseconds(5)) { [gate] in
            events.append("timer")
            gate.signal()
        }
        runUntil(loop) { result != nil }
        XCTAssertEqual(events, ["timer"], "the loop ran while the switch waited for the commit thread")
        guard case .success? = result else { return XCTFail("\(String(describing: result))") }
        XCTAssertEqual(try writer.read { try $0.orderCount() }, 990)
        XCTAssertEqual(try writer.read { try $0.metadata("replica.last_seq") }, "9")
        XCTAssertEqual(try writer.read { try $0.stagedOrderCount() }, 0)
    }

    /// A slave node on a loop that is not running (its master never answers).
    private func slaveNode() throws -> SlaveNode {
        var configuration = NodeConfiguration(
            role: .slave, dataDirectory: directory + "/node", store: nil, name: "till", serviceType: NodeDefaults.serviceType,
            port: 0, listenAddress: "127.0.0.1", masterURL: MasterURL(host: "127.0.0.1", port: 9))
        configuration.pairingCode = try PairingCode(bytes: Array(0..<10))
        let claimed = try DataDirectory(claimingFor: configuration)
        dataDirectory = claimed
        return try SlaveNode(
            configuration: configuration, loop: loop, dataDirectory: claimed, discovery: nil,
            logger: Logger(label: "test.slave"), reconnectJitter: .none)
    }

    func testTheLastPartCommitsItsBatchAtOnceAndTheNextMessagesWaitForIt() throws {
        let slave = try slaveNode()
        // The parts as the decoder hands them back (`MasterMessageDecoderTests`), on the loop.
        slave.masterMessage(DecodedMasterMessage(part(1, of: 2, seq: 7, 1...300)))
        slave.commitBatch()
        runUntil(loop) { slave.writer.phase == .idle }
        XCTAssertEqual(slave.status().orders, 0, "the first part is staged, not in the replica")
        slave.masterMessage(DecodedMasterMessage(part(2, of: 2, seq: 7, 301...500)))
        XCTAssertEqual(slave.writer.phase, .committing, "the switch's batch went to the commit thread at once")
        slave.masterMessage(Array(#"{"type":"heartbeat","seq":7}"#.utf8))
        XCTAssertEqual(slave.waitingMessages.count, 1, "nothing else goes in the switch's batch")
        runUntil(loop) { slave.writer.phase == .idle && slave.waitingMessages.isEmpty && slave.replicaCommits.batches == 3 }
        XCTAssertEqual(slave.status().orders, 500)
        XCTAssertEqual(slave.engine.lastSeq, 7)
        XCTAssertEqual(slave.replicaCommits.failed, 0)
    }

    func testABatchOfPartsThatOnlyStageCommitsWithoutASyncAndEveryOtherBatchWithOne() throws {
        let slave = try slaveNode()
        // One loop turn: two parts that only stage, then the last part (the switch), then a
        // heartbeat. The staging batch is committed before the last part, which waits for it.
        for k in 1...2 { slave.masterMessage(DecodedMasterMessage(part(k, of: 3, seq: 7, (k - 1) * 100 + 1...k * 100))) }
        XCTAssertEqual(slave.batch?.synchronous, .normal)
        slave.masterMessage(DecodedMasterMessage(part(3, of: 3, seq: 7, 201...250)))
        XCTAssertEqual(slave.writer.phase, .committing, "the staging batch went to the commit thread")
        XCTAssertEqual(slave.waitingMessages.count, 1, "the last part waits for it, outside its batch")
        slave.masterMessage(Array(#"{"type":"heartbeat","seq":7}"#.utf8))
        runUntil(loop) { slave.writer.phase == .idle && slave.waitingMessages.isEmpty && slave.batch == nil }
        XCTAssertEqual(slave.status().orders, 250)
        XCTAssertEqual(slave.engine.lastSeq, 7)
        XCTAssertEqual(slave.replicaCommits.failed, 0)
        XCTAssertEqual(
            slave.writer.commitsBySynchronous, [.normal: 1, .full: 2],
            "the staged parts in one unsynced batch; the switch and the heartbeat's batch synced")
        XCTAssertEqual(
            try slave.writer.read { try $0.connection.scalarInt("PRAGMA synchronous") }, 2, "the connection is FULL between groups")
    }

    func testLargePartsAreDecodedOffTheLoopAndReachTheEngineInOrder() throws {
        let slave = try slaveNode()
        for k in 1...4 {
            let bytes = part(k, of: 4, seq: 7, (k - 1) * 200 + 1...k * 200)
            XCTAssertGreaterThanOrEqual(bytes.count, MasterMessageDecoder.offLoopBytes)
            slave.masterMessage(bytes)
        }
        slave.masterMessage(Array(#"{"type":"heartbeat","seq":7}"#.utf8))
        XCTAssertEqual(slave.decoder.pending, 5, "the parts, and the heartbeat behind them, wait for the decoder")
        XCTAssertNil(slave.batch, "nothing was applied yet")
        runUntil(loop) { slave.decoder.pending == 0 && slave.writer.phase == .idle && slave.waitingMessages.isEmpty }
        XCTAssertEqual(slave.decoder.decodedOffLoop, 5)
        XCTAssertEqual(slave.status().orders, 800, "every part staged in order, then switched")
        XCTAssertEqual(slave.engine.lastSeq, 7)
        XCTAssertEqual(slave.replicaCommits.failed, 0)
    }
}
