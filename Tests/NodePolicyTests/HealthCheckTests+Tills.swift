import Foundation
import XCTest

@testable import NodePolicy

/// The check sees every till: away terminals (`--max-away`, and their lag in `--max-lag`), a
/// slave's unknown lag, a failing store and a rival master.
extension HealthCheckTests {
    func away(_ name: String, seconds: Int, behind: Int) -> [String: Any] {
        [
            "terminalId": "ID-\(name)", "name": name, "address": "10.0.0.3:5000", "awaySeconds": seconds, "behind": behind,
            "ackedSeq": 42 - behind, "lastSeen": "2026-11-27T18:00:00.000Z", "outbox": NSNull(),
        ]
    }

    func testAwayTillIsWarnedWithHowLongAndHowFarBehindAndCountsInTheLag() throws {
        let status = try master(["peers": [peer(lag: 0)], "away": [away("till3", seconds: 1234, behind: 174)]])
        let t = HealthThresholds(
            lag: HealthThreshold(parsing: "10,100")!, outbox: HealthThreshold(parsing: "100")!,
            silence: HealthThreshold(parsing: "60", singleIsCritical: true)!, away: HealthThreshold(parsing: "600")!)
        let r = HealthCheck.evaluate(status, thresholds: t)
        // The lag of the away till (174) is above the critical lag: CRITICAL, with both findings.
        XCTAssertEqual(r.state, .critical)
        XCTAssertEqual(
            r.line,
            "ORDERSYNC CRITICAL - master shop1, 1 terminal, 1 away, max lag 174: max lag 174 (till3, away) above 100 (critical); "
                + "till3 away 1234 s, 174 behind, above 600 s"
                + " | terminals=1 lag=174;10;100 outbox=0 away=1 away_seconds=1234s;600;")
        // Within the lag thresholds, the time away alone: WARNING, then CRITICAL past its critical value.
        XCTAssertEqual(check(try master(["away": [away("till3", seconds: 1234, behind: 5)]])).state, .warning)
        let critical = HealthCheck.evaluate(
            try master(["away": [away("till3", seconds: 1234, behind: 5)]]),
            thresholds: HealthThresholds(
                lag: HealthThreshold(parsing: "100")!, outbox: HealthThreshold(parsing: "100")!,
                silence: HealthThreshold(parsing: "60", singleIsCritical: true)!, away: HealthThreshold(parsing: "60,600")!))
        XCTAssertEqual(critical.state, .critical)
        XCTAssertTrue(critical.summary.contains("till3 away 1234 s, 5 behind, above 600 (critical) s"), critical.summary)
        // Away, but not long: OK, and counted.
        let brief = check(try master(["away": [away("till3", seconds: 30, behind: 0)]]))
        XCTAssertEqual(brief.state, .ok)
        XCTAssertEqual(brief.summary, "master shop1, 0 terminals, 1 away, max lag 0")
    }

    func testRivalMasterIsCritical() throws {
        let rival: [String: Any] = [
            "name": "front #2", "address": "10.0.0.9:7420", "hostName": "h9.local", "nodeId": "N", "term": 1, "role": "master",
            "since": "2026-11-27T18:00:00.000Z", "sinceMillis": 1_795_000_000_000,
        ]
        let r = check(try master(["rivals": [rival]]))
        XCTAssertEqual(r.state, .critical)
        XCTAssertTrue(
            r.summary.hasSuffix(": another master of store shop1 on the LAN: front #2 at 10.0.0.9:7420 (h9.local)"), r.summary)
        XCTAssertEqual(check(try master(["rivals": []])).state, .ok)
    }

    func testFailingStoreIsCriticalNamingTheProblemAndTheFile() throws {
        let failure: [String: Any] = [
            "problem": "disk full", "error": "database or disk is full", "path": "/d/ordersync.sqlite", "failures": 3,
            "since": "2026-11-27T18:00:00.000Z", "sinceMillis": 1_795_000_000_000, "lastMillis": 1_795_000_001_000,
        ]
        // A daemon reports `failed` with the failure; the reading side makes it `failed` too.
        for store in ["failed", "ok"] {
            let ready: [String: Any] = ["store": store, "published": NSNull(), "link": "live", "storeFailure": failure]
            guard case .slave(let s) = try slave(["ready": ready]) else { return XCTFail("not a slave") }
            XCTAssertEqual(s.ready?.store, .failed)
            XCTAssertEqual(s.ready?.state, .failed)
            let r = check(.slave(s))
            XCTAssertEqual(r.state, .critical)
            XCTAssertTrue(
                r.summary.contains(
                    ": store failing: disk full (/d/ordersync.sqlite), 3 commits failed since \(NodeError.isoTime(epochMillis: 1_795_000_000_000))"
                ), r.summary)
        }
    }

    func testSlaveLagUnknownWhileNotLiveIsNeverZero() throws {
        let r = check(
            try slave(
                ["lag": NSNull(), "ready": ["store": "ok", "published": NSNull(), "link": "connecting"]],
                link: ["state": "waiting", "notLiveSeconds": 5]))
        XCTAssertEqual(r.state, .ok)
        XCTAssertEqual(
            r.line,
            "ORDERSYNC OK - slave till2 of shop1, link connecting, lag unknown, outbox 0 | lag=U;100;1000 outbox=0;100; silence=5s;;60")
        guard case .slave(let s) = try slave(["lag": NSNull()]) else { return XCTFail("not a slave") }
        XCTAssertNil(s.lag)
        XCTAssertTrue(StatusText.render(s).contains("lag:       unknown while not live (master at 40 when last heard)"))
    }
}
