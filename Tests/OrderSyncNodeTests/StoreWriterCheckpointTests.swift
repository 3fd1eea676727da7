import EventLoopIO
import Foundation
import SyncCore
import XCTest

@testable import OrderStore
@testable import OrderSyncNode

/// The log's checkpoint leaves the groups' COMMITs (Docs/PERFORMANCE.md, "Quiet-hour latency"):
/// the group whose COMMIT finds the log past the threshold is answered first, then the writer
/// checkpoints on its commit thread.
final class StoreWriterCheckpointTests: StoreOnLoopTestCase {

    func testTheGroupThatFillsTheLogIsAnsweredBeforeTheCheckpointRunsOnTheCommitThread() throws {
        let loop: EventLoop = self.loop
        let writer = StoreWriter(database: database, loop: loop, label: "test")
        var answered = 0
        var checkpointsWhenAnswered: [Int] = []
        var failures = 0
        func step() {
            if writer.checkpoints.runs > 0 || answered > 20_000 {
                loop.stop()
                return
            }
            if writer.phase == .idle {
                do {
                    try writer.openGroup()
                    try writer.collect {
                        try $0.insertOrder(
                            Order(
                                uuid: UUID().uuidString.lowercased(), customerName: "c\(answered)",
                                created: OrderTimestamp(epochMillis: 1_452_605_716_000, offsetMinutes: 0), tableSize: 2))
                    }
                } catch {
                    failures += 1
                    loop.stop()
                    return
                }
                writer.commit { result in
                    if case .failure = result { failures += 1 }
                    answered += 1
                    checkpointsWhenAnswered.append(writer.checkpoints.runs)
                }
            }
            loop.schedule(after: .zero) { step() }
        }
        let deadline = loop.schedule(after: .seconds(30)) { loop.stop() }
        loop.schedule(after: .zero) { step() }
        loop.run()
        loop.cancel(deadline)
        // The loop stopped with the next group possibly still committing; the writer is closed
        // before any assertion, so that a failed one leaves no connection lent.
        let inFlight = writer.waitForCommitAtShutdown() == nil ? 0 : 1
        writer.close()

        XCTAssertEqual(failures, 0)
        XCTAssertEqual(writer.checkpoints.runs, 1, "no checkpoint ran on the commit thread after \(answered) groups")
        XCTAssertEqual(writer.checkpoints.failures, 0)
        // Every group up to the one that filled the log was answered before the checkpoint ran;
        // only the last, committed behind the checkpoint on the commit thread, may follow it.
        XCTAssertEqual(
            Array(checkpointsWhenAnswered.dropLast()), Array(repeating: 0, count: max(answered - 1, 0)),
            "a group waited for the checkpoint")
        guard case .success(let outcome)? = writer.checkpoints.last else {
            return XCTFail("\(String(describing: writer.checkpoints.last))")
        }
        XCTAssertGreaterThanOrEqual(outcome.logPages, WALCheckpointer.thresholdPages)
        // PASSIVE: the next group's transaction, opened on the loop meanwhile, may keep the last
        // frames from being copied (they go with the next checkpoint); never none of them.
        XCTAssertGreaterThan(outcome.checkpointedPages, 0)
        XCTAssertLessThanOrEqual(outcome.checkpointedPages, outcome.logPages)
        XCTAssertEqual(try OrderDatabase(path: directory + "/store.sqlite").orderCount(), answered + inFlight)
    }

    private func order(_ n: Int) -> Order {
        Order(
            uuid: UUID().uuidString.lowercased(), customerName: "c\(n)",
            created: OrderTimestamp(epochMillis: 1_452_605_716_000, offsetMinutes: 0), tableSize: 2)
    }

    private var logBytes: Int {
        (try? FileManager.default.attributesOfItem(atPath: directory + "/store.sqlite-wal")[.size] as? Int) ?? 0
    }

    /// Groups one after another, each opened the way the master opens its next one
    /// (`whenIdle`), until `stop()`; `afterCommit` runs with each group's answer.
    private func flood(
        _ writer: StoreWriter, ordersPerGroup: Int, until stop: @escaping () -> Bool, afterCommit: @escaping () -> Void
    ) -> (groups: Int, failures: Int, openedDuringCheckpoint: Int) {
        let loop: EventLoop = self.loop
        var groups = 0
        var failures = 0
        var openedDuringCheckpoint = 0
        func next() {
            if stop() || groups > 20_000 { return loop.stop() }
            if writer.holdsGroupsForCheckpoint { openedDuringCheckpoint += 1 }
            do {
                try writer.openGroup()
                try writer.collect { db in
                    for _ in 0..<ordersPerGroup { try db.insertOrder(order(groups)) }
                }
            } catch {
                failures += 1
                return loop.stop()
            }
            writer.commit { result in
                if case .failure = result { failures += 1 }
                groups += 1
                afterCommit()
                writer.whenIdle { next() }
            }
        }
        let deadline = loop.schedule(after: .seconds(60)) { loop.stop() }
        loop.schedule(after: .zero) { next() }
        loop.run()
        loop.cancel(deadline)
        return (groups, failures, openedDuringCheckpoint)
    }

