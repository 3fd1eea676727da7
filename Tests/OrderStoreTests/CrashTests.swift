import Foundation
import SyncCore
import Synchronization
import WireTestSupport
import XCTest

@testable import OrderStore

/// Committed transactions survive a writer that never closes: one killed with SIGKILL, and one
/// still open in this process.
final class CrashTests: XCTestCase {
    /// Set in the child process: the database the child writes to before it is killed.
    private static let childDatabaseVariable = "ORDERSTORE_KILL_CHILD_DATABASE"
    /// Printed by the child once its transaction has committed.
    private static let committedMarker = "ORDERSTORE-CHILD-COMMITTED"
    private static let orderUUID = "C0FFEE00-0000-4000-8000-00000000DEAD"

    private var directory = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        if ProcessInfo.processInfo.environment[Self.childDatabaseVariable] == nil {
            directory = NSTemporaryDirectory() + "/orderstore-crash-\(getpid())-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
    }

    override func tearDownWithError() throws {
        if !directory.isEmpty { try? FileManager.default.removeItem(atPath: directory) }
        try super.tearDownWithError()
    }

    private static func committedOrder() -> Order {
        Order(
            uuid: orderUUID, customerName: "survivor",
            created: OrderTimestamp(epochMillis: 1_452_605_716_000, offsetMinutes: 480), tableSize: -1)
    }

    /// Opens `path`, commits one order and one journal entry, and returns the open writer.
    private static func writeAndKeepOpen(path: String) throws -> OrderDatabase {
        let writer = try OrderDatabase(path: path)
        try writer.transaction {
            try writer.insertOrder(committedOrder())
            try writer.appendJournal(
                JournalEntry(
                    seq: 1, opId: "op-survivor", origin: "local", operation: .create,
                    orderUUIDs: [orderUUID], message: Array("{}".utf8), recordedAtMillis: 1))
        }
        return writer
    }

    /// In this process: the writer commits and stays open; a second connection sees the row.
    /// In the child process started by the test below: the writer commits, says so, and waits
    /// to be killed.
    func testACommittedRowIsSeenByASecondConnectionWhileTheWriterStaysOpen() throws {
        if let childPath = ProcessInfo.processInfo.environment[Self.childDatabaseVariable] {
            let writer = try Self.writeAndKeepOpen(path: childPath)
            print(Self.committedMarker)
            fflush(nil) // every output stream: `stdout` is a C global Swift 6 will not touch
            while true { withExtendedLifetime(writer) { _ = pause() } }
        }
        let path = directory + "/orders.sqlite"
        let writer = try Self.writeAndKeepOpen(path: path)
        let second = try OrderDatabase(path: path)
        XCTAssertEqual(try second.order(uuid: Self.orderUUID), Self.committedOrder())
        XCTAssertEqual(try second.journalEntry(opId: "op-survivor")?.seq, 1)
        let reader = try OrderDatabase.openReadOnly(path: path)
        XCTAssertEqual(try reader.allOrders(), [Self.committedOrder()])
        withExtendedLifetime(writer) {}
    }

    /// A writer process commits and is killed with SIGKILL before it closes anything: the next
    /// open recovers the row from the WAL file.
    func testACommittedRowSurvivesKillDashNineOfTheWriterProcess() throws {
        let path = directory + "/orders.sqlite"
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        // The test binary runs just the child half of the test above.
        child.arguments = [
            "OrderStoreTests.CrashTests/testACommittedRowIsSeenByASecondConnectionWhileTheWriterStaysOpen"
        ]
        var environment = ProcessInfo.processInfo.environment
        environment[Self.childDatabaseVariable] = path
        child.environment = environment
        let output = Pipe()
        child.standardOutput = output
        child.standardError = FileHandle.nullDevice

        let committed = expectation(description: "the child committed")
        let seen = ChildOutput(marker: Self.committedMarker) { committed.fulfill() }
        output.fileHandleForReading.readabilityHandler = { handle in seen.append(handle.availableData) }
        try child.run()
        let result = XCTWaiter().wait(for: [committed], timeout: 60)
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        output.fileHandleForReading.readabilityHandler = nil
        guard result == .completed else {
            return XCTFail("the child never reported its commit; its output:\n\(seen.text)")
        }
        XCTAssertEqual(child.terminationReason, .uncaughtSignal)
        XCTAssertEqual(child.terminationStatus, SIGKILL)

        // The child never checkpointed: the committed transaction is only in the WAL file.
        let walSize = (try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? NSNumber)?.intValue
        XCTAssertGreaterThan(walSize ?? 0, 0)

        let reader = try OrderDatabase.openReadOnly(path: path)
        XCTAssertEqual(try reader.allOrders(), [Self.committedOrder()])
        reader.close()
        let reopened = try OrderDatabase(path: path)
        XCTAssertEqual(reopened.migrationsApplied, [], "the killed writer's migrations were committed too")
        XCTAssertEqual(try reopened.order(uuid: Self.orderUUID), Self.committedOrder())
        XCTAssertEqual(try reopened.lastJournalSeq(), 1)
        try reopened.insertOrder(
            Order(
                uuid: "C0FFEE00-0000-4000-8000-000000000002", customerName: "after",
                created: OrderTimestamp(epochMillis: 0)))
        XCTAssertEqual(try reopened.orderCount(), 2)
    }
}

/// The child's standard output, collected from the pipe's handler thread; calls `onMarker` once
/// when `marker` has arrived.
private final class ChildOutput: Sendable {
    private struct Received {
        var data = Data()
        var reported = false
    }

    private let received = Mutex(Received())
    private let marker: String
    private let onMarker: @Sendable () -> Void

    init(marker: String, onMarker: @escaping @Sendable () -> Void) {
        self.marker = marker
        self.onMarker = onMarker
    }

    /// Everything received so far.
    var text: String {
        received.withLock { String(decoding: $0.data, as: UTF8.self) }
    }

    func append(_ chunk: Data) {
        let report = received.withLock { received in
            received.data.append(chunk)
            let report = !received.reported && String(decoding: received.data, as: UTF8.self).contains(marker)
            if report { received.reported = true }
            return report
        }
        if report { onMarker() }
    }
}
