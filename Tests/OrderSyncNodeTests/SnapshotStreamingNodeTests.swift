import Foundation
import Glibc
import JSON
import NodePolicy
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

    /// 1 MiB send cap, next part below 256 KiB unsent; the slow reader is a StorePOS terminal.
    private static func smallCap(_ c: inout NodeConfiguration) {
        c.insecureStorePOS = true
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
        // The slow reader is a StorePOS-style terminal: admitted only with --insecure-storepos.
        let master = try RunningNode(
            role: .master, dataDirectory: temporaryDirectory(), name: "front",
            configure: {
                Self.smallCap(&$0)
                $0.insecureStorePOS = true
            })
        defer { master.stop() }
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

        // A terminal that reads slowly through a small receive buffer: without flow control the
        // whole snapshot would wait unsent on its link, far over the cap, and the link would close.
        let slow = try SlowSnapshotReader.read(port: master.port)
        XCTAssertEqual(slow.orders, 4200, "a slow reader gets the whole snapshot")
        XCTAssertEqual(slow.parts, 4200 + 21 + 2 * 256, "a Remove per order, a fence, 21 Creates, a fence")

        // The writer joins first (a streamed snapshot itself), then keeps writing while the
        // second slave joins.
        var clock = Date()
        let writer = try master.pairedSlave(dataDirectory: temporaryDirectory(), name: "writer", configure: Self.smallCap)
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
        let joiner = try master.pairedSlave(dataDirectory: temporaryDirectory(), name: "joiner", configure: Self.smallCap)
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
                + " \(String(format: "%.2f", joinerLive)) s while \(during) orders were written; final seq \(final.seq);"
                + " a slow reader took \(String(format: "%.2f", slow.seconds)) s for \(slow.bytes) bytes")
    }
}

/// A StorePOS-style terminal on a raw socket with a 16 KiB receive buffer, reading 16 KiB every
/// 2 ms until its snapshot's last part (it gets the snapshot right after the handshake).
private enum SlowSnapshotReader {
    struct Failure: Error { var why: String }

    static func read(port: UInt16) throws -> (orders: Int, parts: Int, bytes: Int, seconds: Double) {
        let started = Date()
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(why: "socket: \(errno)") }
        defer { close(fd) }
        var small: Int32 = 16 << 10
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure(why: "connect: \(errno)") }
        let request = Array(
            ("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8)
        guard send(fd, request, request.count, 0) == request.count else { throw Failure(why: "send: \(errno)") }
        var buffer: [UInt8] = []
        var total = 0
        var handshakeDone = false
        var orders = 0
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let n = recv(fd, &chunk, chunk.count, 0)
            guard n > 0 else { throw Failure(why: "the link ended after \(total) bytes, \(orders) orders (errno \(errno))") }
            total += n
            buffer += chunk[0..<n]
            if !handshakeDone {
                guard let end = headEnd(buffer) else { continue }
                guard String(decoding: buffer[0..<end], as: UTF8.self).hasPrefix("HTTP/1.1 101") else {
                    throw Failure(why: "handshake refused")
                }
                buffer.removeFirst(end)
                handshakeDone = true
            }
            while let (opcode, payload, used) = frame(buffer) {
                buffer.removeFirst(used)
                if opcode == 8 { throw Failure(why: "closed after \(orders) orders: \(payload)") }
                guard opcode == 1, let message = try? JSONParser.parse(payload).objectValue,
                    let snapshot = message["snapshot"]?.objectValue
                else { continue }
                // Its Removes (one per order) precede the Creates: only the Creates carry orders.
                if message["operation"]?.intValue == 0 { orders += message["orders"]?.arrayValue?.count ?? 0 }
                if let part = snapshot["part"]?.intValue, let parts = snapshot["parts"]?.intValue, part == parts {
                    return (orders, Int(parts), total, Date().timeIntervalSince(started))
                }
            }
            usleep(2_000)
        }
    }

    /// Where the HTTP response head ends (after its blank line).
    private static func headEnd(_ b: [UInt8]) -> Int? {
        guard b.count >= 4 else { return nil }
        for i in 3..<b.count where b[i - 3] == 13 && b[i - 2] == 10 && b[i - 1] == 13 && b[i] == 10 { return i + 1 }
        return nil
    }

    /// One complete unmasked, unfragmented server frame at the start of `b`.
    private static func frame(_ b: [UInt8]) -> (opcode: UInt8, payload: [UInt8], used: Int)? {
        guard b.count >= 2 else { return nil }
        var length = Int(b[1] & 0x7F)
        var offset = 2
        if length == 126 {
            guard b.count >= 4 else { return nil }
            length = Int(b[2]) << 8 | Int(b[3])
            offset = 4
        } else if length == 127 {
            guard b.count >= 10 else { return nil }
            length = (2..<10).reduce(0) { $0 << 8 | Int(b[$1]) }
            offset = 10
        }
        guard b.count >= offset + length else { return nil }
        return (b[0] & 0x0F, Array(b[offset..<offset + length]), offset + length)
    }
}
