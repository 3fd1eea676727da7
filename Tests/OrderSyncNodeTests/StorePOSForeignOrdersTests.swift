import Foundation
import JSON
import OrderStore
import SyncCore
import XCTest

@testable import NodePolicy
@testable import OrderSyncNode

/// Orders a StorePOS app holds that the store does not (an iPad coming from StorePOS): seen from
/// the app's Updates and Removes refused as `not_found`, kept in the store, adopted (OrderSync
/// terminals get the Create, StorePOS links are closed to take the store afresh) or cleared
/// (every StorePOS app gets a Remove now, and in its connect sequence later).
final class StorePOSForeignOrdersTests: XCTestCase {
    private var db: OrderDatabase!
    private var master: MasterEngine!
    private var now: Int64 = 1_000

    override func setUpWithError() throws {
        db = try OrderDatabase.inMemory()
        master = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e")
    }

    private func old(_ uuid: String, _ name: String) -> JSONValue {
        .object(
            JSONObject([
                ("uuid", .string(uuid)), ("customerName", .string(name)), ("created", .string("2016-01-12T21:35:16+0800")),
                ("shippingMethod", .string("DHL")), ("tableName", .string("T3")), ("tableSize", .int(5)),
            ]))
    }

    private func sent(_ actions: [MasterEngine.Action], to peer: Int) -> [JSONObject] {
        actions.compactMap {
            switch $0 {
            case .send(let p, let text) where p == peer: return try? JSONParser.parse(text).objectValue
            case .broadcast(let text, let peers) where peers.contains(peer): return try? JSONParser.parse(text).objectValue
            default: return nil
            }
        }
    }

    private func events(_ actions: [MasterEngine.Action]) -> [String] {
        actions.compactMap { if case .log(let l) = $0 { return l.event } else { return nil } }
    }

    /// An app sends an Update and a Remove of two old orders; both are recorded, logged once.
    private func appTouchesOldOrders() -> (edited: String, removed: String) {
        _ = master.peerConnected(1, address: "10.0.0.1:5000", terminal: nil)
        let edited = UUID().uuidString
        let removed = UUID().uuidString
        now += 1
        let first = master.received(OperationMessage(operation: .update, orders: [old(edited, "Old, edited")]).encoded(), from: 1, now: now)
        XCTAssertEqual(events(first).filter { $0 == "storepos.foreign_order" }.count, 1)
        now += 1
        let again = master.received(OperationMessage(operation: .update, orders: [old(edited, "Old, again")]).encoded(), from: 1, now: now)
        XCTAssertEqual(events(again).filter { $0 == "storepos.foreign_order" }.count, 0, "once per uuid")
        now += 1
        _ = master.received(OperationMessage(operation: .remove, orders: [old(removed, "Old, removed")]).encoded(), from: 1, now: now)
        return (edited, removed)
    }

    func testUpdatesAndRemovesOfUnknownOrdersAreRecordedWithTheAppsCopy() throws {
        let (edited, removed) = appTouchesOldOrders()
        let list = try db.foreignOrders()
        XCTAssertEqual(list.map(\.uuid), [edited, removed], "as the app wrote them")
        XCTAssertEqual(list[0].count, 2)
        XCTAssertEqual(list[0].address, "10.0.0.1:5000")
        XCTAssertEqual(try JSONParser.parse(Array(list[0].content.utf8)).objectValue?["customerName"], .string("Old, again"))
        XCTAssertEqual(list.map(\.state), [.seen, .seen])
    }

    func testAnUpdateOfARemovedOrderIsNotForeign() throws {
        _ = master.peerConnected(1, address: "10.0.0.1:5000", terminal: nil)
        let uuid = UUID().uuidString
        _ = master.localWrite(OperationMessage(operation: .create, orders: [old(uuid, "x")]), origin: "api", now: now)
        _ = master.localWrite(OperationMessage(operation: .remove, orders: [old(uuid, "x")]), origin: "api", now: now)
        let out = master.received(OperationMessage(operation: .update, orders: [old(uuid, "y")]).encoded(), from: 1, now: now)
        XCTAssertFalse(events(out).contains("storepos.foreign_order"))
        XCTAssertEqual(try db.foreignOrders(), [])
    }

    func testAnOrderSyncSlaveIsNeverRecorded() throws {
        _ = master.peerConnected(2, address: "10.0.0.2:1", terminal: AuthenticatedTerminal(nodeId: "t", name: "bar"))
        let hello = HelloMessage(terminalId: "t", terminalName: "bar", store: "s", lastSeq: 0, epoch: nil)
        _ = master.received(hello.encoded(), from: 2, now: now)
        _ = master.received(OperationMessage(operation: .update, orders: [old(UUID().uuidString, "x")]).encoded(), from: 2, now: now)
        XCTAssertEqual(try db.foreignOrders(), [])
    }

