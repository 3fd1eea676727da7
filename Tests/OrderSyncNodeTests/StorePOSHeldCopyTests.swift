import Foundation
import JSON
import OrderStore
import SyncCore
import WireTestSupport
import XCTest

/// After a master change, a Create the master applies may be of an order a StorePOS app got
/// from the old master and still holds: the app is sent a Remove of the uuid first, far enough
/// ahead that its queue cannot apply the Create first, and does not crash
/// (`MasterEngine+HeldCopies.swift`). Ordinary Creates get nothing more.
final class StorePOSHeldCopyTests: XCTestCase {
    /// When the app's link to the new master opens (master's clock, ms).
    private let opened: Int64 = 1_764_300_000_000
    private var apps: [Int: StorePOSAppModel] = [:]

    /// The uuid of test order `n`, spelled as a StorePOS app would.
    private func uuid(_ n: Int) -> String { "9437C8F5-0000-4000-8000-\(String(format: "%012d", n))" }

    override func setUp() {
        apps = [:]
    }

    /// A master on a fresh SQLite store; `term` other than 1: a store promoted (or restored)
    /// into that term at seq 1.
    private func master(term: Int64) throws -> MasterEngine {
        let db = try OrderDatabase.inMemory()
        if term != 1 {
            try db.setTerm(term)
            try db.addTermStart(term: term, seq: 1)
        }
        return try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e")
    }

    /// Carries the master's messages to the apps; returns the texts sent to `peer`.
    @discardableResult
    private func deliver(_ actions: [MasterEngine.Action], to peer: Int = 1) -> [String] {
        apps.deliver(actions, to: peer)
    }

    /// App `id` (keeping what it holds, if it ran before) connects to `master` at `now` (nil:
    /// the engine is not told when) and gets its connect sequence.
    private func connect(_ id: Int, to master: MasterEngine, now: Int64?) {
        if apps[id] == nil { apps[id] = StorePOSAppModel() }
        deliver(master.peerConnected(id, address: "10.0.0.\(id):5000", terminal: nil, now: now), to: id)
        while master.isReceivingSnapshot(id) { deliver(master.snapshotDue(for: id), to: id) }
    }

    /// A Create of `uuid` taken at `created` through the local API, applied at `now`; the
    /// texts app `peer` is sent.
    private func create(
        _ uuid: String, created: Int64, on master: MasterEngine, now: Int64, opId: String? = nil, to peer: Int = 1
    ) -> [String] {
        let order = JSONObject([
            ("uuid", .string(uuid)), ("customerName", .string("c-\(uuid)")),
            ("created", .string(OrderTimestamp(epochMillis: created).storePOSText)),
        ])
        let (outcome, actions) = master.localWrite(
            OperationMessage(operation: .create, orders: [.object(order)], opId: opId), origin: "api", now: now)
        XCTAssertTrue(outcome.errors.isEmpty, "\(outcome.errors)")
        return deliver(actions, to: peer)
    }

    /// Each text as (operation, uuids, the promise index of its first promise on the app).
    private func promises(_ texts: [String]) -> [(operation: Int64, uuids: [String], at: Int)] {
        var at = 0
        return texts.map { text in
            let o = (try? JSONParser.parse(Array(text.utf8)).objectValue) ?? JSONObject([])
            let operation = o["operation"]?.intValue ?? -1
            let uuids = (o["orders"]?.arrayValue ?? []).compactMap { $0.objectValue?["uuid"]?.stringValue }
            defer { at += operation == 2 ? 1 : uuids.count }
            return (operation, uuids, at)
        }
    }

    /// `texts` are a Remove of `uuid` alone, then the Create of it.
    private func assertRemovedFirst(_ texts: [String], _ uuid: String, line: UInt = #line) {
        let sent = promises(texts)
        XCTAssertEqual(sent.first?.operation, 2, line: line)
        XCTAssertEqual(sent.first?.uuids, [uuid], line: line)
        XCTAssertEqual(sent.last?.operation, 0, line: line)
        XCTAssertEqual(sent.last?.uuids, [uuid], line: line)
    }