    /// Under a flood the log is written over from its beginning after each checkpoint instead of
    /// growing (Docs/PERFORMANCE.md, "The log written over, not grown"): the group after a
    /// COMMIT that filled the log waits for the checkpoint, begins with the whole log in the
    /// database file, and SQLite starts the log over at its COMMIT. The file stays within its
    /// limit and a group of pages; a group opened during the checkpoint (as before) made it grow
    /// by every COMMIT, to tens of megabytes under the master's flood.
    func testUnderAFloodEachCheckpointLetsTheNextGroupWriteTheLogOverFromItsBeginning() throws {
        let writer = StoreWriter(database: database, loop: loop, label: "test")
        var largest = 0
        let run = flood(writer, ordersPerGroup: 5, until: { writer.checkpoints.runs >= 4 }) {
            largest = max(largest, self.logBytes)
        }
        let inFlight = writer.waitForCommitAtShutdown() == nil ? 0 : 1
        writer.close()

        XCTAssertEqual(run.failures, 0)
        XCTAssertEqual(run.openedDuringCheckpoint, 0, "a group opened while the log's checkpoint ran")
        XCTAssertGreaterThanOrEqual(writer.checkpoints.runs, 4, "after \(run.groups) groups")
        XCTAssertEqual(writer.checkpoints.failures, 0)
        guard case .success(let last)? = writer.checkpoints.last else {
            return XCTFail("\(String(describing: writer.checkpoints.last))")
        }
        XCTAssertEqual(last.checkpointedPages, last.logPages, "the checkpoint left pages in the log")
        // At most a threshold's pages and the group that crossed it (each page a 24-byte frame
        // header before it): four logs' worth of pages went through a file of one.
        XCTAssertLessThanOrEqual(largest, WALCheckpointer.logSizeLimit + 256 * 1024, "the log grew past its limit")
        XCTAssertEqual(writer.checkpoints.truncations, 0, "the log was emptied while groups flowed")
        XCTAssertEqual(try OrderDatabase(path: directory + "/store.sqlite").orderCount(), (run.groups + inFlight) * 5)
    }

    /// A reader that keeps an older view stops the checkpoints from copying the whole log, so
    /// the log grows; once the reader is gone and the store has been quiet for a second, the
    /// grown file is emptied, and not before.
    func testALogGrownPastItsLimitIsEmptiedOnlyOnceTheStoreIsQuiet() throws {
        let writer = StoreWriter(database: database, loop: loop, label: "test")
        let reader = try OrderDatabase.openReader(of: database)
        defer { reader.close() }
        try reader.connection.executeOnce("BEGIN")
        _ = try reader.orderCount()
        var largest = 0
        let run = flood(writer, ordersPerGroup: 5, until: { self.logBytes > WALCheckpointer.logSizeLimit * 3 / 2 }) {
            largest = max(largest, self.logBytes)
        }
        XCTAssertEqual(run.failures, 0)
        XCTAssertGreaterThan(writer.checkpoints.runs, 0)
        try reader.connection.executeOnce("COMMIT")
        let grown = logBytes
        XCTAssertGreaterThan(grown, WALCheckpointer.logSizeLimit)
        // The reader is gone; a few more groups go in while the store is busy, the last of them
        // taking the log past the threshold again (a checkpoint, which now copies everything).
        let before = run.groups
        let more = flood(writer, ordersPerGroup: 5, until: { writer.checkpoints.lastCopiedAll }) {}
        XCTAssertEqual(more.failures, 0)
        XCTAssertEqual(writer.checkpoints.truncations, 0, "emptied while groups flowed (\(before) + \(more.groups))")
        let quietSince = ContinuousClock.now
        var emptiedAfter: Duration?
        runUntil(loop) {
            guard writer.checkpoints.truncations > 0 else { return false }
            emptiedAfter = ContinuousClock.now - quietSince
            return true
        }
        writer.close()
        guard let emptiedAfter else { return XCTFail("the grown log (\(grown) B) was not emptied") }
        XCTAssertGreaterThanOrEqual(emptiedAfter, .milliseconds(900), "emptied before the store was quiet")
        XCTAssertEqual(logBytes, 0)
    }

    /// A write outside the groups (a pairing, a token) asked for while the next group waits for
    /// the log's checkpoint waits for it too: begun before it, its transaction would keep SQLite
    /// from writing the log over from its beginning.
    func testAWriteAskedForDuringTheCheckpointWaitsForIt() throws {
        let writer = StoreWriter(database: database, loop: loop, label: "test")
        var checkpointsWhenAsked: Int?
        var checkpointsWhenWritten: Int?
        var written: Result<Void, any Error>?
        let run = flood(writer, ordersPerGroup: 5, until: { written != nil }) {
            guard checkpointsWhenAsked == nil, writer.holdsGroupsForCheckpoint else { return }
            checkpointsWhenAsked = writer.checkpoints.runs
            writer.write({ db in
                checkpointsWhenWritten = writer.checkpoints.runs
                try db.insertOrder(self.order(-1))
            }) { result in written = result }
        }
        let inFlight = writer.waitForCommitAtShutdown() == nil ? 0 : 1
        writer.close()

        XCTAssertEqual(run.failures, 0)
        let asked = try XCTUnwrap(checkpointsWhenAsked, "the log was never held for its checkpoint in \(run.groups) groups")
        XCTAssertNoThrow(try XCTUnwrap(written).get())
        XCTAssertEqual(checkpointsWhenWritten, asked + 1, "the write began before the checkpoint it was asked during ended")
        XCTAssertEqual(try OrderDatabase(path: directory + "/store.sqlite").orderCount(), (run.groups + inFlight) * 5 + 1)
    }
}
