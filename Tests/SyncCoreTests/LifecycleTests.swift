import JSON
import XCTest

@testable import SyncCore

final class LifecycleTests: XCTestCase {
    let u = "9437C8F5-D742-46CB-9847-737C5809392C"
    let now = OrderTimestamp(epochMillis: 1_700_000_000_000)

    func update(_ members: [(String, JSONValue)], on stored: Order) -> OperationPlan {
        let m = OperationMessage(operation: .update, orders: [.object(JSONObject([("uuid", .string(u))] + members))])
        return OperationPlanner.plan(m, now: now) { _ in stored }
    }

    func testStatusTransitions() {
        XCTAssertTrue(OrderStatus.open.canMove(to: .inProgress))
        XCTAssertTrue(OrderStatus.inProgress.canMove(to: .completed))
        XCTAssertTrue(OrderStatus.open.canMove(to: .cancelled))
        XCTAssertTrue(OrderStatus.inProgress.canMove(to: .cancelled))
        XCTAssertFalse(OrderStatus.completed.canMove(to: .open))
        XCTAssertFalse(OrderStatus.cancelled.canMove(to: .inProgress))
        XCTAssertFalse(OrderStatus.completed.canMove(to: .cancelled))
        XCTAssertFalse(OrderStatus.inProgress.canMove(to: .open))

        let open = Order(uuid: u, customerName: "K", created: now)
        let started = update([("status", .string("in_progress"))], on: open)
        XCTAssertEqual(started.changes.first?.order.status, .inProgress)
        XCTAssertEqual(started.changes.first?.order.version, 2)
        var done = open
        done.status = .completed
        XCTAssertEqual(update([("status", .string("open"))], on: done).errors.map(\.code), [.invalidTransition])
        XCTAssertEqual(
            update([("note", .string("late"))], on: done).errors.map(\.code), [.invalidTransition],
            "a completed order does not change any more")
        XCTAssertEqual(update([("status", .string("completed"))], on: done).unchanged.count, 1, "a repeat is harmless")
        XCTAssertEqual(update([("status", .string("paid"))], on: open).errors.map(\.code), [.invalidField])
        var backwards = open
        backwards.status = .inProgress
        XCTAssertEqual(update([("status", .string("open"))], on: backwards).errors.map(\.code), [.invalidTransition])
    }

    func testACompletedOrderCannotBeRemovedButACancelledOneCan() {
        var done = Order(uuid: u, customerName: "K", created: now, status: .completed)
        let remove = OperationMessage(operation: .remove, orders: [.object(JSONObject([("uuid", .string(u))]))])
        XCTAssertEqual(OperationPlanner.plan(remove, now: now) { _ in done }.errors.map(\.code), [.invalidTransition])
        done.status = .cancelled
        XCTAssertEqual(OperationPlanner.plan(remove, now: now) { _ in done }.changes.count, 1)
    }

    func testItemsAndNote() throws {
        let m = OperationMessage(
            operation: .create,
            orders: [
                .object(
                    JSONObject([
                        ("uuid", .string(u)), ("note", .string("no nuts")),
                        (
                            "items",
                            .array([
                                .object(
                                    JSONObject([
                                        ("sku", .string("LAT")), ("name", .string("Latte")),
                                        ("quantity", .int(2)), ("unitPrice", .int(350)),
                                    ]))
                            ])
                        ),
                    ]))
            ])
        let plan = OperationPlanner.plan(m, now: now) { _ in nil }
        let o = try XCTUnwrap(plan.changes.first?.order)
        XCTAssertEqual(o.items, [LineItem(sku: "LAT", name: "Latte", quantity: 2, unitPrice: 350)])
        XCTAssertEqual(o.note, "no nuts")
        XCTAssertEqual(o.status, .open)
        XCTAssertEqual(o.json["status"], .string("open"))
        let back = try OrderFields.storedOrder(from: o.json, index: nil)
        XCTAssertEqual(back, o)
        for bad: JSONValue in [
            .array([.object(JSONObject([("name", .string("x")), ("quantity", .int(0)), ("unitPrice", .int(1))]))]),
            .array([.object(JSONObject([("name", .string("x")), ("quantity", .int(1)), ("unitPrice", .double(3.5))]))]),
            .array([.object(JSONObject([("quantity", .int(1)), ("unitPrice", .int(1))]))]),
            .string("latte"),
        ] {
            let b = OperationMessage(operation: .create, orders: [.object(JSONObject([("uuid", .string(u)), ("items", bad)]))])
            XCTAssertEqual(OperationPlanner.plan(b, now: now) { _ in nil }.errors.map(\.code), [.invalidField], "\(bad)")
        }
        // An integral number written with a fraction is the integer (JSON Schema counts `2.0` as one).
        let integral = OperationMessage(
            operation: .create,
            orders: [
                .object(
                    JSONObject([
                        ("uuid", .string(u)),
                        (
                            "items",
                            .array([.object(JSONObject([("name", .string("x")), ("quantity", .double(2)), ("unitPrice", .double(350))]))])
                        ),
                    ]))
            ])
        XCTAssertEqual(
            OperationPlanner.plan(integral, now: now) { _ in nil }.changes.first?.order.items,
            [LineItem(name: "x", quantity: 2, unitPrice: 350)])
    }

    func testStaleVersionIsAConflictCarryingTheCurrentOrder() throws {
        let stored = Order(uuid: u, customerName: "K", created: now, tableSize: 4, version: 3)
        let stale = update([("version", .int(2)), ("tableSize", .int(6))], on: stored)
        let e = try XCTUnwrap(stale.errors.first)
        XCTAssertEqual(e.code, .conflict)
        XCTAssertEqual(e.current, stored)
        XCTAssertEqual(stale.changes, [])
        let fresh = update([("version", .int(3)), ("tableSize", .int(6))], on: stored)
        XCTAssertEqual(fresh.changes.first?.order.version, 4)
        let remove = OperationMessage(operation: .remove, orders: [.object(JSONObject([("uuid", .string(u)), ("version", .int(1))]))])
        XCTAssertEqual(OperationPlanner.plan(remove, now: now) { _ in stored }.errors.map(\.code), [.conflict])
        // Messages without a version (StorePOS) are last-writer-wins.
        XCTAssertEqual(update([("tableSize", .int(9))], on: stored).changes.count, 1)
        // The conflict travels with its current order.
        let wire = ServerMessage.error(e, opId: "x", operation: .update)
        XCTAssertEqual(try ServerMessage.decode(wire.encoded()).get(), wire)
    }
}
