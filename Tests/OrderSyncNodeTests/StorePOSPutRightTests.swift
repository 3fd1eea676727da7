import Foundation
import JSON
import OrderStore
import SyncCore
import WireTestSupport
import XCTest

/// A plain StorePOS app whose change the master refuses is sent, right after the `error`, what
/// undoes the change under the app's rules (`MasterEngine+PutRight.swift`), so it shows the
/// master's version again; nobody else gets anything.
final class StorePOSPutRightTests: XCTestCase {
    private var master: MasterEngine!
    private var apps: [Int: StorePOSAppModel] = [:]
    private var now: Int64 = 1_000

    override func setUpWithError() throws {
        master = try MasterEngine(store: SQLiteMasterStore(db: try OrderDatabase.inMemory()), storeId: "s", epoch: "e")
        apps = [:]
    }

    /// Carries the master's messages to the apps; returns the texts sent to `peer`.
    @discardableResult
    private func deliver(_ actions: [MasterEngine.Action], to peer: Int = 1) -> [JSONObject] {
        apps.deliver(actions, to: peer).compactMap { try? JSONParser.parse($0).objectValue }
    }

    private func connect(_ id: Int) {
        apps[id] = StorePOSAppModel()
        deliver(master.peerConnected(id, address: "10.0.0.\(id):5000", terminal: nil), to: id)
        while master.isReceivingSnapshot(id) { deliver(master.snapshotDue(for: id), to: id) }
    }

    private func order(_ uuid: String, _ fields: [(String, JSONValue)]) -> JSONValue {
        .object(JSONObject([("uuid", .string(uuid)), ("created", .string("2016-01-12T21:35:16+0800"))] + fields))
    }

    /// A write through the local API.
    private func write(_ operation: OperationKind, _ uuid: String, _ fields: [(String, JSONValue)] = []) {
        now += 1
        let (outcome, actions) = master.localWrite(
            OperationMessage(operation: operation, orders: [order(uuid, fields)]), origin: "api", now: now)
        XCTAssertNotNil(outcome.seq, "\(operation) \(uuid): \(outcome.errors)")
        deliver(actions)
    }

    private func completed(_ uuid: String, _ name: String) {
        write(.create, uuid, [("customerName", .string(name)), ("tableSize", .int(4))])
        write(.update, uuid, [("status", .string("in_progress"))])
        write(.update, uuid, [("status", .string("completed"))])
    }

    private func send(_ text: String?, from id: Int) throws -> [JSONObject] {
        now += 1
        return deliver(master.received(try XCTUnwrap(text), from: id, now: now), to: id)
    }

    /// `error`, or `operation N`.
    private func kind(_ message: JSONObject) -> String {
        message["type"]?.stringValue ?? "operation \(message["operation"]?.intValue ?? -1)"
    }

    private func uuidOf(_ message: JSONObject) -> String? {
        message["orders"]?.arrayValue?.first?.objectValue?["uuid"]?.stringValue
    }

    private func shows(_ id: Int) throws -> [StorePOSAppModel.Row] {
        try XCTUnwrap(apps[id]).list.sorted { $0.uuid < $1.uuid }
    }

    private func mastersRows() throws -> [StorePOSAppModel.Row] {
        try master.store.allOrders().map { StorePOSAppModel.Row(uuid: $0.uuid, customerName: $0.customerName) }
            .sorted { $0.uuid < $1.uuid }
    }

