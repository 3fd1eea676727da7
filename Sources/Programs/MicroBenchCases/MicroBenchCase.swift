import Foundation
import JSON
import OrderStore
import SyncCore
import WebSocket

/// The hot path's steps, one at a time, for instruction counts under callgrind
/// (`Scripts/callgrind.sh`, which counts inside `run` only) and allocation counts
/// (`ordersync-microbench`): each case does its work `run(iterations)` times on inputs made
/// beforehand in `init`, so what is counted is the step itself.
public final class MicroBenchCase {
    /// The cases, in the order the table shows them.
    public static let names = ["frame-parse", "frame-encode", "message-decode", "message-encode", "apply", "fanout"]

    public let name: String
    private let capacity: Int
    private var texts: [[UInt8]] = []
    private var frames: [[UInt8]] = []
    private var order: Order?
    private var engine: MasterEngine?
    private var database: OrderDatabase?
    private var next = 0
    /// What the last `run` produced, so the work cannot be optimized away and tests can check it.
    public private(set) var checksum = 0

    /// A StorePOS Create of one order, as a terminal sends it (about 250 bytes).
    public static func storePOSCreate(_ i: Int) -> String {
        let uuid = String(format: "6F1C2A3B-0000-4000-8000-%012X", i)
        return
            #"{"operation":0,"orders":[{"uuid":"\#(uuid)","customerName":"Guest \#(i) at the window","created":"2016-01-12T21:35:16+0800","shippingMethod":"pickup","tableName":"T\#(i % 40)","tableSize":\#(1 + i % 8)}]}"#
    }

    /// A case ready for up to `capacity` iterations in all (`apply` and `fanout` store one new
    /// order per iteration).
    public init(_ name: String, capacity: Int) throws {
        guard Self.names.contains(name) else { throw CaseError("unknown case \(name); one of \(Self.names.joined(separator: ", "))") }
        self.name = name
        self.capacity = capacity
        switch name {
        case "frame-parse":
            let text = Array(Self.storePOSCreate(1).utf8)
            var frame: [UInt8] = []
            text.withUnsafeBytes { FrameEncoder.append(opcode: .text, payload: $0, maskingKey: MaskingKey(0x1234_5678), to: &frame) }
            frames = [frame]
        case "frame-encode", "message-decode":
            texts = [Array(Self.storePOSCreate(1).utf8)]
        case "message-encode":
            order = Order(
                uuid: "6f1c2a3b-0000-4000-8000-000000000001", customerName: "Guest 1 at the window",
                created: OrderTimestamp(epochMillis: 1_452_605_716_000, offsetMinutes: 480), shippingMethod: "pickup",
                tableName: "T1", tableSize: 2)
        default:
            let db = try OrderDatabase.inMemory()
            let engine = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "bench", epoch: "e")
            engine.logsEachOperation = false
            engine.rateLimit = RateLimit(operationsPerSecond: 1e9, burst: 1e9)
            engine.limits.bytes = Allowance(perSecond: 1e15, capacity: 1e15)
            engine.limits.journalBytesPerHour = 1e15
            let peers = name == "apply" ? 1 : 11
            for id in 1...peers { _ = engine.peerConnected(id, address: "10.0.0.\(id):5000", terminal: nil) }
            texts = (0..<capacity).map { Array(Self.storePOSCreate($0).utf8) }
            self.engine = engine
            database = db
        }
    }

    /// Runs the case's step `iterations` times.
    public func run(_ iterations: Int) throws {
        var sum = checksum
        switch name {
        case "frame-parse":
            var parser = FrameParser(role: .server)
            for _ in 0..<iterations {
                parser.append(frames[0])
                while let frame = try parser.next() { sum &+= frame.payload.count }
            }
        case "frame-encode":
            let text = texts[0]
            for _ in 0..<iterations {
                var out: [UInt8] = []
                text.withUnsafeBytes { FrameEncoder.append(opcode: .text, payload: $0, maskingKey: nil, to: &out) }
                sum &+= out.count
            }
        case "message-decode":
            for _ in 0..<iterations {
                if case .success(.operation(let m)) = ClientMessage.decode(texts[0]) { sum &+= m.orders.count }
            }
        case "message-encode":
            guard let order else { break }
            for i in 0..<iterations {
                let text = ServerMessage.applied(
                    operation: .create, orders: [order], seq: Int64(i + 1), opId: nil, origin: "10.0.0.1:5000", snapshot: nil
                ).encodedBytes()
                sum &+= text.count
            }
        default:
            guard let engine, let database else { break }
            guard next + iterations <= capacity else { throw CaseError("\(name) was made for \(capacity) iterations") }
            // As on the master: the operations of a run share one transaction (a group commit),
            // each one a savepoint inside it.
            try database.beginGroup()
            defer { try? database.commitGroup() }
            for _ in 0..<iterations {
                for action in engine.received(texts[next], from: 1, now: 1_452_605_716_000) {
                    if case .broadcast(let bytes, let peers) = action {
                        // The broadcast frame, encoded once for every StorePOS terminal.
                        var frame: [UInt8] = []
                        bytes.withUnsafeBytes { FrameEncoder.append(opcode: .text, payload: $0, maskingKey: nil, to: &frame) }
                        sum &+= frame.count * max(1, peers.count)
                    }
                }
                next += 1
            }
        }
        checksum = sum
    }

    /// Orders in the case's store (`apply`, `fanout`).
    public func storedOrders() throws -> Int { try database?.orderCount() ?? 0 }

    public struct CaseError: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }
}
