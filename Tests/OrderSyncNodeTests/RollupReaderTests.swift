import Foundation
import OrderStore
import RollupCore
import SyncCore
import XCTest

@testable import OrderSyncNode

/// `RollupReader` reads the roll-up's batches on its own thread from a store on disk: a batch
/// read ahead is handed over only for the same place and rolling hash, anything else is read
/// again, and the rolling hash chains across batches as `RollupBatch` makes it.
final class RollupReaderTests: XCTestCase {
    private var directory = ""
    private let limits = RollupBatchLimits(maxEntries: 4)

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "rollup-reader-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let db = try OrderDatabase(path: directory + "/" + NodeDefaults.databaseFile)
        try db.setMetadata("store.id", "s1")
        for seq in Int64(1)...10 {
            let uuid = UUID().uuidString
            try db.appendJournal(
                JournalEntry(
                    seq: seq, opId: "op-\(seq)", origin: "local", operation: .create, orderUUIDs: [uuid],
                    message: Array(#"{"type":"broadcast","orders":[{"uuid":"\#(uuid)","version":1}]}"#.utf8),
                    recordedAtMillis: 1000 + seq))
        }
        db.close()
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: directory) }

    private func reader() throws -> (RollupReader, RollupLocalJournal) {
        let local = try RollupLocalJournal(dataDirectory: directory)
        return (RollupReader(dataDirectory: directory, identity: local.identity, limits: limits), local)
    }

    private func start(_ local: RollupLocalJournal) -> [UInt8] {
        RollupHash.start(storeId: local.identity.storeId, lineage: local.identity.lineage)
    }

    func testBatchesChainAsOneBatchOfEverythingWould() throws {
        let (reader, local) = try reader()
        defer { reader.close() }
        var after: Int64 = 0
        var rolling = start(local)
        var seqs: [Int64] = []
        while after < 10 {
            let request = RollupReader.Request(after: after, rolling: rolling, through: 10)
            let shipment = try reader.batch(request)
            XCTAssertLessThanOrEqual(shipment.batch.rows.count, 4)
            seqs += shipment.batch.rows.map(\.entry.seq)
            reader.prefetch(RollupReader.Request(after: shipment.batch.lastSeq, rolling: shipment.batch.lastRolling, through: 10))
            after = shipment.batch.lastSeq
            rolling = shipment.batch.lastRolling
        }
        XCTAssertEqual(seqs, Array(1...10))
        let whole = try XCTUnwrap(
            RollupBatch(entries: try local.entries(after: 0, through: 10, limit: 10), after: 0, rolling: start(local)))
        XCTAssertEqual(rolling, whole.lastRolling)
    }

    func testABatchReadAheadServesOnlyTheSamePlaceAndHash() throws {
        let (reader, local) = try reader()
        defer { reader.close() }
        let first = try reader.batch(RollupReader.Request(after: 0, rolling: start(local), through: 10))
        XCTAssertEqual(first.batch.lastSeq, 4)
        // Read ahead for a limit of 5, then asked with a limit that grew: the shorter batch serves.
        reader.prefetch(RollupReader.Request(after: 4, rolling: first.batch.lastRolling, through: 5))
        let grown = try reader.batch(RollupReader.Request(after: 4, rolling: first.batch.lastRolling, through: 10))
        XCTAssertEqual(grown.batch.rows.map(\.entry.seq), [5])
        // Read ahead after seq 5, then asked after seq 4 again (that batch did not commit): read again.
        reader.prefetch(RollupReader.Request(after: 5, rolling: grown.batch.lastRolling, through: 10))
        let again = try reader.batch(RollupReader.Request(after: 4, rolling: first.batch.lastRolling, through: 10))
        XCTAssertEqual(again.batch.rows.map(\.entry.seq), [5, 6, 7, 8])
        // Read ahead with one rolling hash, asked at the same place with another: read again, its
        // rows chained from the hash asked for.
        reader.prefetch(RollupReader.Request(after: 4, rolling: first.batch.lastRolling, through: 10))
        let other = [UInt8](repeating: 7, count: 32)
        let rechained = try reader.batch(RollupReader.Request(after: 4, rolling: other, through: 10))
        XCTAssertEqual(rechained.batch.rows.first?.rolling, RollupHash.rolling(previous: other, hash: again.batch.rows[0].hash))
    }

    func testAHoleIsALocalFailure() throws {
        let (reader, local) = try reader()
        defer { reader.close() }
        XCTAssertThrowsError(try reader.batch(RollupReader.Request(after: 10, rolling: start(local), through: 12))) { error in
            guard case RollupFailure.local(let message) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(message.contains("hole after seq 10"), message)
        }
    }

    func testAClosedReaderAnswersAtOnce() throws {
        let (reader, local) = try reader()
        reader.close()
        XCTAssertThrowsError(try reader.batch(RollupReader.Request(after: 0, rolling: start(local), through: 10)))
    }

    func testTheShipmentsRowsHoldEveryEntry() throws {
        let (reader, local) = try reader()
        defer { reader.close() }
        let shipment = try reader.batch(RollupReader.Request(after: 0, rolling: start(local), through: 10))
        XCTAssertEqual(shipment.journalRows.rows, 4)
        let seqs = String(decoding: shipment.journalRows.bytes, as: UTF8.self).split(separator: "\n").map { $0.prefix { $0 != "\t" } }
        XCTAssertEqual(seqs, ["1", "2", "3", "4"])
        XCTAssertEqual([shipment.liveOrders, shipment.removedOrders], [4, 0])
        XCTAssertEqual(shipment.orderRows.rows, 4)
    }
}