    func testARefusedUpdateAndARefusedRemoveAreUndoneOnTheSenderOnly() throws {
        let edited = UUID().uuidString.lowercased()
        let removed = UUID().uuidString.lowercased()
        completed(edited, "Ann")
        completed(removed, "Bob")
        write(.create, UUID().uuidString.lowercased(), [("customerName", .string("Cy"))])
        connect(1)
        connect(2)

        let update = try send(apps[1]?.update(edited, "Ann, table 9"), from: 1)
        XCTAssertEqual(update.map(kind), ["error", "operation 1"])
        XCTAssertEqual(update[0]["code"], .string("invalid_transition"))
        XCTAssertEqual(uuidOf(update[1]), edited)
        XCTAssertEqual(update[1]["orders"]?.arrayValue?.first?.objectValue?["customerName"], .string("Ann"))
        XCTAssertEqual(update[1]["orders"]?.arrayValue?.first?.objectValue?["tableSize"], .int(4))

        let remove = try send(apps[1]?.remove(removed), from: 1)
        XCTAssertEqual(remove.count, 2)
        XCTAssertEqual(remove[1]["operation"], .int(0), "a Create: the app deleted the row from its Realm before sending")
        XCTAssertEqual(uuidOf(remove[1]), removed)

        XCTAssertEqual(try shows(1), try mastersRows())
        XCTAssertEqual(try shows(2), try mastersRows())
    }

    func testTheUUIDIsSpelledAsTheAppSentIt() throws {
        let uuid = UUID().uuidString.lowercased()
        completed(uuid, "Ann")
        connect(1)
        let upper = uuid.uppercased()
        let text = OperationMessage(operation: .update, orders: [order(upper, [("customerName", .string("x"))])]).encoded()
        let answer = try send(text, from: 1)
        XCTAssertEqual(answer.count, 2)
        XCTAssertEqual(uuidOf(answer[1]), upper)
    }

    func testARefusedCreateOfARemovedOrderIsRemovedAndOfAnExistingOneUpdated() throws {
        let gone = UUID().uuidString.lowercased()
        write(.create, gone, [("customerName", .string("Gone"))])
        write(.remove, gone)
        let kept = UUID().uuidString.lowercased()
        write(.create, kept, [("customerName", .string("Kept"))])
        connect(1)

        let again = try send(apps[1]?.create(gone, "Again"), from: 1)
        XCTAssertEqual(again.map(kind), ["error", "operation 2"])
        XCTAssertEqual(again[0]["code"], .string("removed"))
        XCTAssertEqual(uuidOf(again[1]), gone)
        XCTAssertFalse(try shows(1).contains { $0.uuid == gone })

        let other = OperationMessage(operation: .create, orders: [order(kept, [("customerName", .string("Other"))])]).encoded()
        let exists = try send(other, from: 1)
        XCTAssertEqual(exists.map(kind), ["error", "operation 1"])
        XCTAssertEqual(exists[0]["code"], .string("already_exists"))
        XCTAssertEqual(exists[1]["orders"]?.arrayValue?.first?.objectValue?["customerName"], .string("Kept"))
    }

    /// The app reads the table size typed on its form with `integerValue` (EditOrderViewController.m
    /// line 111), so staff can take an order the master refuses (`invalid_field`): the app inserted
    /// it in its list and Realm before sending it, and is sent a Remove of it; nobody else is.
    func testACreateRefusedForWhatItHoldsIsTakenOffTheSendersScreen() throws {
        write(.create, UUID().uuidString.lowercased(), [("customerName", .string("Kept"))])
        connect(1)
        connect(2)
        let uuid = UUID().uuidString
        _ = apps[1]?.create(uuid, "Big table")
        let text = OperationMessage(
            operation: .create, orders: [order(uuid, [("customerName", .string("Big table")), ("tableSize", .int(500_000))])]
        ).encoded()
        XCTAssertEqual(try shows(1).count, 2, "the app shows its order before the master answers")
        let answer = try send(text, from: 1)
        XCTAssertEqual(answer.map(kind), ["error", "operation 2"])
        XCTAssertEqual(answer.first?["code"], .string("invalid_field"))
        XCTAssertEqual(answer.dropFirst().first.flatMap(uuidOf), uuid, "spelled as the app sent it")
        XCTAssertEqual(try shows(1), try mastersRows())
        XCTAssertNil(apps[1]?.persisted[uuid], "gone from the app's Realm too")
        XCTAssertEqual(try shows(2), try mastersRows())
    }

