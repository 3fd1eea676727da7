import Foundation
import Glibc
import JSON
import NodePolicy
import OrderSyncNode
import XCTest

/// A running master on loopback: a burst of StorePOS operations sent at once is applied in a
/// few group commits, and another terminal receives every one of them, in order.
final class GroupCommitNodeTests: XCTestCase {
    private var directories: [String] = []

    override func tearDown() {
        for d in directories { try? FileManager.default.removeItem(atPath: d) }
    }

    func testABurstOfOperationsIsCommittedInGroupsAndBroadcastInOrder() throws {
        let dir = NSTemporaryDirectory() + "ordersync-groups-" + UUID().uuidString
        directories.append(dir)
        let master = try RunningNode(
            role: .master, dataDirectory: dir, name: "front",
            configure: {
                $0.insecureStorePOS = true
                $0.rateLimitPerSecond = 1_000_000
                $0.rateLimitBurst = 1_000_000
            })
        defer { master.stop() }
        let slaveDir = NSTemporaryDirectory() + "ordersync-groups-slave-" + UUID().uuidString
        directories.append(slaveDir)
        let slave = try master.pairedSlave(dataDirectory: slaveDir, name: "till")
        defer { slave.stop() }
        try waitUntil("the slave is live") {
            guard case .slave(let s) = try slave.status() else { return false }
            return s.master.state == .live
        }
        let receiver = try RawStorePOSTerminal(port: master.port)
        let sender = try RawStorePOSTerminal(port: master.port)
        let uuids = (0..<300).map { _ in UUID().uuidString }
        // Every message in one send: the master reads them in one or a few loop turns.
        var burst: [UInt8] = []
        for (i, uuid) in uuids.enumerated() {
            let text =
                #"{"operation":0,"orders":[{"uuid":"\#(uuid)","customerName":"guest \#(i)","created":"2016-01-12T21:35:16+0800","shippingMethod":"pickup","tableName":"T\#(i % 9)","tableSize":2}]}"#
            burst += RawStorePOSTerminal.maskedTextFrame(text)
        }
        try sender.send(burst)
        var seen: [String] = []
        let wanted = Set(uuids)
        while seen.count < uuids.count {
            let message = try receiver.nextText(timeoutSeconds: 20)
            guard let object = try? JSONParser.parse(Array(message.utf8)).objectValue, object["operation"]?.intValue == 0,
                object["snapshot"] == nil
            else { continue }
            for order in object["orders"]?.arrayValue ?? [] {
                if let u = order.objectValue?["uuid"]?.stringValue, wanted.contains(u.uppercased()) { seen.append(u.uppercased()) }
            }
        }
        XCTAssertEqual(seen, uuids, "every operation, once, in the order sent")
        guard case .master(let status) = try master.status() else { return XCTFail("not a master status") }
        XCTAssertEqual(status.seq, 300)
        XCTAssertEqual(status.commits.operations, 300)
        XCTAssertGreaterThanOrEqual(status.commits.messages, 300)
        XCTAssertLessThan(status.commits.groups, status.commits.messages, "operations shared commits: \(status.commits)")
        XCTAssertGreaterThan(status.commits.largestGroup, 1)
        XCTAssertEqual(status.commits.failed, 0)
        // The slave applied the broadcasts in batches, each batch one transaction.
        var replica: SlaveStatus?
        try waitUntil("the slave has every operation") {
            guard case .slave(let s) = try slave.status() else { return false }
            replica = s
            return s.seq == 300 && s.orders == 300
        }
        let commits = try XCTUnwrap(replica).commits
        XCTAssertGreaterThanOrEqual(commits.messages, 300)
        XCTAssertLessThan(commits.batches, commits.messages, "the slave batched the broadcasts: \(commits)")
        XCTAssertEqual(commits.failed, 0)
        print("replica batches: \(commits.messages) messages in \(commits.batches) batches, the largest \(commits.largestBatch)")
        print("group commit: 300 operations in \(status.commits.groups) groups, the largest \(status.commits.largestGroup)")
    }
}

/// Polls `condition` every 10 ms for up to 30 s.
func waitUntil(_ what: String, timeoutSeconds: Double = 30, _ condition: () throws -> Bool) throws {
    let deadline = Date().addingTimeInterval(timeoutSeconds)
    while try !condition() {
        guard Date() < deadline else {
            XCTFail("timed out waiting for \(what)")
            throw RawStorePOSTerminal.Failure(why: "timed out waiting for \(what)")
        }
        usleep(10_000)
    }
}

/// A StorePOS terminal on a blocking raw socket: the opening handshake by hand, masked frames
/// out, whole text messages in.
final class RawStorePOSTerminal {
    struct Failure: Error { var why: String }
    private let fd: Int32
    private var buffer: [UInt8] = []

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(why: "socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw Failure(why: "connect: \(errno)")
        }
        try send(
            Array(
                ("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8))
        while true {
            if let end = Self.headEnd(buffer) {
                guard String(decoding: buffer[0..<end], as: UTF8.self).hasPrefix("HTTP/1.1 101") else {
                    throw Failure(why: "handshake refused")
                }
                buffer.removeFirst(end)
                return
            }
            try receive(timeoutSeconds: 10)
        }
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(why: "send: \(errno)") }
            offset += n
        }
    }

    private func receive(timeoutSeconds: Int) throws {
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        let n = recv(fd, &chunk, chunk.count, 0)
        guard n > 0 else { throw Failure(why: "the link ended or timed out (errno \(errno))") }
        buffer += chunk[0..<n]
    }

    /// The next text message (pings are answered by nobody: the test is short).
    func nextText(timeoutSeconds: Int) throws -> String {
        while true {
            if let (opcode, payload, used) = Self.frame(buffer) {
                buffer.removeFirst(used)
                if opcode == 8 { throw Failure(why: "closed: \(payload)") }
                if opcode == 1 { return String(decoding: payload, as: UTF8.self) }
                continue
            }
            try receive(timeoutSeconds: timeoutSeconds)
        }
    }

    /// A masked client text frame (RFC 6455 5.3).
    static func maskedTextFrame(_ text: String) -> [UInt8] {
        let payload = Array(text.utf8)
        var frame: [UInt8] = [0x81]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            frame.append(0x80 | 127)
            frame += (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xFF) }
        }
        let key: [UInt8] = (0..<4).map { _ in UInt8.random(in: 0...255) }
        frame += key
        frame += payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
        return frame
    }

    private static func headEnd(_ b: [UInt8]) -> Int? {
        guard b.count >= 4 else { return nil }
        for i in 3..<b.count where b[i - 3] == 13 && b[i - 2] == 10 && b[i - 1] == 13 && b[i] == 10 { return i + 1 }
        return nil
    }

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
