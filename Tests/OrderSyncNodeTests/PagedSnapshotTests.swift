import Foundation
import JSON
import OrderStore
import SyncCore
import WireTestSupport
import XCTest

/// Snapshots whose orders are read a page at a time (`MasterEngine.pagedSnapshots`,
/// `OrderDatabase+SnapshotRead`): every page comes from the store at the snapshot's sequence,
/// whatever is written between pages, and what is written meanwhile follows `ready`.
final class PagedSnapshotTests: XCTestCase {
    var dir: String!

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "ordersync-paged-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    private func stored(_ i: Int, millis: Int64) -> Order {
        Order(
            uuid: String(format: "%08X-0000-4000-8000-%012X", i, i), customerName: "c\(i)",
            created: OrderTimestamp(epochMillis: millis))
    }

    private func wire(_ uuid: String, _ name: String) -> JSONValue {
        .object(
            JSONObject([
                ("uuid", .string(uuid)), ("customerName", .string(name)), ("created", .string("2016-01-12T21:35:16+0800")),
            ]))
    }

    private func sends(_ actions: [MasterEngine.Action], to peer: Int) -> [String] {
        actions.compactMap {
            switch $0 {
            case .send(let p, let text) where p == peer: return text.text
            case .broadcast(let text, let peers) where peers.contains(peer): return text.text
            default: return nil
            }
        }
    }

    func testPagesReadInOneReadTransactionAreTheStoreAsItStoodWhateverIsWrittenBetweenThem() throws {
        let writer = try OrderDatabase(path: dir + "/m.sqlite")
        // Several orders share a `created`: the pages are cut by (created, key), not by created.
        for i in 0..<1_000 { try writer.insertOrder(stored(i, millis: 1_000_000 + Int64(i / 3))) }
        let reader = try OrderDatabase.openReader(of: writer)
        try reader.beginSnapshotRead()
        let expected = try writer.allOrders()
        // Written after the read began and before its first page: not in it either.
        try writer.insertOrder(stored(30_000, millis: 1))
        var first = expected[0]
        first.customerName = "changed before the first page"
        try writer.updateOrder(first)
        var read: [Order] = []
        var start: OrderDatabase.SnapshotPageStart?
        var page = 0
        var deleted = 0
        while true {
            let orders = try reader.snapshotPage(after: start, limit: 37)
            read += orders
            guard let last = orders.last else { break }
            start = (last.created.epochMillis, last.key)
            // Between pages: an order before every page, one after, an update and a removal
            // of orders still to be read, each committed.
            try writer.insertOrder(stored(10_000 + page, millis: 1))
            try writer.insertOrder(stored(20_000 + page, millis: 9_000_000))
            if let later = expected.dropFirst(read.count + 5).first {
                var changed = later
                changed.customerName = "changed"
                try writer.updateOrder(changed)
            }
            if let gone = expected.dropFirst(read.count + 10).first {
                try writer.deleteOrder(uuid: gone.uuid)
                deleted += 1
            }
            page += 1
        }
        XCTAssertEqual(page, 28, "1,000 orders in pages of 37")
        XCTAssertEqual(read.map(\.key), expected.map(\.key), "every order of the store as it stood, once, in order")
        XCTAssertEqual(read.map(\.customerName), expected.map(\.customerName), "no update made after it began")
        XCTAssertEqual(try reader.orderCount(), 1_000, "the count is the store's as it stood too")
        reader.endSnapshotRead()
        XCTAssertNotEqual(try reader.orderCount(), 1_000, "once ended, a read sees what was written")
        XCTAssertGreaterThan(deleted, 20)
        XCTAssertEqual(try writer.orderCount(), 1_000 + 1 + 2 * 28 - deleted)
    }

    func testAPagedSnapshotStandsAtItsSequenceAndWhatIsWrittenMeanwhileFollowsReady() throws {
        let path = dir + "/m.sqlite"
        let db = try OrderDatabase(path: path)
        let master = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e")
        master.pacesSnapshots = true
        master.snapshotChunk = 3
        var before: [String] = []
        for i in 0..<10 {
            let uuid = UUID().uuidString
            before.append(uuid.lowercased())
            _ = master.apply(OperationMessage(operation: .create, orders: [wire(uuid, "c\(i)")]), origin: "m", now: 1_000)
        }
        // The read begins when the engine asks for it, as the node's does once the store holds
        // the engine's sequence; its pages come only when the test hands them out.
        var pages: GatedPages?
        master.pagedSnapshots = { seq in
            let read = try GatedPages(reader: try OrderDatabase.openReader(of: db), pageSize: 3)
            pages = read
            return read
        }
        let sdb = try OrderDatabase(path: dir + "/s.sqlite")
        let slave = try SlaveEngine(store: SQLiteSlaveStore(db: sdb), terminalId: "t", terminalName: "bar", configuredStore: "s")
        _ = master.peerConnected(1, address: "10.0.0.2:1", terminal: AuthenticatedTerminal(nodeId: "t", name: "bar"))
        var hello: String?
        for case .send(let text) in slave.linkOpened() { hello = text.text }
        _ = master.received(try XCTUnwrap(hello), from: 1, now: 1_000)
        let read = try XCTUnwrap(pages)
        XCTAssertTrue(master.isSnapshotReading(1), "no part before the read has its first page")
        XCTAssertEqual(master.snapshotDue(for: 1), [])

        var toSlave: [String] = []
        var written: [String] = []
        var rounds = 0
        while master.isReceivingSnapshot(1) {
            // A write between every two pages: a Create, and an Update of an order already read.
            let uuid = UUID().uuidString
            written.append(uuid.lowercased())
            let (outcome, actions) = master.localWrite(
                OperationMessage(operation: .create, orders: [wire(uuid, "during \(rounds)")]), origin: "api", now: 2_000)
            XCTAssertEqual(outcome.seq, 11 + Int64(2 * rounds))
            XCTAssertEqual(sends(actions, to: 1), [], "nothing overtakes the snapshot")
            let update = master.localWrite(
                OperationMessage(
                    operation: .update, orders: [.object(JSONObject([("uuid", .string(before[0])), ("tableSize", .int(Int64(rounds)))]))]),
                origin: "api", now: 2_001)
            XCTAssertEqual(sends(update.1, to: 1), [])
            read.handOutOne()
            XCTAssertFalse(master.isSnapshotReading(1))
            while !master.isSnapshotReading(1), master.isReceivingSnapshot(1) {
                let due = master.snapshotDue(for: 1)
                XCTAssertFalse(due.isEmpty)
                toSlave += sends(due, to: 1)
            }
            rounds += 1
        }
        XCTAssertEqual(rounds, 4, "10 orders in pages of 3")
        let parts = toSlave.prefix { !$0.contains("\"type\":\"ready\"") }
        XCTAssertEqual(parts.count, 4)
        var snapshotKeys: [String] = []
        for part in parts {
            let orders: [JSONValue] = try JSONParser.parse(part).objectValue?["orders"]?.arrayValue ?? []
            for o in orders { snapshotKeys.append(o.objectValue?["uuid"]?.stringValue?.lowercased() ?? "") }
        }
        XCTAssertEqual(Set(snapshotKeys), Set(before), "the snapshot holds the store at seq 10, no write made after")
        XCTAssertTrue(parts.allSatisfy { $0.contains("\"seq\":10") }, "\(parts)")
        let ready = try XCTUnwrap(toSlave.first { $0.contains("\"type\":\"ready\"") })
        XCTAssertTrue(ready.contains("\"seq\":10"), ready)
        XCTAssertEqual(toSlave.count, 4 + 1 + 2 * rounds, "the parts, ready, then every write held, in order")
        for (n, held) in toSlave.suffix(2 * rounds).enumerated() { XCTAssertTrue(held.contains("\"seq\":\(11 + n)"), held) }

        for text in toSlave { _ = slave.received(text, now: 3_000) }
        XCTAssertEqual(slave.lastSeq, 10 + Int64(2 * rounds))
        XCTAssertEqual(Set(try sdb.allOrders().map(\.key)), Set(before + written))
        XCTAssertEqual(try sdb.order(uuid: before[0])?.tableSize, Int64(rounds - 1))
    }

    func testAPagedStorePOSConnectSequenceIsTheOneReadWhole() throws {
        let orders = (0..<7).map { stored($0, millis: 5_000 + Int64($0)) }
        let removed = ["GONE-1", "gone-2"]
        var whole = SnapshotStream(
            orders: orders, seq: 9, chunk: 3, epoch: "e", storeId: "s", sendsReady: false,
            clearing: orders.map(\.uuid) + removed, fence: 4)
        let gated = GatedPages(orders: orders, removed: removed, pageSize: 3)
        var paged = SnapshotStream(
            pages: gated, seq: 9, epoch: "e", storeId: "s", sendsReady: false, clearsOrders: true, fence: 4)
        XCTAssertTrue(paged.isReading, "it waits for the read to open")
        XCTAssertNil(paged.nextPart())
        gated.open()
        var messages: [[UInt8]] = []
        var reads = 0
        while !paged.isComplete {
            if paged.isSettling {
                paged.settle()
            } else if paged.isReading {
                gated.handOutOne()
                reads += 1
            } else {
                messages.append(try XCTUnwrap(paged.nextPart()))
            }
        }
        XCTAssertEqual(paged.parts, 7 + 2 + 2 * 4 + 3)
        XCTAssertEqual(messages, whole.allParts(), "the same messages, part for part")
        XCTAssertGreaterThanOrEqual(reads, 3)
    }

    func testAReadThatFailsClosesTheTerminalInsteadOfStallingIt() throws {
        let db = try OrderDatabase(path: dir + "/m.sqlite")
        let master = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e")
        master.pacesSnapshots = true
        let gated = GatedPages(orders: [], removed: [], pageSize: 3)
        master.pagedSnapshots = { _ in gated }
        _ = master.peerConnected(1, address: "10.0.0.2:1", terminal: nil)
        XCTAssertTrue(master.isSnapshotReading(1))
        gated.fail("disk I/O error")
        XCTAssertFalse(master.isSnapshotReading(1))
        let actions = master.snapshotDue(for: 1)
        XCTAssertTrue(
            actions.contains {
                if case .close(1, MasterEngine.internalError, _) = $0 { return true }
                return false
            }, "\(actions)")
        XCTAssertFalse(master.isReceivingSnapshot(1))
    }
}