    /// The crash case: app 1 got order U from the old master and holds it; the promoted master,
    /// which never had U, applies a Create of U again (a till's re-queued tail or retry). The
    /// app is sent a Remove of U alone, then at least `storePOSFence` promises later the Create:
    /// it does not crash and shows U once. A new order taken after the app connected costs
    /// nothing more: the Create alone.
    func testACreateOfAnOrderTheAppGotFromTheOldMasterIsPrecededByItsRemove() throws {
        let old = try master(term: 1)
        connect(1, to: old, now: opened - 3_600_000)
        _ = create(uuid(1), created: opened - 1_800_000, on: old, now: opened - 1_800_000)
        XCTAssertEqual(apps[1]?.list.map(\.uuid), [uuid(1)])

        let promoted = try master(term: 1026)
        connect(1, to: promoted, now: opened)
        XCTAssertEqual(apps[1]?.list.map(\.uuid), [uuid(1)], "the new master does not know the order: its connect sequence leaves it")

        let sent = promises(create(uuid(1), created: opened - 1_800_000, on: promoted, now: opened + 5_000, opId: "op-u1"))
        let remove = try XCTUnwrap(sent.first)
        XCTAssertEqual(remove.operation, 2)
        XCTAssertEqual(remove.uuids, [uuid(1)], "a Remove of the order alone, before anything else")
        let createU = try XCTUnwrap(sent.last)
        XCTAssertEqual(createU.operation, 0)
        XCTAssertEqual(createU.uuids, [uuid(1)])
        XCTAssertGreaterThanOrEqual(createU.at - remove.at, promoted.storePOSFence, "the Create is the fence's distance after the Remove")
        XCTAssertTrue(sent.dropFirst().dropLast().allSatisfy { $0.operation == 2 && $0.uuids.isEmpty }, "only empty Removes between")
        let app = try XCTUnwrap(apps[1])
        XCTAssertFalse(app.crashed)
        XCTAssertEqual(app.list.map(\.uuid), [uuid(1)])

        // The same operation again (a second till held it): answered, broadcast to no one.
        XCTAssertEqual(create(uuid(1), created: opened - 1_800_000, on: promoted, now: opened + 6_000, opId: "op-u1"), [])

        // An order taken after the app's link opened (and the margin): the Create alone.
        let taken = opened + MasterEngine.heldCopyMarginMillis + 10_000
        let fresh = promises(create(uuid(2), created: taken, on: promoted, now: taken + 500))
        XCTAssertEqual(fresh.map(\.operation), [0])
        XCTAssertEqual(fresh.first?.uuids, [uuid(2)])
        XCTAssertEqual(apps[1]?.list.map(\.uuid), [uuid(1), uuid(2)])
        XCTAssertEqual(apps[1]?.crashed, false)
    }

    /// A store that never changed master: no Create can be of an order another master sent,
    /// and none gets a Remove, however old its `created`.
    func testAStoreThatNeverChangedMasterSendsTheCreateAlone() throws {
        let only = try master(term: 1)
        connect(1, to: only, now: opened)
        let sent = promises(create(uuid(3), created: opened - 86_400_000, on: only, now: opened + 1_000))
        XCTAssertEqual(sent.map(\.operation), [0])
        XCTAssertEqual(apps[1]?.list.map(\.uuid), [uuid(3)])
    }

    /// Within the margin of the link's opening, a `created` proves nothing: a Create taken up to
    /// `heldCopyMarginMillis` after the link opened, one stamped further ahead of the master's
    /// clock than the margin, and any Create to an app whose link's opening the engine was not
    /// told get the Remove; one taken past the margin does not.
    func testTheMarginAndUnknownTimesCountAsMayHold() throws {
        let promoted = try master(term: 2)
        connect(1, to: promoted, now: opened)
        let margin = MasterEngine.heldCopyMarginMillis
        let now = opened + 10 * margin
        assertRemovedFirst(create(uuid(4), created: opened + margin - 1_000, on: promoted, now: now), uuid(4))
        assertRemovedFirst(create(uuid(5), created: now + margin + 1_000, on: promoted, now: now), uuid(5))
        XCTAssertEqual(promises(create(uuid(6), created: opened + margin + 1_000, on: promoted, now: now)).map(\.operation), [0])
        connect(2, to: promoted, now: nil)
        assertRemovedFirst(create(uuid(7), created: now, on: promoted, now: now, to: 2), uuid(7))
        XCTAssertEqual(apps[1]?.crashed, false)
        XCTAssertEqual(apps[2]?.crashed, false)
    }
}
