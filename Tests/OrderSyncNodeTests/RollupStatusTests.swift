import Foundation
import JSON
import XCTest

@testable import OrderSyncNode

/// The roll-up's status says what is going on now: an error it recovered from is history
/// (`previousError`, with when it was over), not `lastError`.
final class RollupStatusTests: XCTestCase {
    private func status() -> RollupStatus {
        RollupStatus(
            running: true, pid: 1, storeId: "s1", lineage: "e1", checkpointSeq: 0, checkpointAtMillis: nil, stableSeq: 0,
            localLastSeq: 0, lagEntries: 0, lagSeconds: 0, lastError: nil, state: "shipping", up: false)
    }

    func testRecoveringClearsTheErrorAndKeepsItAsHistory() throws {
        var s = status()
        s.lastError = ("unreachable", "connection refused", 1_000)
        XCTAssertEqual(s.json["lastError"]?.objectValue?["code"], .string("unreachable"))
        s.recovered(atMillis: 5_000)
        XCTAssertEqual(s.json["lastError"], .null)
        let previous = try XCTUnwrap(s.json["previousError"]?.objectValue)
        XCTAssertEqual(previous["code"], .string("unreachable"))
        XCTAssertEqual(previous["message"], .string("connection refused"))
        XCTAssertEqual(previous["at"], .string(RollupStatus.iso(1_000)))
        XCTAssertEqual(previous["clearedAt"], .string(RollupStatus.iso(5_000)))
    }

    func testRecoveringWithNoErrorKeepsTheHistoryAsItWas() throws {
        var s = status()
        XCTAssertEqual(s.json["previousError"], .null)
        s.lastError = ("query", "permission denied", 1_000)
        s.recovered(atMillis: 2_000)
        s.recovered(atMillis: 9_000)
        XCTAssertEqual(s.json["previousError"]?.objectValue?["clearedAt"], .string(RollupStatus.iso(2_000)))
    }

    func testANewErrorAfterRecoveryIsCurrentAgain() throws {
        var s = status()
        s.lastError = ("unreachable", "timeout", 1_000)
        s.recovered(atMillis: 2_000)
        s.lastError = ("query", "permission denied", 3_000)
        XCTAssertEqual(s.json["lastError"]?.objectValue?["code"], .string("query"))
        XCTAssertEqual(s.json["previousError"]?.objectValue?["code"], .string("unreachable"))
    }
}