    func testAdoptingCreatesTheAppsCopyForSlavesAndClosesStorePOSLinks() throws {
        let (edited, _) = appTouchesOldOrders()
        _ = master.peerConnected(2, address: "10.0.0.2:1", terminal: AuthenticatedTerminal(nodeId: "t", name: "bar"))
        let hello = HelloMessage(terminalId: "t", terminalName: "bar", store: "s", lastSeq: 0, epoch: nil)
        _ = master.received(hello.encoded(), from: 2, now: now)
        _ = master.peerConnected(3, address: "10.0.0.3:5000", terminal: nil)

        let (result, actions) = master.adoptForeignOrders([edited.lowercased()], origin: "api", opId: "op-adopt", now: now)
        XCTAssertEqual(result.records.map(\.uuid), [edited])
        let order = try XCTUnwrap(db.order(uuid: edited))
        XCTAssertEqual(order.uuid, edited, "kept as the app wrote it")
        XCTAssertEqual(order.customerName, "Old, again")
        XCTAssertEqual(order.tableSize, 5)
        XCTAssertEqual(order.status, .open)
        XCTAssertEqual(sent(actions, to: 2).map { $0["operation"] }, [.int(0)], "the slave gets the Create")
        XCTAssertEqual(sent(actions, to: 1), [], "no StorePOS app gets a Create it may hold")
        XCTAssertEqual(sent(actions, to: 3), [])
        let closed = actions.compactMap { if case .close(let p, _, _) = $0 { return p } else { return nil } }
        XCTAssertEqual(closed, [1, 3], "StorePOS apps reconnect for the store afresh")
        XCTAssertEqual(try db.foreignOrders(state: .adopted).map(\.uuid), [edited])

        let (again, _) = master.adoptForeignOrders([edited], origin: "api", opId: nil, now: now)
        XCTAssertEqual(again.unknown, [edited], "adopted once")
    }

    func testClearingSendsEachAppARemoveAndNamesItInLaterConnectSequences() throws {
        let (edited, removed) = appTouchesOldOrders()
        let (result, actions) = master.clearForeignOrders(nil)
        XCTAssertEqual(Set(result.records.map(\.uuid)), [edited, removed])
        let removes = sent(actions, to: 1)
        XCTAssertEqual(removes.map { $0["operation"] }, [.int(2), .int(2)])
        XCTAssertEqual(
            Set(removes.compactMap { $0["orders"]?.arrayValue?.first?.objectValue?["uuid"]?.stringValue }), [edited, removed])
        XCTAssertEqual(Set(try master.store.clearedForeignUUIDs()), [edited, removed])

        let joined = master.peerConnected(4, address: "10.0.0.4:5000", terminal: nil)
        let named = sent(joined, to: 4).filter { $0["operation"] == .int(2) }
            .compactMap { $0["orders"]?.arrayValue?.first?.objectValue?["uuid"]?.stringValue }
        XCTAssertEqual(Set(named), [edited, removed], "an app that was away gets the Removes when it connects")
    }
}

/// The local API routes and the status line of foreign orders.
final class StorePOSForeignOrderRouteTests: XCTestCase {
    private func route(_ method: String, _ path: String, _ body: String = "") -> Result<MasterAPIRoute, LocalAPIRoute.Failure>? {
        MasterAPIRoute.decode(method: method, path: path, body: Array(body.utf8))
    }

    private func refusal(_ method: String, _ path: String, _ body: String = "") -> String? {
        guard case .failure(let f)? = route(method, path, body) else { return nil }
        return "\(f.status) \(f.code)"
    }

    func testTheRoutes() throws {
        let uuid = "9437C8F5-D742-46CB-9847-737C5809392C"
        XCTAssertEqual(try route("GET", "/v1/storepos/foreign")?.get(), .foreignOrders)
        XCTAssertEqual(try route("POST", "/v1/storepos/foreign/adopt", #"{"all":true}"#)?.get(), .adoptForeignOrders(nil))
        XCTAssertEqual(
            try route("POST", "/v1/storepos/foreign/clear", #"{"uuids":["\#(uuid)"],"all":false}"#)?.get(), .clearForeignOrders([uuid]))
        XCTAssertEqual(refusal("POST", "/v1/storepos/foreign"), "405 method_not_allowed")
        XCTAssertEqual(refusal("GET", "/v1/storepos/foreign/adopt"), "405 method_not_allowed")
        XCTAssertEqual(refusal("POST", "/v1/storepos/foreign/adopt", ""), "400 malformed_json")
        XCTAssertEqual(refusal("POST", "/v1/storepos/foreign/adopt", "{}"), "400 invalid_message")
        XCTAssertEqual(refusal("POST", "/v1/storepos/foreign/adopt", #"{"uuids":[]}"#), "400 invalid_message")
        XCTAssertEqual(refusal("POST", "/v1/storepos/foreign/adopt", #"{"uuids":["x"]}"#), "400 invalid_uuid")
        XCTAssertEqual(refusal("POST", "/v1/storepos/foreign/adopt", #"{"uuids":["\#(uuid)"],"all":true}"#), "400 invalid_message")
        XCTAssertEqual(LocalAPIExchange.allowedMethods(path: "/v1/storepos/foreign/clear"), ["POST"])
    }
}
