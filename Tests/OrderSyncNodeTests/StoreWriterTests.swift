import Dispatch
import EventLoopIO
import Foundation
import JSON
import Logging
import SecureLink
import SyncCore
import XCTest

@testable import OrderStore
@testable import OrderSyncNode

/// Runs `loop` until `done()` holds (checked every millisecond), at most 10 seconds.
func runUntil(_ loop: EventLoop, _ done: @escaping () -> Bool) {
    let deadline = loop.schedule(after: .seconds(10)) { loop.stop() }
    func check() {
        if done() { loop.stop() } else { _ = loop.schedule(after: .milliseconds(1)) { check() } }
    }
    _ = loop.schedule(after: .milliseconds(1)) { check() }
    loop.run()
    loop.cancel(deadline)
}

/// A store in a temporary folder and an event loop, for the tests of what runs between the loop
/// and the store's threads (`StoreWriterTests`, `StoreWriterCheckpointTests`, `OffLoopReadsTests`).
class StoreOnLoopTestCase: XCTestCase {
    var directory = ""
    var database: OrderDatabase!
    var loop: EventLoop!

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "ordersync-store-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        database = try OrderDatabase(path: directory + "/store.sqlite")
        loop = try EventLoop()
    }

    override func tearDown() {
        database?.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// The store writer's phase machine on a real file: events in, phase and results out. The
/// commit thread is a queue the test holds shut, so "while the COMMIT runs" is a state the test
/// chooses, not a race.
final class StoreWriterTests: StoreOnLoopTestCase {
    private let commitQueue = DispatchQueue(label: "test.writer.commit")
    private let gate = DispatchSemaphore(value: 0)

    private func order(_ name: String) -> Order {
        Order(
            uuid: UUID().uuidString.lowercased(), customerName: name,
            created: OrderTimestamp(epochMillis: 1_452_605_716_000, offsetMinutes: 0), tableSize: 2)
    }

    /// A writer whose COMMITs wait until the test opens the gate.
    private func heldWriter() -> StoreWriter {
        commitQueue.async { [gate] in gate.wait() }
        return StoreWriter(database: database, loop: loop, label: "test", commitQueue: commitQueue)
    }

    /// Runs the loop until `done()` holds (checked every millisecond), at most 10 seconds.
    private func runLoop(until done: @escaping () -> Bool) { runUntil(loop, done) }

    func testAGroupGoesFromIdleThroughCollectingAndCommittingBackToIdle() throws {
        let writer = heldWriter()
        XCTAssertEqual(writer.phase, .idle)
        try writer.openGroup()
        XCTAssertEqual(writer.phase, .collecting)
        try writer.collect { try $0.insertOrder(order("kept")) }
        var results: [Result<Void, StoreError>] = []
        writer.commit { results.append($0) }
        XCTAssertEqual(writer.phase, .committing)
        XCTAssertTrue(results.isEmpty, "told only once the group is on disk")
        gate.signal()
        runLoop { !results.isEmpty }
        XCTAssertEqual(writer.phase, .idle)
        guard case .success? = results.first else { return XCTFail("\(results)") }
        XCTAssertEqual(results.count, 1)
        XCTAssertEqual(try OrderDatabase(path: directory + "/store.sqlite").orderCount(), 1, "on disk for another connection")
    }

    func testAReadDuringACommitIsAnsweredAtOnceFromWhatIsCommitted() throws {
        let writer = heldWriter()
        try writer.openGroup()
        try writer.collect { try $0.insertOrder(order("in flight")) }
        var finished = false
        writer.commit { _ in finished = true }
        // The COMMIT cannot run (the gate is shut): a read that waited for it would hang here.
        XCTAssertEqual(try writer.read { try $0.orderCount() }, 0, "the group being committed is not shown")
        XCTAssertEqual(writer.phase, .committing)
        gate.signal()
        runLoop { finished }
        XCTAssertEqual(try writer.read { try $0.orderCount() }, 1, "shown once committed")
    }

    func testWorkWaitingForTheStoreRunsAfterTheCommitInArrivalOrder() throws {
        let writer = heldWriter()
        var events: [String] = []
        writer.whenIdle { events.append("at once") }
        XCTAssertEqual(events, ["at once"], "idle with nothing waiting: runs now")
        try writer.openGroup()
        writer.whenIdle { events.append("while collecting") }
        try writer.collect { try $0.insertOrder(order("a")) }
        writer.commit { _ in
            events.append("finished")
            writer.whenIdle { events.append("queued by the callback") }
        }
        writer.whenIdle { events.append("first") }
        writer.whenIdle {
            events.append("second opens a group")
            try? writer.openGroup()
            writer.commit { _ in events.append("finished again") }
        }
        writer.whenIdle { events.append("third waits for the next commit") }
        XCTAssertEqual(events, ["at once"])
        gate.signal()
        runLoop { events.count == 8 }
        XCTAssertEqual(
            events,
            [
                "at once", "finished", "while collecting", "first", "second opens a group", "finished again",
                "third waits for the next commit", "queued by the callback",
            ])
        XCTAssertEqual(writer.phase, .idle)
    }

    func testAFailedCommitCarriesItsTypedErrorAndKeepsNothingOfTheGroup() throws {
        let writer = heldWriter()
        try database.insertOrder(order("before"))
        try writer.openGroup()
        try writer.collect { db in
            // A deferred foreign key violation: the COMMIT itself fails (SQLITE_CONSTRAINT).
            try db.connection.execute("PRAGMA defer_foreign_keys = ON")
            try db.insertOrder(order("lost"))
            try db.connection.execute("INSERT INTO journal_orders (uuid_key, seq) VALUES ('x', 99)")
        }
        var result: Result<Void, StoreError>?
        writer.commit { result = $0 }
        gate.signal()
        runLoop { result != nil }
        guard case .failure(let error)? = result else { return XCTFail("the commit did not fail: \(String(describing: result))") }
        XCTAssertEqual(error.kind, .constraint)
        XCTAssertEqual(error.sql, "COMMIT")
        XCTAssertEqual(writer.phase, .idle)
        XCTAssertEqual(try writer.read { try $0.allOrders().map(\.customerName) }, ["before"])
        // The store is failing (`ready.store`) from this commit until one succeeds.
        XCTAssertEqual(writer.health.failure?.problem, "commit failed")
        XCTAssertEqual(writer.health.failure?.path, directory + "/store.sqlite")
        XCTAssertEqual(writer.health.failure?.failures, 1)
        // The next group commits.
        try writer.openGroup()
        try writer.collect { try $0.insertOrder(order("next")) }
        var next: Result<Void, StoreError>?
        writer.commit { next = $0 }
        runLoop { next != nil }
        guard case .success? = next else { return XCTFail("\(String(describing: next))") }
        XCTAssertNil(writer.health.failure)
    }

    func testATimerFiresOnTheLoopWhileTheCommitRuns() throws {
        let writer = heldWriter()
        try writer.openGroup()
        try writer.collect { try $0.insertOrder(order("slow disk")) }
        var events: [String] = []
        writer.commit { _ in events.append("committed") }
        // The loop goes on while the COMMIT is held: the timer fires first, then opens the gate.
        _ = loop.schedule(after: .milliseconds(5)) { [gate] in
            events.append("timer")
            gate.signal()
        }
        runLoop { events.count == 2 }
        XCTAssertEqual(events, ["timer", "committed"])
    }

    func testAtShutdownTheCommitInFlightIsWaitedForExplicitly() throws {
        let writer = heldWriter()
        try writer.openGroup()
        try writer.collect { try $0.insertOrder(order("last")) }
        var told = false
        writer.commit { _ in told = true }
        gate.signal()
        guard case .success? = writer.waitForCommitAtShutdown() else { return XCTFail("not committed") }
        XCTAssertEqual(writer.phase, .idle)
        XCTAssertFalse(told, "at shutdown nobody is answered")
        XCTAssertEqual(try writer.read { try $0.orderCount() }, 1)
        XCTAssertNil(writer.waitForCommitAtShutdown(), "nothing in flight any more")
    }

    // MARK: Writes outside a group (`write(_:then:)`): groups of their own, told once on disk.

    func testAWriteCommitsOffTheLoopAndIsToldOnceOnDisk() throws {
        let writer = heldWriter()
        var result: Result<Int, any Error>?
        writer.write({ db in
            try db.setMetadata("k", "v")
            return 7
        }) { result = $0 }
        // The COMMIT cannot run (the gate is shut): a write that committed here would hang.
        XCTAssertEqual(writer.phase, .committing)
        XCTAssertNil(result, "told only once on disk")
        XCTAssertNil(try writer.read { try $0.metadata("k") }, "not shown before it is committed")
        gate.signal()
        runLoop { result != nil }
        guard case .success(7)? = result else { return XCTFail("\(String(describing: result))") }
        XCTAssertEqual(writer.phase, .idle)
        XCTAssertEqual(try OrderDatabase(path: directory + "/store.sqlite").metadata("k"), "v", "on disk for another connection")
    }

    func testAWriteDuringACommitWaitsForItAndGoesInArrivalOrder() throws {
        let writer = heldWriter()
        var events: [String] = []
        try writer.openGroup()
        try writer.collect { try $0.setMetadata("k", "group") }
        writer.commit { _ in events.append("group") }
        writer.write({ try $0.setMetadata("k", "write") }) { result in
            if case .success = result { events.append("write") }
        }
        writer.whenIdle { events.append("after the write") }
        XCTAssertEqual(events, [], "the write waits for the group's COMMIT")
        gate.signal()
        runLoop { events.count == 3 }
        XCTAssertEqual(events, ["group", "write", "after the write"])
        XCTAssertEqual(try OrderDatabase(path: directory + "/store.sqlite").metadata("k"), "write")
    }

    func testAWriteThatThrowsKeepsNothingAndIsToldAtOnce() throws {
        let writer = heldWriter()
        struct Refused: Error {}
        var result: Result<Void, any Error>?
        writer.write({ db in
            try db.setMetadata("k", "lost")
            throw Refused()
        }) { result = $0 }
        guard case .failure(let error)? = result else { return XCTFail("\(String(describing: result))") }
        XCTAssertTrue(error is Refused)
        XCTAssertEqual(writer.phase, .idle, "rolled back, nothing to commit")
        XCTAssertNil(try writer.read { try $0.metadata("k") })
        gate.signal()
    }
}

/// A slave's batch of the master's messages, its local writes and the answers it keeps are
/// committed off its loop: the call hands the COMMIT to the writer and returns at once; what
/// touches the replica meanwhile waits for it without blocking the loop, and status is
/// answered from what is committed.
final class SlaveBatchOffTheLoopTests: XCTestCase {
    private var directory = ""
    private var loop: EventLoop!
    private var dataDirectory: DataDirectory!

    override func tearDown() {
        dataDirectory?.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A slave on a loop that is not running (its master never answers).
    private func slave() throws -> SlaveNode {
        directory = NSTemporaryDirectory() + "ordersync-slave-writer-" + UUID().uuidString
        var configuration = NodeConfiguration(
            role: .slave, dataDirectory: directory, store: nil, name: "till", serviceType: NodeDefaults.serviceType,
            port: 0, listenAddress: "127.0.0.1", masterURL: MasterURL(host: "127.0.0.1", port: 9))
        // A code to pair with (a slave without trust or code refuses to start); never used.
        configuration.pairingCode = try PairingCode(bytes: Array(0..<10))
        loop = try EventLoop()
        dataDirectory = try DataDirectory(claimingFor: configuration)
        return try SlaveNode(
            configuration: configuration, loop: loop, dataDirectory: dataDirectory, discovery: nil,
            logger: Logger(label: "test.slave"), reconnectJitter: .none)
    }

    /// Runs the loop until `done()` holds (checked every millisecond), at most 10 seconds.
    private func runLoop(until done: @escaping () -> Bool) { runUntil(loop, done) }

    func testTheSlaveCommitsItsBatchOffTheLoopAndWorkAfterItWaits() throws {
        let slave = try slave()
        slave.masterMessage(Array(#"{"type":"heartbeat","seq":0}"#.utf8))
        XCTAssertEqual(slave.writer.phase, .collecting, "the message is applied in an open batch")
        slave.commitBatch()
        // Returned before its COMMIT was handed back: that needs the loop, which is not running.
        XCTAssertEqual(slave.writer.phase, .committing)
        XCTAssertEqual(slave.replicaCommits.batches, 1)
        XCTAssertEqual(slave.status().orders, 0, "status answers during the commit")
        var after: [String] = []
        slave.afterBatch { after.append("after the batch") }
        slave.masterMessage(Array(#"{"type":"heartbeat","seq":0}"#.utf8))
        XCTAssertEqual(slave.waitingMessages.count, 1, "a message during the commit waits for the next batch")
        XCTAssertEqual(after, [], "work touching the replica waits for the commit")
        runLoop { slave.replicaCommits.batches == 2 && slave.writer.phase == .idle }
        XCTAssertEqual(after, ["after the batch"])
        XCTAssertEqual(slave.waitingMessages.count, 0)
        XCTAssertEqual(slave.replicaCommits.batches, 2, "the waiting message went in a batch of its own")
        XCTAssertEqual(slave.replicaCommits.failed, 0)
    }

    func testASlaveLocalWriteIsCommittedOffTheLoopAndAnsweredOnceOnDisk() throws {
        let slave = try slave()
        let order = JSONValue.object(
            JSONObject([
                ("uuid", .string(UUID().uuidString)), ("customerName", .string("Ada")),
                ("created", .string("2016-01-12T21:35:16+0800")),
            ]))
        var answered: Int?
        slave.localWrite(
            OperationMessage(operation: .create, orders: [order]), single: nil,
            respond: LocalAPIResponder { status, _ in answered = status })
        XCTAssertEqual(slave.writer.phase, .committing, "the write's COMMIT was handed off the loop")
        XCTAssertNil(answered, "answered only once on disk")
        runLoop { answered != nil }
        XCTAssertEqual(answered, 202, "stored here, pending for the master")
        XCTAssertEqual(try slave.writer.read { try $0.orderCount() }, 1)
        XCTAssertEqual(try slave.writer.read { try $0.outboxEntries().count }, 1)
    }

    func testAKeptAnswerIsOnDiskWhenSentAndARepeatGetsItsBytes() throws {
        let slave = try slave()
        // Not a UUID: refused here, nothing to send, the final answer at once.
        let invalid = JSONValue.object(
            JSONObject([
                ("uuid", .string("not-a-uuid")), ("customerName", .string("Ada")),
                ("created", .string("2016-01-12T21:35:16+0800")),
            ]))
        var message = OperationMessage(operation: .create, orders: [invalid])
        message.opId = "op-kept"
        var answers: [(status: Int, body: [UInt8], kept: Bool)] = []
        let respond = LocalAPIResponder { status, body in
            let kept = (try? slave.writer.read { try $0.keptAPIAnswer(opId: "op-kept") }) != nil
            answers.append((status, body, kept))
        }
        slave.localWrite(message, single: nil, respond: respond)
        runLoop { !answers.isEmpty && slave.writer.phase == .idle }
        XCTAssertEqual(answers.count, 1)
        guard answers.count == 1 else { return }
        XCTAssertTrue(answers[0].kept, "answered only once the answer is kept on disk")
        XCTAssertEqual(try slave.writer.read { try $0.keptAPIAnswer(opId: "op-kept") }?.body, answers[0].body)
        slave.localWrite(message, single: nil, respond: respond)
        XCTAssertEqual(answers.count, 2, "a repeat is answered at once, from the kept answer")
        guard answers.count == 2 else { return }
        XCTAssertEqual(answers[1].status, answers[0].status)
        XCTAssertEqual(answers[1].body, answers[0].body, "byte for byte")
    }
}
