import Foundation
import XCTest

@testable import NodePolicy

/// The pure parts of the node's health: the store's commit streak, the rival masters, a paired
/// terminal's presence, the process figures from `/proc` texts, and their status JSON.
final class HealthPartsTests: XCTestCase {
    func testStoreHealthFailsFromTheFirstFailedCommitUntilOneSucceeds() {
        var h = StoreHealth()
        XCTAssertNil(h.failure)
        h.failed(problem: "disk full", error: "database or disk is full", path: "/d/db", atMillis: 1_000)
        XCTAssertEqual(
            h.failure,
            StoreFailure(
                problem: "disk full", error: "database or disk is full", path: "/d/db", failures: 1, sinceMillis: 1_000, lastMillis: 1_000))
        h.failed(problem: "read-only", error: "attempt to write a readonly database", path: nil, atMillis: 3_000)
        // The streak keeps its start and its file; the last failure names the problem now.
        XCTAssertEqual(h.failure?.failures, 2)
        XCTAssertEqual(h.failure?.sinceMillis, 1_000)
        XCTAssertEqual(h.failure?.lastMillis, 3_000)
        XCTAssertEqual(h.failure?.problem, "read-only")
        XCTAssertEqual(h.failure?.path, "/d/db")
        XCTAssertEqual(h.failure?.summary, "read-only (/d/db), 2 commits failed since 1970-01-01T00:00:01.000Z")
        h.committed()
        XCTAssertNil(h.failure)
        h.failed(problem: "disk full", error: "x", path: nil, atMillis: 9_000)
        XCTAssertEqual(h.failure?.failures, 1)
        XCTAssertEqual(h.failure?.summary, "disk full, 1 commit failed since 1970-01-01T00:00:09.000Z")
    }

    func announcement(_ name: String, store: String = "shop1", proto: String = "ordersync/1") -> RivalMasters.Announcement {
        RivalMasters.Announcement(
            name: name, hostName: "h2.local", address: "10.0.0.2", port: 7420,
            txt: ["proto": proto, "store": store, "id": "AAAA-BBBB", "term": "3", "role": "master"])
    }

    func testRivalsAreOtherServicesOfTheStoreNotItsOwn() {
        var r = RivalMasters()
        func found(_ a: RivalMasters.Announcement, at millis: Int64 = 5_000) -> RivalMasters.Change {
            r.found(a, storeId: "shop1", ownName: "front", askedName: "front", nowMillis: millis)
        }
        // Its own announcement, another store's master, another protocol: no rival.
        XCTAssertEqual(found(announcement("front")), .none)
        XCTAssertEqual(found(announcement("other", store: "shop2")), .none)
        XCTAssertEqual(found(announcement("x", proto: "storepos")), .none)
        XCTAssertEqual(r.list, [])
        // A copy of the store elsewhere, renamed by Avahi: a rival, once.
        let rival = MasterStatus.RivalMaster(
            name: "front #2", address: "10.0.0.2:7420", hostName: "h2.local", nodeId: "AAAA-BBBB", term: 3, role: "master",
            sinceMillis: 5_000)
        XCTAssertEqual(found(announcement("front #2")), .appeared(rival))
        XCTAssertEqual(found(announcement("front #2"), at: 9_000), .updated)
        XCTAssertEqual(r.list, [rival], "seen since it first appeared")
        // It goes when it leaves, or when it announces another store.
        XCTAssertEqual(r.lost(name: "front #2"), .gone(rival))
        XCTAssertEqual(r.lost(name: "front #2"), .none)
        XCTAssertEqual(
            found(announcement("front #2"), at: 10_000),
            .appeared(
                MasterStatus.RivalMaster(
                    name: "front #2", address: "10.0.0.2:7420", hostName: "h2.local", nodeId: "AAAA-BBBB", term: 3, role: "master",
                    sinceMillis: 10_000)))
        if case .gone = found(announcement("front #2", store: "shop2")) {} else { XCTFail("a changed store is no rival") }
        XCTAssertEqual(r.list, [])
        // Before Avahi confirmed its name, the name it asked for is its own.
        XCTAssertFalse(RivalMasters.isRival(announcement("front"), storeId: "shop1", ownName: nil, askedName: "front"))
        XCTAssertTrue(RivalMasters.isRival(announcement("front"), storeId: "shop1", ownName: "front #2", askedName: "front"))
    }