/// Pages handed out one at a time by the test: from a reader connection whose read
/// transaction began when it was made, or from a list.
private final class GatedPages: SnapshotPages, @unchecked Sendable {
    // @unchecked Sendable: used by one test thread only.
    let pageSize: Int
    private let all: [Order]
    private let removed: [String]
    private var isOpen: Bool
    private var given = 0
    private var failed: String?

    /// The store as `reader` sees it now: its read transaction begins here, then later writes
    /// through other connections are not seen.
    init(reader: OrderDatabase, pageSize: Int) throws {
        try reader.beginSnapshotRead()
        var orders: [Order] = []
        var start: OrderDatabase.SnapshotPageStart?
        while true {
            let page = try reader.snapshotPage(after: start, limit: pageSize)
            guard let last = page.last else { break }
            orders += page
            start = (last.created.epochMillis, last.key)
        }
        self.all = orders
        self.removed = try reader.snapshotRemovedUUIDs()
        self.pageSize = pageSize
        self.isOpen = true
        reader.endSnapshotRead()
    }

    init(orders: [Order], removed: [String], pageSize: Int) {
        self.all = orders
        self.removed = removed
        self.pageSize = pageSize
        self.isOpen = false
    }

    func open() { isOpen = true }
    func handOutOne() { given += 1 }
    func fail(_ why: String) { failed = why }

    var orderCount: Int? { isOpen ? all.count : nil }
    var removedUUIDs: [String]? { isOpen ? removed : nil }
    var failure: String? { failed }

    func page(_ index: Int) -> [Order]? {
        guard isOpen, index < given else { return nil }
        let start = min(all.count, index * pageSize)
        return Array(all[start..<min(all.count, start + pageSize)])
    }
}
