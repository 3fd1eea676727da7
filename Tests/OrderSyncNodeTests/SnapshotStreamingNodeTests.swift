import Foundation
import JSON
import OrderSyncNode
import Synchronization
import XCTest

/// A store several times the per-connection send cap reaches new slaves on loopback: the
/// snapshot streams with flow control while another terminal keeps writing.
final class SnapshotStreamingNodeTests: XCTestCase {
    private var directories: [String] = []

    override func tearDown() {
        for d in directories { try? FileManager.default.removeItem(atPath: d) }
    }

    private func temporaryDirectory() -> String {
        let d = NSTemporaryDirectory() + "ordersync-stream-" + UUID().uuidString
        directories.append(d)
        return d
    }

    /// 1 MiB send cap, next part below 256 KiB unsent.
    private static func smallCap(_ c: inout NodeConfiguration) {
        c.maxPendingSendBytes = 1 << 20
        c.snapshotLowWaterBytes = 256 << 10
    }

    private func slaveStatus(_ node: RunningNode) throws -> SlaveStatus? {
        guard case .slave(let s) = try node.status() else { return nil }
        return s
    }

    private func masterStatus(_ node: RunningNode) throws -> MasterStatus {
        guard case .master(let m) = try node.status() else { throw CancellationError() }
        return m
    }

    /// Waits until `node` (a slave) holds `orders` and is at the master's `seq`.
    private func waitSynced(_ node: RunningNode, with master: RunningNode, timeout: TimeInterval = 60) throws -> SlaveStatus {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let m = try masterStatus(master)
            if let s = try slaveStatus(node), s.master.state == .live, s.seq == m.seq, s.orders == m.orders { return s }
            if Date() > deadline {
                XCTFail("timed out: slave \(String(describing: try slaveStatus(node))) master seq \(m.seq) orders \(m.orders)")
                throw CancellationError()
            }
            usleep(20_000)
        }
    }

    func testAStoreFourTimesTheSendCapSyncsToNewSlavesWhileAnotherTerminalWrites() throws {
        let master = try RunningNode(role: .master, dataDirectory: temporaryDirectory(), name: "front", configure: Self.smallCap)
        defer { master.stop() }
        let url = MasterURL(host: "127.0.0.1", port: master.port)
        let api = LocalAPIClient(dataDirectory: master.dataDirectory)
        // About 4 MiB of orders (1 KiB of notes each), 200 per operation.
        let notes = String(repeating: "n", count: 1000)
        var bulk = 0
        for batch in 0..<21 {
            let orders: [JSONValue] = (0..<200).map { i in
                .object(
                    JSONObject([
                        ("uuid", .string(UUID().uuidString)), ("customerName", .string("bulk \(batch)-\(i)")),
                        ("notes", .string(notes)),
                    ]))
            }
            let message = JSONValue.object(JSONObject([("operation", .int(0)), ("orders", .array(orders))]))
            let answer = try api.send(method: "POST", path: "/v1/operations", body: message)
            XCTAssertEqual(answer.status, 200, "\(answer.body)")
            bulk += message.serialized().utf8.count
        }
        let stored = try masterStatus(master)
        XCTAssertEqual(stored.orders, 4200)
        XCTAssertGreaterThan(bulk, 4 << 20, "the store is over four times the 1 MiB cap")

        // The writer joins first (a streamed snapshot itself), then keeps writing while the
        // second slave joins.
        var clock = Date()
        let writer = try RunningNode(
            role: .slave, dataDirectory: temporaryDirectory(), name: "writer", masterURL: url, configure: Self.smallCap)
        defer { writer.stop() }
        _ = try waitSynced(writer, with: master)
        let writerJoin = Date().timeIntervalSince(clock)

        let keepWriting = Atomic<Bool>(true)
        let written = Atomic<Int>(0)
        let writerDirectory = writer.dataDirectory
        let writing = Thread {
            let client = LocalAPIClient(dataDirectory: writerDirectory)
            while keepWriting.load(ordering: .acquiring) {
                let order = JSONValue.object(
                    JSONObject([("uuid", .string(UUID().uuidString)), ("customerName", .string("during the snapshot"))]))
                if let r = try? client.send(method: "POST", path: "/v1/orders", body: order), (200..<300).contains(r.status) {
                    written.add(1, ordering: .relaxed)
                }
            }
        }
        writing.start()
        clock = Date()
        let joiner = try RunningNode(
            role: .slave, dataDirectory: temporaryDirectory(), name: "joiner", masterURL: url, configure: Self.smallCap)
        defer { joiner.stop() }
        let deadline = Date().addingTimeInterval(60)
        while (try slaveStatus(joiner))?.master.state != .live {
            XCTAssertLessThan(Date(), deadline, "the joiner never went live")
            usleep(10_000)
        }
        let joinerLive = Date().timeIntervalSince(clock)
        keepWriting.store(false, ordering: .releasing)
        while !writing.isFinished { usleep(10_000) }
        let during = written.load(ordering: .relaxed)
        XCTAssertGreaterThan(during, 0, "the writer wrote while the joiner synced")

        let final = try masterStatus(master)
        XCTAssertEqual(final.orders, 4200 + during)
        let joined = try waitSynced(joiner, with: master)
        let writerNow = try waitSynced(writer, with: master)
        XCTAssertEqual(joined.orders, 4200 + during)
        XCTAssertEqual(writerNow.orders, 4200 + during)
        print(
            "snapshot streaming: \(bulk) bytes of orders (\(stored.orders) orders) over a \(1 << 20)-byte send cap;"
                + " writer joined in \(String(format: "%.2f", writerJoin)) s; joiner live in"
                + " \(String(format: "%.2f", joinerLive)) s while \(during) orders were written; final seq \(final.seq)")
    }
}
