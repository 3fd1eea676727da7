import Foundation
import JSON
import OrderStore
import OrderSyncNode
import XCTest

/// A master's local API once the answer it kept for an operation id is gone (it keeps the
/// newest 10,000): a retry is answered from the journal with the original `seq` and is not
/// applied again (Docs/API.md, "HTTP conventions").
final class EvictedAPIAnswerNodeTests: XCTestCase {
    private var directory = ""

    override func setUp() {
        directory = NSTemporaryDirectory() + "ordersync-evicted-" + UUID().uuidString
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `POST /v1/operations` setting the note of order `u`, with the caller's operation id.
    private func setNote(_ u: String, _ text: String, opId: String) -> JSONValue {
        .object(
            JSONObject([
                ("operation", .int(1)), ("orders", .array([.object(JSONObject([("uuid", .string(u)), ("note", .string(text))]))])),
                ("opId", .string(opId)),
            ]))
    }

    func testARetryAfterItsKeptAnswerWasEvictedIsAnsweredFromTheJournalAndNotAppliedAgain() throws {
        let u = UUID().uuidString.lowercased()
        let api = LocalAPIClient(dataDirectory: directory)
        let master = try RunningNode(role: .master, dataDirectory: directory, name: "front")
        let created = try api.send(
            method: "POST", path: "/v1/orders", body: .object(JSONObject([("uuid", .string(u)), ("customerName", .string("Ann"))])))
        XCTAssertEqual(created.status, 201, "\(created.body)")
        let first = try api.send(method: "POST", path: "/v1/operations", body: setNote(u, "first", opId: "op-1"))
        XCTAssertEqual(first.status, 200, "\(first.body)")
        let seq = try XCTUnwrap(first.body.objectValue?["seq"]?.intValue)
        let later = try api.send(
            method: "PATCH", path: "/v1/orders/\(u)", body: .object(JSONObject([("note", .string("later"))])))
        XCTAssertEqual(later.status, 200, "\(later.body)")
        master.stop()

        // 10,000 newer answers push the first out, as 10,000 more writes with an id would.
        let db = try OrderDatabase(path: directory + "/" + NodeDefaults.databaseFile)
        try db.transaction {
            for i in 0..<Int(OrderDatabase.maxAPIAnswers) {
                try db.saveAPIAnswer(opId: "filler-\(i)", status: 200, body: "{}", atMillis: 0)
            }
        }
        XCTAssertNil(try db.apiAnswer(opId: "op-1"), "evicted")
        db.close()

        let restarted = try RunningNode(role: .master, dataDirectory: directory, name: "front")
        defer { restarted.stop() }
        let again = try api.send(method: "POST", path: "/v1/operations", body: setNote(u, "first", opId: "op-1"))
        XCTAssertEqual(again.status, 200, "\(again.body)")
        XCTAssertEqual(again.body.objectValue?["seq"]?.intValue, seq, "the original seq: \(again.body)")
        let order = try api.send(method: "GET", path: "/v1/orders/\(u)")
        XCTAssertEqual(order.body.objectValue?["note"]?.stringValue, "later", "not applied again")
        let journal = try api.send(method: "GET", path: "/v1/journal?since=0")
        XCTAssertEqual(journal.body.objectValue?["entries"]?.arrayValue?.count, 3, "create, op-1, the later note: \(journal.body)")
    }
}
