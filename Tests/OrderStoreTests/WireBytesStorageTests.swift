import SyncCore
import WireTestSupport
import XCTest

@testable import OrderStore

/// Journal and outbox messages are kept as the UTF-8 bytes that were sent, in the TEXT columns
/// earlier builds wrote: a row written as text reads back as its bytes, and bytes written now
/// are text to SQLite (and to an earlier build).
final class WireBytesStorageTests: StoreTestCase {
    /// Multi-byte UTF-8 (two-, three- and four-byte sequences), an escaped quote and a NUL escape.
    private let message = #"{"operation":0,"orders":[{"uuid":"a","customerName":"Zoë 北京 🍕 \"x\" \u0000"}],"seq":1}"#

    func testJournalMessageBytesAreStoredAsTextAndReadBackByteForByte() throws {
        let db = try openDatabase()
        let entry = JournalEntry(
            seq: 1, opId: "op-1", origin: "t", operation: .create, orderUUIDs: ["a"], message: Array(message.utf8),
            recordedAtMillis: 1)
        try db.appendJournal(entry)
        XCTAssertEqual(try db.journalEntry(seq: 1)?.message, Array(message.utf8))
        XCTAssertEqual(try db.connection.scalarText("SELECT typeof(message) FROM journal WHERE seq = 1"), "text")
        XCTAssertEqual(try db.connection.scalarText("SELECT message FROM journal WHERE seq = 1"), message)
    }

    func testAJournalRowWrittenAsTextReadsAsItsUTF8Bytes() throws {
        let db = try openDatabase()
        try db.appendJournal(
            JournalEntry(seq: 1, opId: nil, origin: "t", operation: .create, orderUUIDs: ["a"], message: [0x7B, 0x7D], recordedAtMillis: 1))
        // As a build that kept the message as a String wrote it: bound as text.
        XCTAssertEqual(try db.connection.execute("UPDATE journal SET message = ? WHERE seq = 1", [.text(message)]), 1)
        XCTAssertEqual(try db.journalEntry(seq: 1)?.message, Array(message.utf8))
    }

    func testOutboxMessageBytesRoundTrip() throws {
        let db = try openDatabase()
        let saved = try db.appendOutbox(
            OutboxEntry(opId: "op-1", message: Array(message.utf8), orderKeys: ["a"], createdMillis: 1, baseSeq: 0))
        XCTAssertEqual(try db.outboxEntries().map(\.message), [Array(message.utf8)])
        XCTAssertEqual(saved.message, Array(message.utf8))
        XCTAssertEqual(try db.connection.scalarText("SELECT typeof(message) FROM outbox"), "text")
        XCTAssertEqual(try db.connection.scalarText("SELECT message FROM outbox"), message)
    }

    func testAnEmptyMessageIsStoredAsEmptyTextNotNull() throws {
        let db = try openDatabase()
        _ = try db.appendOutbox(OutboxEntry(opId: "op-1", message: [], orderKeys: [], createdMillis: 1, baseSeq: 0))
        XCTAssertEqual(try db.connection.scalarText("SELECT typeof(message) FROM outbox"), "text")
        XCTAssertEqual(try db.outboxEntries().map(\.message), [[]])
    }
}
