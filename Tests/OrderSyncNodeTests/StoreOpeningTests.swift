import Foundation
import Glibc
import NodePolicy
import OrderStore
import SyncCore
import XCTest

@testable import OrderSyncNode

/// A node's data directory with a damaged store: a master refuses it (`.storage`, the file left
/// as it was); a slave moves its replica aside and starts a fresh one, saying how much of its
/// outbox it kept.
final class StoreOpeningTests: XCTestCase {
    private func temporaryPath() throws -> String {
        let d = NSTemporaryDirectory() + "ordersync-opening-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: d) }
        return d
    }

    private func configuration(_ directory: String, role: NodeRole) -> NodeConfiguration {
        NodeConfiguration(
            role: role, dataDirectory: directory, store: "shop1", name: "front", serviceType: NodeDefaults.serviceType,
            port: 0, listenAddress: "127.0.0.1", masterURL: nil)
    }

    /// Claims the directory once, lets `fill` write to its store, and closes it.
    private func prepare(_ c: NodeConfiguration, fill: (OrderDatabase) throws -> Void) throws {
        let directory = try DataDirectory(claimingFor: c)
        try fill(directory.store.database)
        directory.close()
    }

    /// Overwrites every page after the first (the schema) with garbage.
    private func overwriteAllButTheFirstPage(_ path: String) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let pageSize = Int(data[16]) << 8 | Int(data[17])
        XCTAssertGreaterThan(data.count, pageSize, "the store has more than its first page")
        var damaged = data.prefix(pageSize)
        damaged.append(Data((pageSize..<data.count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }))
        try damaged.write(to: URL(fileURLWithPath: path))
    }

    func testADamagedMasterStoreIsRefusedAsAStorageFailureAndLeftAsItWas() throws {
        let c = configuration(try temporaryPath(), role: .master)
        try prepare(c) { db in
            for i in 0..<20 {
                try db.insertOrder(
                    Order(
                        uuid: UUID().uuidString, customerName: "c\(i)", created: OrderTimestamp(epochMillis: 1, offsetMinutes: 0),
                        tableSize: -1))
            }
        }
        try overwriteAllButTheFirstPage(c.databasePath)
        let before = try Data(contentsOf: URL(fileURLWithPath: c.databasePath))
        XCTAssertThrowsError(try DataDirectory(claimingFor: c)) { error in
            let e = error as? NodeStartupError
            XCTAssertEqual(e?.failure, .storage)
            XCTAssertTrue(e?.message.contains("the order store \(c.databasePath) is damaged") == true, "\(error)")
            XCTAssertTrue(e?.message.contains("ordersync backup") == true, "\(error)")
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: c.databasePath)), before)
        let aside = try FileManager.default.contentsOfDirectory(atPath: c.dataDirectory).filter { $0.contains("damaged") }
        XCTAssertEqual(aside, [], "a master's store is never moved aside")
    }

    func testADamagedReplicaIsMovedAsideAndAFreshOneStartsSayingTheOutboxWasLost() throws {
        let c = configuration(try temporaryPath(), role: .slave)
        try prepare(c) { db in
            try db.setMetadata("terminal.id", "till-7")
            for i in 0..<200 {
                try db.appendOutbox(
                    OutboxEntry(opId: "op-\(i)", message: Array(repeating: UInt8(ascii: "m"), count: 100), orderKeys: [], createdMillis: 1))
            }
        }
        try overwriteAllButTheFirstPage(c.databasePath)
        let damaged = try Data(contentsOf: URL(fileURLWithPath: c.databasePath))

        let directory = try DataDirectory(claimingFor: c)
        defer { directory.close() }
        XCTAssertEqual(try directory.store.database.quickCheck(), [])
        XCTAssertEqual(try directory.store.database.outboxCount(), 0)
        XCTAssertEqual(try directory.store.database.metadata("node.role"), "slave")
        let aside = try FileManager.default.contentsOfDirectory(atPath: c.dataDirectory).filter { $0.contains(".damaged-") }
        let moved = try XCTUnwrap(aside.first { !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") })
        XCTAssertTrue(moved.hasPrefix(NodeDefaults.databaseFile + ".damaged-"), moved)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: c.dataDirectory + "/" + moved)), damaged, "kept as it was")
    }
}
