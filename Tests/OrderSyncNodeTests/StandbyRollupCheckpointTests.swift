import Foundation
import XCTest

@testable import OrderSyncNode

/// A standby reads head office's checkpoint for its compaction from the roll-up's
/// `rollup.state.json`, only when the file names the copy's store and lineage.
final class StandbyRollupCheckpointTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "standby-rollup-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: directory) }

    /// What a copy of store `s1` in lineage `e1` is told, with a state file naming
    /// `store`/`lineage`.
    private func checkpoint(stateFor store: String, lineage: String) throws -> Int64? {
        let state = #"{"running":false,"storeId":"\#(store)","lineage":"\#(lineage)","checkpoint":{"seq":42}}"#
        try Data(state.utf8).write(to: URL(fileURLWithPath: directory + "/" + RollupStatus.fileName))
        return SlaveNode.standbyRollupCheckpoint(dataDirectory: directory)("s1", "e1")
    }

    func testTheCopysOwnCheckpointCounts() throws {
        XCTAssertEqual(try checkpoint(stateFor: "s1", lineage: "e1"), 42)
    }

    func testAnotherLineagesCheckpointDoesNot() throws {
        XCTAssertNil(try checkpoint(stateFor: "s1", lineage: "e0"))
    }

    func testAnotherStoresCheckpointDoesNot() throws {
        XCTAssertNil(try checkpoint(stateFor: "s2", lineage: "e1"))
    }
}
