import Foundation
import JSON
import OrderStore
import SyncCore
import WireTestSupport
import XCTest

/// Plain StorePOS terminals on the master engine (paced snapshots, the real SQLite store), each
/// one a `StorePOSAppModel`: whatever an app held before it connects, and whatever happens while
/// its snapshot goes out, it ends showing each of the master's orders exactly once.
final class StorePOSSyncTests: XCTestCase {
    private var master: MasterEngine!
    private var apps: [Int: StorePOSAppModel] = [:]
    private var now: Int64 = 1_000

    override func setUpWithError() throws {
        master = try MasterEngine(store: SQLiteMasterStore(db: try OrderDatabase.inMemory()), storeId: "s", epoch: "e")
        master.pacesSnapshots = true
        master.snapshotChunk = 3
        master.storePOSFence = 2
        apps = [:]
    }

    // MARK: Harness

    /// Carries the master's messages to the apps connected.
    private func deliver(_ actions: [MasterEngine.Action]) {
        for action in actions {
            switch action {
            case .send(let peer, let text): apps[peer]?.receive(text.text)
            case .broadcast(let text, let peers): for peer in peers { apps[peer]?.receive(text.text) }
            default: break
            }
        }
    }

    private func texts(_ actions: [MasterEngine.Action], to peer: Int) -> [String] {
        actions.compactMap {
            switch $0 {
            case .send(let p, let text) where p == peer: return text.text
            case .broadcast(let text, let peers) where peers.contains(peer): return text.text
            default: return nil
            }
        }
    }

    /// Connects `app` as terminal `id`; its whole snapshot goes out unless `streaming` is false.
    @discardableResult
    private func connect(_ id: Int, _ app: StorePOSAppModel = StorePOSAppModel(), streaming: Bool = true) -> [String] {
        apps[id] = app
        let started = master.peerConnected(id, address: "10.0.0.\(id):5000", terminal: nil)
        deliver(started)
        var received = texts(started, to: id)
        while streaming, master.isReceivingSnapshot(id) { received += streamPart(to: id) }
        return received
    }

    /// One more message of the terminal's snapshot.
    @discardableResult
    private func streamPart(to id: Int) -> [String] {
        let due = master.snapshotStep(for: id)
        deliver(due)
        return texts(due, to: id)
    }

    /// The terminal's link ends; its app as it stands.
    private func disconnect(_ id: Int) -> StorePOSAppModel {
        deliver(master.peerDisconnected(id, now: now))
        return apps.removeValue(forKey: id)!
    }

    /// What terminal `id` sends; the master's answer is delivered.
    @discardableResult
    private func send(
        _ text: String?, from id: Int, file: StaticString = #filePath, line: UInt = #line
    ) throws -> [MasterEngine.Action] {
        now += 1
        let message = try XCTUnwrap(text, "terminal \(id) has no such message to send", file: file, line: line)
        let out = master.received(message, from: id, now: now)
        deliver(out)
        return out
    }

    private func order(_ uuid: String, _ name: String) -> JSONValue {
        .object(
            JSONObject([
                ("uuid", .string(uuid)), ("customerName", .string(name)), ("created", .string("2016-01-12T21:35:16+0800")),
            ]))
    }

    /// A write through the master's local API (another terminal, as far as the apps can tell).
    @discardableResult
    private func write(_ operation: OperationKind, _ uuid: String, _ name: String = "") -> String {
        now += 1
        let body: JSONValue =
            operation == .remove ? .object(JSONObject([("uuid", .string(uuid))])) : order(uuid, name)
        let (outcome, actions) = master.localWrite(OperationMessage(operation: operation, orders: [body]), origin: "api", now: now)
        XCTAssertNotNil(outcome.seq, "\(operation) \(uuid): \(outcome.errors)")
        deliver(actions)
        return uuid
    }

    private func newUUID() -> String { UUID().uuidString }

    /// The app shows each of the master's orders once, as the master has it, and nothing else
    /// but `extra` (orders the master never learnt of).
    private func assertShowsTheMastersOrdersOnce(
        _ id: Int, extra: [StorePOSAppModel.Row] = [], file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let expected = try master.store.allOrders().map { StorePOSAppModel.Row(uuid: $0.uuid, customerName: $0.customerName) } + extra
        let app = try XCTUnwrap(apps[id], file: file, line: line)
        XCTAssertFalse(app.crashed, "a Create of a uuid its store held", file: file, line: line)
        let shown = app.list
        XCTAssertEqual(shown.sorted { $0.uuid < $1.uuid }, expected.sorted { $0.uuid < $1.uuid }, file: file, line: line)
    }

    /// The messages that change something on an app (not the empty Removes that space them).
    private func changes(_ texts: [String]) -> [String] { texts.filter { $0 != StorePOSSpacing.fenceMessage.text } }

    // MARK: No echo

