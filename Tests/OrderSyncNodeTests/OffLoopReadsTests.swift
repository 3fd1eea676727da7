import Dispatch
import EventLoopIO
import Foundation
import JSON
import NodePolicy
import SyncCore
import XCTest

@testable import OrderStore
@testable import OrderSyncNode

/// The local API's pages read off the loop (`OffLoopReads`): the same bytes as a read on the
/// loop, the store as it was when the page was asked for (one read transaction, pinned on the
/// loop), and at most two at a time, the others waiting in order. The reads' queue a test
/// hands in is serial, so a job the test holds holds every read.
final class OffLoopReadsTests: StoreOnLoopTestCase {
    private let readQueue = DispatchQueue(label: "test.reads")
    private let gate = DispatchSemaphore(value: 0)

    private func order(_ i: Int) -> Order {
        Order(
            uuid: UUID().uuidString.lowercased(), customerName: "guest \(i)",
            created: OrderTimestamp(epochMillis: 1_452_605_716_000 + Int64(i) * 1_000, offsetMinutes: 0), tableSize: 2)
    }

    /// Commits `orders` in a group of their own and waits until they are on disk.
    private func commit(_ writer: StoreWriter, _ orders: [Order]) throws {
        var done: Result<Void, any Error>?
        writer.write({ db in for o in orders { try db.insertOrder(o) } }) { done = $0 }
        runUntil(loop) { done != nil }
        try XCTUnwrap(done).get()
    }

    /// `route` answered through `answerRead`, off the loop or on it.
    private func answer(_ writer: StoreWriter, _ route: LocalAPIRoute, offLoop: Bool) -> (status: Int, body: [UInt8])? {
        var answer: (status: Int, body: [UInt8])?
        _ = NodeStartup.answerRead(route, store: writer, respond: LocalAPIResponder { answer = ($0, $1) }, offLoop: offLoop)
        runUntil(loop) { answer != nil }
        return answer
    }

    func testAPageReadOffTheLoopIsTheSameBytesAsOneReadOnIt() throws {
        let writer = StoreWriter(database: database, loop: loop, label: "test")
        let orders = (0..<30).map(order)
        try commit(writer, orders)
        let routes: [LocalAPIRoute] = [
            .list(page: 1, per: 10, status: nil), .list(page: 3, per: 10, status: nil),
            .list(page: 1, per: 100, status: nil, newestFirst: true),
            .list(page: 9, per: 10, status: nil), .show(uuid: orders[4].uuid), .show(uuid: UUID().uuidString.lowercased()),
            .journal(since: 0, order: nil, limit: 100), .rejections(since: 0, order: nil, limit: 100),
        ]
        for route in routes {
            let off = try XCTUnwrap(answer(writer, route, offLoop: true), "\(route)")
            let on = try XCTUnwrap(answer(writer, route, offLoop: false), "\(route)")
            XCTAssertEqual(off.status, on.status, "\(route)")
            XCTAssertEqual(off.body, on.body, "\(route)")
        }
        XCTAssertEqual(writer.offLoopReads.readsStarted, 6, "lists, journal and rejections off the loop; one order on it")
    }

    func testAPageShowsTheStoreAsItWasWhenItWasAskedFor() throws {
        let writer = StoreWriter(database: database, loop: loop, label: "test", readQueue: readQueue)
        try commit(writer, (0..<5).map(order))
        // The reads' thread is held: the page is asked for (pinned), then more orders commit.
        readQueue.async { [gate] in gate.wait() }
        var page: (status: Int, body: [UInt8])?
        _ = NodeStartup.answerRead(
            .list(page: 1, per: 100, status: nil), store: writer, respond: LocalAPIResponder { page = ($0, $1) })
        try commit(writer, (5..<8).map(order))
        XCTAssertNil(page, "read on the held thread")
        gate.signal()
        runUntil(loop) { page != nil }
        let list = try JSONParser.parse(try XCTUnwrap(page).body).objectValue
        XCTAssertEqual(list?["total"]?.intValue, 5, "the page counts what was committed when it was asked for")
        XCTAssertEqual(list?["orders"]?.arrayValue?.count, 5, "and lists the same: one read transaction")
    }

    func testAtMostTwoReadsRunAtOnceAndTheRestWaitInOrder() throws {
        let writer = StoreWriter(database: database, loop: loop, label: "test", readQueue: readQueue)
        try commit(writer, (0..<3).map(order))
        readQueue.async { [gate] in gate.wait() }
        var answered: [Int] = []
        for per in 1...5 {
            _ = NodeStartup.answerRead(
                .list(page: 1, per: per, status: nil), store: writer, respond: LocalAPIResponder { _, _ in answered.append(per) })
        }
        XCTAssertEqual(writer.offLoopReads.readsStarted, OffLoopReads.maxRunning, "the others wait for a thread")
        gate.signal()
        runUntil(loop) { answered.count == 5 }
        XCTAssertEqual(answered, [1, 2, 3, 4, 5], "in the order asked (the test's queue is serial)")
        XCTAssertEqual(writer.offLoopReads.readsStarted, 5)
    }
}