    func testAwayTerminalSinceLastSeenOrSincePaired() {
        let seen = TerminalPresence(
            terminalId: "T3", name: "till3", connected: false, lastSeenMillis: 100_000, pairedAtMillis: 1_000, ackedSeq: 26,
            address: "10.0.0.3:4000", outbox: 2)
        XCTAssertEqual(
            seen.away(lastSeq: 200, nowMillis: 1_334_999),
            MasterStatus.AwayTerminal(
                terminalId: "T3", name: "till3", address: "10.0.0.3:4000", awaySeconds: 1234, behind: 174, ackedSeq: 26,
                lastSeen: "1970-01-01T00:01:40.000Z", outbox: 2))
        let never = TerminalPresence(terminalId: "T4", name: "till4", connected: false, lastSeenMillis: nil, pairedAtMillis: 1_000)
        let away = never.away(lastSeq: 200, nowMillis: 61_000)
        XCTAssertEqual(away?.awaySeconds, 60)
        XCTAssertEqual(away?.behind, 200)
        XCTAssertNil(away?.lastSeen)
        var connected = seen
        connected.connected = true
        XCTAssertNil(connected.away(lastSeq: 200, nowMillis: 1_334_999))
        XCTAssertEqual(connected.behind(lastSeq: 20), 0, "never negative")
    }

    func testProcessStatsFromProcTexts() throws {
        // A command name with a space and a parenthesis; utime 250 + stime 50 ticks; start 1000
        // ticks after boot; vsize 8 MiB; rss 300 pages.
        let stat =
            "4242 (orders (x) y) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 3 0 1000 8388608 300 "
            + "18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 17 1 0 0 0 0 0"
        let procStat = "cpu  1 2 3 4\ncpu0 1 2 3 4\nintr 5\nbtime 1795000000\nprocesses 9\n"
        let s = try XCTUnwrap(ProcessStats(stat: stat, procStat: procStat, clockTicks: 100, pageSize: 4096))
        XCTAssertEqual(s, ProcessStats(cpuSeconds: 3, residentBytes: 300 * 4096, virtualBytes: 8_388_608, startTimeSeconds: 1_795_000_010))
        XCTAssertNil(ProcessStats(stat: "4242 (x) S 1", procStat: procStat, clockTicks: 100, pageSize: 4096))
        XCTAssertNil(ProcessStats(stat: stat, procStat: "cpu 1\n", clockTicks: 100, pageSize: 4096))
        XCTAssertNil(ProcessStats(stat: stat, procStat: procStat, clockTicks: 0, pageSize: 4096))
        // This process's own files parse.
        let own = try String(contentsOfFile: "/proc/self/stat", encoding: .utf8)
        let boot = try String(contentsOfFile: "/proc/stat", encoding: .utf8)
        let mine = try XCTUnwrap(ProcessStats(stat: own, procStat: boot, clockTicks: 100, pageSize: 4096))
        XCTAssertGreaterThan(mine.residentBytes, 0)
        XCTAssertLessThanOrEqual(mine.startTimeSeconds, Date().timeIntervalSince1970 + 1)
    }

    func testHealthMembersRoundTripThroughTheStatusJSON() throws {
        let failure = StoreFailure(problem: "disk full", error: "full", path: "/d/db", failures: 2, sinceMillis: 1_000, lastMillis: 2_000)
        let ready = NodeReadiness(store: .ok, published: .ok, storeFailure: failure)
        XCTAssertEqual(ready.store, .failed, "a failing store is not ready")
        XCTAssertEqual(try NodeReadiness(json: ready.jsonValue), ready)
        let rival = MasterStatus.RivalMaster(
            name: "front #2", address: "10.0.0.2:7420", hostName: "h2.local", nodeId: nil, term: nil, role: nil, sinceMillis: 1_000)
        XCTAssertEqual(try MasterStatus.RivalMaster(json: rival.jsonValue), rival)
        XCTAssertEqual(rival.jsonValue.objectValue?["since"], .string("1970-01-01T00:00:01.000Z"))
        let away = MasterStatus.AwayTerminal(
            terminalId: "T", name: "t", address: nil, awaySeconds: 5, behind: 7, ackedSeq: nil, lastSeen: nil, outbox: nil)
        XCTAssertEqual(try MasterStatus.AwayTerminal(json: away.jsonValue), away)
    }
}