    func testAStorePOSTerminalGetsNoEchoOfItsOwnOperationsButStillItsErrors() throws {
        write(.create, newUUID(), "Existing")
        connect(1)
        connect(2)
        let kevin = newUUID()
        for message in [apps[1]?.create(kevin, "Kevin"), apps[1]?.update(kevin, "Kevin, table 4")] {
            let out = try send(message, from: 1)
            XCTAssertEqual(texts(out, to: 1), [], "no echo of its own operation: \(out)")
            // (after an empty Remove or two when it names the order just sent: StorePOSSpacing)
            XCTAssertEqual(changes(texts(out, to: 2)).count, 1, "the other terminal gets it")
        }
        try assertShowsTheMastersOrdersOnce(1)
        try assertShowsTheMastersOrdersOnce(2)

        // Refused: the sender gets its error (and the other terminal nothing).
        let unknown = newUUID()
        let refused = try send(
            JSONValue.object(JSONObject([("operation", .int(1)), ("orders", .array([order(unknown, "Nobody")]))])).serialized(), from: 1)
        let answer = texts(refused, to: 1)
        XCTAssertEqual(answer.count, 1)
        XCTAssertEqual(try JSONParser.parse(answer[0]).objectValue?["code"], .string("not_found"))
        XCTAssertEqual(texts(refused, to: 2), [])

        let out = try send(apps[1]?.remove(kevin), from: 1)
        XCTAssertEqual(texts(out, to: 1), [])
        XCTAssertEqual(changes(texts(out, to: 2)).count, 1)
        try assertShowsTheMastersOrdersOnce(1)
        try assertShowsTheMastersOrdersOnce(2)
    }

    func testAnOrderSyncSlaveStillGetsItsOwnOperationAsItsAcknowledgement() throws {
        connect(1)
        XCTAssertEqual(master.peerConnected(3, address: "10.0.0.3:1", terminal: AuthenticatedTerminal(nodeId: "t", name: "bar")), [])
        let slave = try SlaveEngine(
            store: SQLiteSlaveStore(db: try OrderDatabase.inMemory()), terminalId: "t", terminalName: "bar", configuredStore: "s")
        var hello: String?
        for case .send(let text) in slave.linkOpened() { hello = text.text }
        deliver(master.received(try XCTUnwrap(hello), from: 3, now: now))
        while master.isReceivingSnapshot(3) { _ = master.snapshotStep(for: 3) }
        let out = master.received(
            OperationMessage(operation: .create, orders: [order(newUUID(), "Mona")], opId: "op-1").encoded(), from: 3, now: now)
        XCTAssertEqual(texts(out, to: 3).count, 2, "its broadcast, then its result: \(out)")
        XCTAssertEqual(texts(out, to: 1).count, 1)
    }

    // MARK: In sync after every connect

    func testANewAppGetsRemovesOfOneUUIDEachThenTheCreatesAndShowsEachOrderOnce() throws {
        let kept = (0..<7).map { write(.create, newUUID(), "c\($0)") }
        let gone = write(.remove, write(.create, newUUID(), "gone"))
        let received = connect(1)
        let messages = try received.map { try XCTUnwrap(JSONParser.parse($0).objectValue) }
        // 7 + 1 Removes, a fence of 2 empty Removes, 3 Creates (7 orders in parts of 3), a fence.
        XCTAssertEqual(messages.count, 15, "\(received)")
        XCTAssertEqual(messages.map { $0["operation"]?.intValue }, Array(repeating: 2, count: 10) + [0, 0, 0, 2, 2])
        XCTAssertEqual(
            messages.map { $0["orders"]?.arrayValue?.count }, Array(repeating: 1, count: 8) + [0, 0, 3, 3, 1, 0, 0])
        XCTAssertEqual(
            Set(messages.prefix(7).compactMap { $0["orders"]?.arrayValue?.first?.objectValue?["uuid"]?.stringValue }), Set(kept))
        XCTAssertEqual(messages[7]["orders"]?.arrayValue?.first?.objectValue?["uuid"], .string(gone), "the removed order, as first written")
        for (index, message) in messages.enumerated() {
            let part = try XCTUnwrap(message["snapshot"]?.objectValue)
            XCTAssertEqual(part["part"], .int(Int64(index + 1)))
            XCTAssertEqual(part["parts"], .int(15))
        }
        try assertShowsTheMastersOrdersOnce(1)
    }

    func testAnAppRestartedWithOrdersFromBeforeShowsTheMastersOrdersOnce() throws {
        let uuids = (0..<5).map { write(.create, newUUID(), "c\($0)") }
        connect(1)
        try send(apps[1]?.create(newUUID(), "own"), from: 1)
        try assertShowsTheMastersOrdersOnce(1)
        var app = disconnect(1)

        // While it is away: an order changed, one removed, one new.
        write(.update, uuids[0], "changed")
        write(.remove, uuids[1])
        write(.create, newUUID(), "new")
        app.restart()
        XCTAssertEqual(app.list.count, 6, "it shows what it persisted")
        connect(1, app)
        try assertShowsTheMastersOrdersOnce(1)
        XCTAssertTrue(apps[1]?.list.contains(StorePOSAppModel.Row(uuid: uuids[0], customerName: "changed")) == true)
        XCTAssertEqual(apps[1]?.persisted.count, 6, "its persisted orders are the master's too")
    }