    /// Streams the rest of terminal 1's connect sequence to its app, past its pauses.
    private func streamRest() -> [JSONObject] {
        var received: [JSONObject] = []
        while master.isReceivingSnapshot(1) { received += deliver(master.snapshotStep(for: 1)) }
        return received
    }

    func testARemoveRefusedBeforeItsConnectSequenceCreatedTheOrderIsPutRightByThatCreate() throws {
        let uuid = UUID().uuidString.lowercased()
        completed(uuid, "Ann")
        connect(1)
        var app = apps.removeValue(forKey: 1)!
        deliver(master.peerDisconnected(1, now: now))
        app.restart()
        // It comes back holding the order, and removes it before it handles the sequence.
        master.pacesSnapshots = true
        master.storePOSFence = 2
        apps[1] = app
        deliver(master.peerConnected(1, address: "10.0.0.1:5000", terminal: nil))
        XCTAssertTrue(master.isReceivingSnapshot(1))
        XCTAssertEqual(try send(apps[1]?.remove(uuid), from: 1), [], "held until its sequence is out")
        let received = streamRest()
        XCTAssertEqual(received.last?["code"], .string("invalid_transition"))
        XCTAssertEqual(received.filter { $0["operation"] == .int(0) }.count, 1, "only the sequence's own Create")
        XCTAssertEqual(apps[1]?.crashed, false)
        XCTAssertEqual(try shows(1), try mastersRows())
    }

    func testARemoveRefusedAfterItsConnectSequenceCreatedTheOrderIsPutRightByACreateAfterTheSequence() throws {
        let uuid = UUID().uuidString.lowercased()
        completed(uuid, "Ann")
        master.pacesSnapshots = true
        master.storePOSFence = 2
        apps[1] = StorePOSAppModel()
        deliver(master.peerConnected(1, address: "10.0.0.1:5000", terminal: nil))
        var received: [JSONObject] = []
        while !received.contains(where: { $0["operation"] == .int(0) }) { received += deliver(master.snapshotStep(for: 1)) }
        XCTAssertTrue(master.isReceivingSnapshot(1), "the Create went out, the sequence not yet")
        XCTAssertEqual(try send(apps[1]?.remove(uuid), from: 1), [], "held until its sequence is out")
        let tail = streamRest().filter { $0["orders"]?.arrayValue?.isEmpty != true }
        XCTAssertEqual(tail.first?["code"], .string("invalid_transition"))
        XCTAssertEqual(tail.last?["operation"], .int(0), "a Create: the app removed the copy the sequence gave it")
        XCTAssertEqual(apps[1]?.crashed, false)
        XCTAssertEqual(try shows(1), try mastersRows())
    }

    func testAnOrderSyncSlaveGetsItsErrorAndResultOnly() throws {
        let uuid = UUID().uuidString.lowercased()
        completed(uuid, "Ann")
        XCTAssertEqual(master.peerConnected(3, address: "10.0.0.3:1", terminal: AuthenticatedTerminal(nodeId: "t", name: "bar")), [])
        let hello = HelloMessage(terminalId: "t", terminalName: "bar", store: "s", lastSeq: master.lastSeq, epoch: "e")
        deliver(master.received(hello.encoded(), from: 3, now: now), to: 3)
        let text = OperationMessage(operation: .update, orders: [order(uuid, [("customerName", .string("x"))])], opId: "op-1").encoded()
        let answer = try send(text, from: 3)
        XCTAssertEqual(answer.map(kind), ["error", "result"], "no put-right for an OrderSync slave")
    }

    func testAnUpdateOfAnOrderTheMasterDoesNotHaveIsNotPutRight() throws {
        connect(1)
        let text = OperationMessage(operation: .update, orders: [order(UUID().uuidString, [])]).encoded()
        let answer = try send(text, from: 1)
        XCTAssertEqual(answer.map { $0["code"] }, [.string("not_found")])
    }
}
