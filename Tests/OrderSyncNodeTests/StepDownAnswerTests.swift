import Dispatch
import EventLoopIO
import Foundation
import JSON
import NodePolicy
import SyncCore
import XCTest

@testable import OrderSyncNode

/// A master that leaves its role for another (a step-down) while a group commits: the local API
/// keeps running across the hand-over, so its callers are answered, never left to time out.
extension MasterWritesOffTheLoopTests {
    private func create(_ name: String) -> LocalAPIRoute {
        .write(
            OperationMessage(
                operation: .create, orders: [.object(JSONObject([("uuid", .string(UUID().uuidString)), ("customerName", .string(name))]))]),
            single: nil)
    }

    func testAStepDownAnswersTheCommittingGroupAndRefusesWhatWaits() throws {
        // COMMITs wait until the test opens the gate.
        let (commitQueue, gate) = (DispatchQueue(label: "test.master.commit"), DispatchSemaphore(value: 0))
        commitQueue.async { gate.wait() }
        let master = try master(commitQueue: commitQueue)
        var answers: [String: (status: Int, body: JSONValue?)] = [:]
        func responder(_ key: String) -> LocalAPIResponder {
            LocalAPIResponder { status, body in answers[key] = (status, try? JSONParser.parse(body)) }
        }
        master.handleAPI(create("committing"), responder("committing"))
        runUntil(loop) { master.writer.phase == .committing }
        // Queued behind the COMMIT: its group never opens.
        master.handleAPI(create("waiting"), responder("waiting"))
        XCTAssertTrue(answers.isEmpty)

        // The role leaves for another: the COMMIT ends and the role finishes.
        master.seat.handingOver = true
        gate.signal()
        master.finishGroups()

        XCTAssertEqual(answers["committing"]?.status, 200, "the committed write gets its real outcome")
        XCTAssertEqual(answers["committing"]?.body?.objectValue?["applied"]?.arrayValue?.count, 1)
        XCTAssertEqual(answers["waiting"]?.status, 503)
        XCTAssertEqual(answers["waiting"]?.body?.objectValue?["error"]?.objectValue?["code"]?.stringValue, "stepped_down")
        XCTAssertEqual(try master.writer.read { try $0.orderCount() }, 1, "the refused write was not applied")
    }
}
