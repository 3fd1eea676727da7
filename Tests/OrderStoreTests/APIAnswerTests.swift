import SyncCore
import XCTest

@testable import OrderStore

/// The local API's kept answers, and a slave's kept master answers with each error's place.
final class APIAnswerTests: StoreTestCase {
    func testAnAnswerIsKeptByteForByteAndReplacedForTheSameId() throws {
        let db = try openDatabase()
        XCTAssertNil(try db.apiAnswer(opId: "op-1"))
        let body = #"{"seq":3,"applied":[],"unchanged":[],"errors":[{"code":"invalid_uuid","message":"\"uuid\" é","index":1}],"x":1.5}"#
        try db.saveAPIAnswer(opId: "op-1", status: 200, body: body, atMillis: 1_000)
        XCTAssertEqual(try db.apiAnswer(opId: "op-1")?.status, 200)
        XCTAssertEqual(try db.apiAnswer(opId: "op-1")?.body, body)
        try db.saveAPIAnswer(opId: "op-1", status: 400, body: "{}", atMillis: 2_000)
        XCTAssertEqual(try db.apiAnswer(opId: "op-1")?.status, 400)
        XCTAssertNil(try db.apiAnswer(opId: "op-2"))
        db.close()
        XCTAssertEqual(try openDatabase().apiAnswer(opId: "op-1")?.body, "{}", "kept across restarts")
    }

    func testASlavesKeptAnswerKeepsEachErrorsIndexAndCurrentOrder() throws {
        let db = try openDatabase()
        let current = Order(
            uuid: "9437C8F5-D742-46CB-9847-737C5809392C", customerName: "Kevin", created: OrderTimestamp(epochMillis: 0), version: 4)
        let errors = [
            WireError(.invalidUUID, "not a UUID", index: 1),
            WireError(.conflict, "changed", uuid: current.uuid, index: 2, current: current),
        ]
        try db.recordAnswered(AnsweredOperation(opId: "op-9", seq: 7, applied: [], errors: errors, answeredMillis: 5), keep: 10)
        let kept = try XCTUnwrap(try db.answeredOperation(opId: "op-9"))
        XCTAssertEqual(kept.errors.map(\.index), [1, 2])
        XCTAssertEqual(kept.errors[1].current?.version, 4)
        XCTAssertEqual(kept.errors[1].current?.customerName, "Kevin")
        XCTAssertNil(kept.errors[0].current)
    }
}
