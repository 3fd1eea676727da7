import Dispatch
import Foundation
import Glibc
import JSON
import OrderStore
import OrderSyncNode
import XCTest

/// Running nodes on loopback under steady traffic: the master's and a paired slave's
/// write-ahead logs are written over from their beginning after each checkpoint instead of
/// growing with every COMMIT (the next group waits for the checkpoint, `StoreWriter`;
/// Docs/PERFORMANCE.md, "The log written over, not grown").
final class WriteAheadLogNodeTests: XCTestCase {
    private var directories: [String] = []

    override func tearDown() {
        for d in directories { try? FileManager.default.removeItem(atPath: d) }
    }

    private func directory(_ name: String) -> String {
        let dir = NSTemporaryDirectory() + "ordersync-wal-\(name)-" + UUID().uuidString
        directories.append(dir)
        return dir
    }

    func testUnderSteadyTrafficTheMastersAndTheSlavesLogsAreWrittenOverNotGrown() throws {
        let master = try RunningNode(
            role: .master, dataDirectory: directory("master"), name: "front",
            configure: {
                $0.insecureStorePOS = true
                $0.rateLimitPerSecond = 1_000_000
                $0.rateLimitBurst = 1_000_000
            })
        defer { master.stop() }
        let slaveDirectory = directory("till")
        let slave = try master.pairedSlave(dataDirectory: slaveDirectory, name: "till")
        defer { slave.stop() }
        try waitUntil("the slave is live") {
            guard case .slave(let s) = try slave.status() else { return false }
            return s.master.state == .live
        }
        let logs = [master.dataDirectory, slaveDirectory].map { $0 + "/ordersync.sqlite-wal" }

        // The logs' sizes, sampled every millisecond while the operations flow.
        final class Sampler: @unchecked Sendable {
            let lock = NSLock()
            var largest = [0, 0]
            var samples = 0
            var running = true
        }
        let sampler = Sampler()
        let sampled = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            while sampler.lock.withLock({ sampler.running }) {
                let sizes = logs.map { (try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int) ?? 0 }
                sampler.lock.withLock {
                    sampler.largest = zip(sampler.largest, sizes).map { max($0, $1) }
                    sampler.samples += 1
                }
                usleep(1_000)
            }
            sampled.signal()
        }

        // A steady stream with at most `window` operations in flight (sent, not yet broadcast
        // back to a second terminal): groups stay small however fast the node runs (sanitizer
        // builds included), and operations wait at every COMMIT's end, which under the old order
        // began the next group during the checkpoint. About 9 pages of log an operation on the
        // master: over twenty times through its threshold.
        let total = 3_000
        let window = 8
        // The receiving terminal, read on a thread of its own, and what it saw.
        final class Seen: @unchecked Sendable {
            let condition = NSCondition()
            let receiver: RawStorePOSTerminal
            var count = 0
            var failure: (any Error)?
            init(_ receiver: RawStorePOSTerminal) { self.receiver = receiver }
        }
        let seen = Seen(try RawStorePOSTerminal(port: master.port))
        let received = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            defer { received.signal() }
            do {
                while seen.condition.withLock({ seen.count }) < total {
                    let message = try seen.receiver.nextText(timeoutSeconds: 60)
                    guard let object = try? JSONParser.parse(Array(message.utf8)).objectValue,
                        object["operation"]?.intValue == 0, object["snapshot"] == nil
                    else { continue }
                    let orders = object["orders"]?.arrayValue?.count ?? 0
                    seen.condition.withLock {
                        seen.count += orders
                        seen.condition.signal()
                    }
                }
            } catch {
                seen.condition.withLock {
                    seen.failure = error
                    seen.condition.signal()
                }
            }
        }
        let sender = try RawStorePOSTerminal(port: master.port)
        for n in 0..<total {
            let blocked: (any Error)? = seen.condition.withLock {
                while n - seen.count >= window, seen.failure == nil { seen.condition.wait() }
                return seen.failure
            }
            if let blocked { throw blocked }
            let text =
                #"{"operation":0,"orders":[{"uuid":"\#(UUID().uuidString)","customerName":"guest \#(n)","created":"2016-01-12T21:35:16+0800","shippingMethod":"pickup","tableName":"T\#(n % 9)","tableSize":2}]}"#
            try sender.send(RawStorePOSTerminal.maskedTextFrame(text))
        }
        received.wait()
        if let failure = seen.failure { throw failure }
        try waitUntil("the slave has every operation", timeoutSeconds: 120) {
            guard case .slave(let s) = try slave.status() else { return false }
            return s.seq == Int64(total)
        }
        sampler.lock.withLock { sampler.running = false }
        sampled.wait()

        guard case .master(let status) = try master.status() else { return XCTFail("not a master status") }
        XCTAssertEqual(status.seq, Int64(total))
        XCTAssertGreaterThan(status.commits.groups, 100, "the operations went in a few large groups: \(status.commits)")
        XCTAssertGreaterThan(sampler.samples, 100)
        // A log of its threshold's pages and what the group that crossed it added (4.2-4.3 MB
        // measured); with the next group begun during the checkpoint, as before, the master's
        // reached 19-27 MB here and the slave's 13-17 MB.
        let bound = WALCheckpointer.logSizeLimit + 4 * 1024 * 1024
        XCTAssertLessThanOrEqual(sampler.largest[0], bound, "the master's log grew: \(status.commits)")
        XCTAssertLessThanOrEqual(sampler.largest[1], bound, "the slave's log grew")
        print("FIGURE largest logs under steady traffic: master \(sampler.largest[0]) B, slave \(sampler.largest[1]) B")
    }
}