    func testAReconnectWithoutRestartKeepsTheListAndShowsEachOrderOnce() throws {
        let uuids = (0..<4).map { write(.create, newUUID(), "c\($0)") }
        connect(1)
        connect(2)
        try send(apps[2]?.create(newUUID(), "from the other app"), from: 2)
        var app = disconnect(1)

        write(.update, uuids[2], "changed")
        write(.remove, uuids[3])
        try send(apps[2]?.update(uuids[0], "changed by the other app"), from: 2)
        // Its own changes while the link is down never reach the master (the app sends on a
        // closed socket): a removal comes back, an order the master never knew stays.
        _ = app.remove(uuids[1])
        let unknown = newUUID()
        _ = app.create(unknown, "never sent")
        connect(1, app)
        try assertShowsTheMastersOrdersOnce(1, extra: [StorePOSAppModel.Row(uuid: unknown, customerName: "never sent")])
        try assertShowsTheMastersOrdersOnce(2)

        // And again, with nothing changed meanwhile.
        connect(1, disconnect(1))
        try assertShowsTheMastersOrdersOnce(1, extra: [StorePOSAppModel.Row(uuid: unknown, customerName: "never sent")])
    }

    func testManyOrdersInPartsWithChangesMeanwhileIncludingItsOwnShowEachOrderOnce() throws {
        let uuids = (0..<40).map { write(.create, newUUID(), "c\($0)") }
        connect(1)
        connect(2)
        var app = disconnect(1)
        for i in 0..<10 { write(.update, uuids[i], "changed \(i)") }
        for i in 10..<15 { write(.remove, uuids[i]) }

        // It comes back; while its 40 + 5 Removes and 12 Creates go out, everyone writes.
        app.restart()
        connect(1, app, streaming: false)
        var step = 0
        var changed = ""
        while master.isReceivingSnapshot(1) {
            streamPart(to: 1)
            step += 1
            switch step {
            case 5:
                try send(apps[2]?.create(newUUID(), "other app"), from: 2)
                try send(apps[2]?.update(uuids[20], "other app changed"), from: 2)
            case 20:
                // Its own changes to orders it shows (their Removes are still to come), and a
                // new order, while the Removes go out.
                let own = try send(apps[1]?.create(newUUID(), "own during the snapshot"), from: 1)
                XCTAssertEqual(texts(own, to: 1), [], "its own Create is never sent back")
                let onMaster = Set(try master.store.allOrders().map(\.uuid))
                let shown = try XCTUnwrap(apps[1]?.list.filter { onMaster.contains($0.uuid) })
                XCTAssertGreaterThan(shown.count, 2)
                changed = shown[0].uuid
                try send(apps[1]?.update(shown[0].uuid, "own change"), from: 1)
                try send(apps[1]?.remove(shown[1].uuid), from: 1)
            case 50:
                // Among its Creates now: an order it shows again changes, another goes.
                let shown = try XCTUnwrap(apps[1]?.list.filter { uuids.contains($0.uuid) && $0.uuid != changed })
                XCTAssertGreaterThan(shown.count, 1)
                write(.remove, shown[1].uuid)
                try send(apps[1]?.update(shown[0].uuid, "own change after its Create"), from: 1)
            default:
                break
            }
        }
        XCTAssertGreaterThan(step, 50)
        try assertShowsTheMastersOrdersOnce(1)
        try assertShowsTheMastersOrdersOnce(2)
        XCTAssertTrue(apps[1]?.list.contains(StorePOSAppModel.Row(uuid: changed, customerName: "own change")) == true)
        XCTAssertEqual(master.peers[1]?.phase, .live)

        // Live now: its own operations are not sent back. (Which of the first orders are left
        // depends on the order the snapshot listed them in, so one still shown is picked.)
        let kept = try XCTUnwrap(uuids[20...].first { uuid in apps[1]?.list.contains { $0.uuid == uuid } == true })
        let later = try send(apps[1]?.update(kept, "live"), from: 1)
        XCTAssertEqual(texts(later, to: 1), [])
        try assertShowsTheMastersOrdersOnce(1)
    }

    func testTheOldSnapshotAloneWouldShowOrdersTwice() throws {
        // The model is strict enough to fail: Creates alone, to an app holding the orders.
        for i in 0..<3 { write(.create, newUUID(), "c\(i)") }
        connect(1)
        var app = disconnect(1)
        app.restart()
        for bytes in try master.snapshotMessages().messages { app.receive(bytes.text) }
        XCTAssertEqual(app.list.count, 6)
        XCTAssertTrue(app.crashed, "the real app would have crashed on the first Create")
    }
}
