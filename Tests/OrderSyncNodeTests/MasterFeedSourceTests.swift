import EventLoopIO
import OrderStore
import SyncCore
import WireTestSupport
import XCTest

@testable import OrderSyncNode

/// The master's feed renders each journal entry once: readers after the first read the kept
/// change instead of parsing the journal's broadcast again.
final class MasterFeedSourceTests: XCTestCase {
    /// The loop the store writer belongs to (never run: the feed reads while the writer is idle).
    private var loop: EventLoop?

    /// The master's feed over `db`, through a store writer as in the node.
    private func feedSource(_ db: OrderDatabase) throws -> MasterFeedSource {
        let loop = try EventLoop()
        self.loop = loop
        return try MasterFeedSource(store: StoreWriter(database: db, loop: loop, label: "test"), epoch: "e")
    }

    private func entry(_ seq: Int64, _ name: String) -> JournalEntry {
        let order = Order(
            uuid: String(format: "6f1c2a3b-0000-4000-8000-%012x", seq), customerName: name,
            created: OrderTimestamp(epochMillis: 1_452_605_716_000, offsetMinutes: 0))
        return JournalEntry(
            seq: seq, opId: nil, origin: "till", operation: .create, orderUUIDs: [order.uuid],
            message: ServerMessage.applied(operation: .create, orders: [order], seq: seq, opId: nil, origin: "till", snapshot: nil)
                .encodedBytes(),
            recordedAtMillis: 1_000 * seq)
    }

    func testEachEntryIsRenderedOnceForEveryReader() throws {
        let db = try OrderDatabase.inMemory()
        for seq in Int64(1)...3 { try db.appendJournal(entry(seq, "Guest \(seq)")) }
        let source = try feedSource(db)
        let first = try source.feedChanges(after: 0, limit: 100)
        XCTAssertEqual(first.map(\.seq), [1, 2, 3])
        XCTAssertEqual(source.renderCount, 3)
        // A second reader, a reader further on, and a reader with a smaller limit: nothing new.
        XCTAssertEqual(try source.feedChanges(after: 0, limit: 100).map(\.text), first.map(\.text))
        XCTAssertEqual(try source.feedChanges(after: 2, limit: 100).map(\.text), [first[2].text])
        XCTAssertEqual(try source.feedChanges(after: 0, limit: 1).map(\.text), [first[0].text])
        XCTAssertEqual(source.renderCount, 3)
        // What was kept is what rendering gives.
        let rendered = try XCTUnwrap(db.journalEntry(seq: 2))
        XCTAssertEqual(first[1].text, ChangeFeed.changeText(seq: 2, ChangeFeed.masterChange(rendered)))
        XCTAssertTrue(first[1].text.contains(#""customerName":"Guest 2""#), first[1].text)
        // A new committed entry is rendered once, when first read.
        try db.appendJournal(entry(4, "Guest 4"))
        source.committed = 4
        XCTAssertEqual(try source.feedChanges(after: 3, limit: 100).map(\.seq), [4])
        XCTAssertEqual(try source.feedChanges(after: 0, limit: 100).map(\.seq), [1, 2, 3, 4])
        XCTAssertEqual(source.renderCount, 4)
    }

    func testEntriesNotCommittedAreNotShownNorKept() throws {
        let db = try OrderDatabase.inMemory()
        try db.appendJournal(entry(1, "Guest 1"))
        let source = try feedSource(db)
        try db.appendJournal(entry(2, "Guest 2"))
        XCTAssertEqual(try source.feedChanges(after: 0, limit: 100).map(\.seq), [1])
        XCTAssertEqual(source.renderCount, 1)
    }

    func testOnlyTheNewestChangesAreKept() throws {
        let db = try OrderDatabase.inMemory()
        let total = Int64(MasterFeedSource.renderedKept) + 10
        for seq in Int64(1)...total { try db.appendJournal(entry(seq, "G")) }
        let source = try feedSource(db)
        var cursor: Int64 = 0
        while true {
            let page = try source.feedChanges(after: cursor, limit: ChangeFeed.maxLimit)
            guard let last = page.last else { break }
            cursor = last.seq
        }
        XCTAssertEqual(cursor, total)
        XCTAssertEqual(source.renderCount, Int(total))
        // The oldest ten were let go and are rendered again; the newest are still kept.
        _ = try source.feedChanges(after: total - 5, limit: 100)
        XCTAssertEqual(source.renderCount, Int(total))
        _ = try source.feedChanges(after: 0, limit: 10)
        XCTAssertEqual(source.renderCount, Int(total) + 10)
    }
}
