import Dispatch
import EventLoopIO
import Foundation
import JSON
import Logging
import NodePolicy
import SyncCore
import XCTest

@testable import OrderStore
@testable import OrderSyncNode

/// A master that leaves its role for another (a step-down) while a group commits: the local API
/// keeps running across the hand-over, so its callers are answered, never left to time out.
final class StepDownAnswerTests: XCTestCase {
    private var directory = ""
    private var loop: EventLoop!
    private var dataDirectory: DataDirectory!
    private let commitQueue = DispatchQueue(label: "test.master.commit")
    private let gate = DispatchSemaphore(value: 0)

    override func tearDown() {
        dataDirectory?.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A master on a loop that is not running, whose COMMITs wait until the test opens the gate.
    private func heldMaster() throws -> MasterNode {
        directory = NSTemporaryDirectory() + "ordersync-step-down-" + UUID().uuidString
        let configuration = NodeConfiguration(
            role: .master, dataDirectory: directory, store: "test-store", name: "office",
            serviceType: NodeDefaults.serviceType, port: 0, listenAddress: "127.0.0.1", masterURL: nil)
        loop = try EventLoop()
        dataDirectory = try DataDirectory(claimingFor: configuration)
        commitQueue.async { [gate] in gate.wait() }
        let writer = StoreWriter(store: dataDirectory.store, loop: loop, label: "master", commitQueue: commitQueue)
        let logger = Logger(label: "test.master")
        let seat = RoleSeat(
            dataDirectory: dataDirectory, writer: writer,
            frontEnds: try FrontEnds(configuration: configuration, loop: loop, logger: logger, dashboard: nil))
        return try MasterNode(
            configuration: configuration, loop: loop, dataDirectory: dataDirectory, discovery: nil, logger: logger,
            seat: seat, promotion: nil)
    }

    private func create(_ name: String) -> LocalAPIRoute {
        .write(
            OperationMessage(
                operation: .create, orders: [.object(JSONObject([("uuid", .string(UUID().uuidString)), ("customerName", .string(name))]))]),
            single: nil)
    }

    func testAStepDownAnswersTheCommittingGroupAndRefusesWhatWaits() throws {
        let master = try heldMaster()
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
