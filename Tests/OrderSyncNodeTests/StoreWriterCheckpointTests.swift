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
}
