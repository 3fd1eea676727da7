import Foundation
import SyncCore
import XCTest

@testable import OrderStore

/// Base class: every test gets its own temporary directory, removed afterwards.
class StoreTestCase: XCTestCase {
    /// A fresh directory for this test.
    private(set) var directory = ""
    /// `orders.sqlite` inside `directory` (not created yet).
    var dbPath: String { directory + "/orders.sqlite" }

    override func setUpWithError() throws {
        try super.setUpWithError()
        let base = NSTemporaryDirectory() + "/orderstore-tests-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        directory = base
    }

    override func tearDownWithError() throws {
        if !directory.isEmpty {
            try? FileManager.default.removeItem(atPath: directory)
        }
        try super.tearDownWithError()
    }

    /// A new read-write database at `dbPath`.
    func openDatabase() throws -> OrderDatabase {
        try OrderDatabase(path: dbPath)
    }

    /// An order with fixed, recognisable fields.
    func makeOrder(
        _ uuid: String = UUID().uuidString.lowercased(), customer: String = "Ada",
        createdMillis: Int64 = 1_452_605_716_000, offset: Int = 480
    ) -> Order {
        Order(
            uuid: uuid, customerName: customer,
            created: OrderTimestamp(epochMillis: createdMillis, offsetMinutes: offset),
            shippingMethod: "DHL", tableName: "T1", tableSize: 4)
    }

    /// Commits one order and its journal entry (seq `seq`) in one transaction.
    func commitOrder(_ db: OrderDatabase, seq: Int64, customer: String = "Ada") throws -> Order {
        let order = makeOrder(customer: customer)
        try db.transaction {
            try db.insertOrder(order)
            try db.appendJournal(
                JournalEntry(
                    seq: seq, opId: "op-\(seq)", origin: "local", operation: .create, orderUUIDs: [order.uuid],
                    message: Array("{}".utf8), recordedAtMillis: seq))
        }
        return order
    }

    /// Asserts that `body` throws a `StoreError` of `kind`, and returns it.
    @discardableResult
    func assertStoreError<T>(
        _ kind: StoreError.Kind, file: StaticString = #filePath, line: UInt = #line,
        _ body: () throws -> T
    ) -> StoreError? {
        do {
            _ = try body()
            XCTFail("expected a StoreError of kind \(kind), nothing was thrown", file: file, line: line)
            return nil
        } catch let error as StoreError {
            XCTAssertEqual(error.kind, kind, "\(error)", file: file, line: line)
            return error
        } catch {
            XCTFail("expected a StoreError of kind \(kind), got \(error)", file: file, line: line)
            return nil
        }
    }
}

/// An error thrown by test bodies to force a rollback.
struct TestAbort: Error {}
