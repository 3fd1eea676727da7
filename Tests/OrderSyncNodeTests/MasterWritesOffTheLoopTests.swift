import Dispatch
import EventLoopIO
import Foundation
import JSON
import Logging
import NodePolicy
import SecureLink
import SyncCore
import XCTest

@testable import OrderStore
@testable import OrderSyncNode

/// The master's writes outside its groups (dashboard tokens, revoking) commit off its loop and
/// are answered once on disk; during a group's commit they wait for it, in order.
final class MasterWritesOffTheLoopTests: XCTestCase {
    private var directory = ""
    var loop: EventLoop!
    private var dataDirectory: DataDirectory!

    override func tearDown() {
        dataDirectory?.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A master on a loop that is not running; its COMMITs run on `commitQueue` when one is
    /// given (a queue the test may hold shut).
    func master(commitQueue: DispatchQueue? = nil) throws -> MasterNode {
        directory = NSTemporaryDirectory() + "ordersync-master-writer-" + UUID().uuidString
        let configuration = NodeConfiguration(
            role: .master, dataDirectory: directory, store: "test-store", name: "office",
            serviceType: NodeDefaults.serviceType, port: 0, listenAddress: "127.0.0.1", masterURL: nil)
        loop = try EventLoop()
        dataDirectory = try DataDirectory(claimingFor: configuration)
        let logger = Logger(label: "test.master")
        let seat = try commitQueue.map { queue in
            RoleSeat(
                dataDirectory: dataDirectory,
                writer: StoreWriter(store: dataDirectory.store, loop: loop, label: "master", commitQueue: queue),
                frontEnds: try FrontEnds(configuration: configuration, loop: loop, logger: logger, dashboard: nil))
        }
        return try MasterNode(
            configuration: configuration, loop: loop, dataDirectory: dataDirectory, discovery: nil, logger: logger,
            seat: seat, promotion: nil)
    }

    private func stored(_ master: MasterNode, _ key: String) throws -> String? {
        try master.writer.read { try $0.metadata(key) }
    }

    func testADashboardTokenIsStoredOffTheLoopAndAnsweredOnceOnDisk() throws {
        let master = try master()
        var answered: Int?
        var onDiskWhenAnswered = false
        master.handleMasterAPI(
            .makeDashboardToken(name: "till"),
            LocalAPIResponder { status, _ in
                answered = status
                onDiskWhenAnswered = (try? self.stored(master, DashboardTokens.metadataKey))??.contains("till") == true
            })
        XCTAssertEqual(master.writer.phase, .committing, "the token's COMMIT was handed off the loop")
        XCTAssertNil(answered, "answered only once on disk")
        runUntil(loop) { answered != nil }
        XCTAssertEqual(answered, 201)
        XCTAssertTrue(onDiskWhenAnswered)
        XCTAssertEqual(master.dashboardTokens.tokens.map(\.name), ["till"])
    }

    func testTwoTokensMadeDuringAGroupCommitAreBothKeptInOrder() throws {
        let master = try master()
        var events: [String] = []
        let order = JSONValue.object(
            JSONObject([
                ("uuid", .string(UUID().uuidString)), ("customerName", .string("Ada")),
                ("created", .string("2016-01-12T21:35:16+0800")),
            ]))
        master.enqueue(
            .local(
                OperationMessage(operation: .create, orders: [order]), origin: "test", single: nil,
                respond: LocalAPIResponder { status, _ in events.append("write \(status)") }))
        master.runGroup()
        XCTAssertEqual(master.writer.phase, .committing)
        for name in ["a", "b"] {
            master.handleMasterAPI(
                .makeDashboardToken(name: name), LocalAPIResponder { status, _ in events.append("token \(name) \(status)") })
        }
        master.handleMasterAPI(.revokeTerminal("nobody"), LocalAPIResponder { status, _ in events.append("revoke \(status)") })
        XCTAssertEqual(events, [], "nothing answered before the group is on disk")
        runUntil(loop) { events.count == 4 }
        XCTAssertEqual(events, ["write 200", "token a 201", "token b 201", "revoke 404"])
        XCTAssertEqual(master.dashboardTokens.tokens.map(\.name), ["a", "b"], "the second started from the first")
        XCTAssertEqual(master.writer.phase, .idle)
    }

    func testAWriteIsAnsweredWhenTheStoreTakesNoGroup() throws {
        let master = try master()
        dataDirectory.store.close()
        var answered: (status: Int, body: String)?
        let order = JSONValue.object(
            JSONObject([
                ("uuid", .string(UUID().uuidString)), ("customerName", .string("Ada")),
                ("created", .string("2016-01-12T21:35:16+0800")),
            ]))
        master.enqueue(
            .local(
                OperationMessage(operation: .create, orders: [order]), origin: "test", single: nil,
                respond: LocalAPIResponder { status, body in answered = (status, String(decoding: body, as: UTF8.self)) }))
        runUntil(loop) { answered != nil }
        XCTAssertEqual(answered?.body.contains("storage_failed"), true, "refused as a storage failure, not left waiting")
        XCTAssertEqual(master.group.pending, 0)
    }

    func testARevocationIsAnsweredOnceOnDisk() throws {
        let master = try master()
        var added: Result<Void, any Error>?
        master.storeWrite({
            try $0.addPairedTerminal(
                PairedTerminal(nodeId: "node-1", publicKey: Array(repeating: 7, count: 32), name: "till", pairedAtMillis: 1))
        }) { added = $0 }
        runUntil(loop) { added != nil }
        var answered: Int?
        var revokedOnDisk = false
        master.handleMasterAPI(
            .revokeTerminal("till"),
            LocalAPIResponder { status, _ in
                answered = status
                // The master's own member row stays (PROTOCOL 7.20); the till is gone.
                revokedOnDisk = (try? master.writer.read { try $0.pairedTerminals() })?.contains { $0.name == "till" } == false
            })
        XCTAssertEqual(master.writer.phase, .committing)
        XCTAssertNil(answered)
        runUntil(loop) { answered != nil }
        XCTAssertEqual(answered, 200)
        XCTAssertTrue(revokedOnDisk)
    }
}
