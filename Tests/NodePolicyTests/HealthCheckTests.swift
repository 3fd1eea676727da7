import Foundation
import XCTest

@testable import NodePolicy

/// `ordersync check`'s rules: thresholds parsed, a status judged into a state and one line.
final class HealthCheckTests: XCTestCase {
    /// A master's status as a daemon encodes it; `extra` replaces members.
    func master(_ extra: [String: Any] = [:]) throws -> NodeStatus {
        var o: [String: Any] = [
            "role": "master", "version": "0.1.0", "store": "shop1", "name": "front", "nodeId": "N", "epoch": "E", "seq": 42,
            "orders": 3, "port": 7420, "dataDir": "/d", "serviceType": "_pos._tcp", "serviceName": "front", "avahi": "up",
            "uptimeSeconds": 10, "peers": [], "terminals": [], "tombstones": 0, "pairing": ["state": "closed"], "pairedTerminals": 0,
            "previousNodeId": NSNull(),
            "commits": ["groups": 0, "messages": 0, "operations": 0, "largestGroup": 0, "failed": 0, "lastCommitMicros": 0],
            "ready": ["store": "ok", "published": "ok", "link": NSNull()], "state": "ready", "lastError": NSNull(),
        ]
        o.merge(extra) { _, new in new }
        return try NodeStatus(jsonBytes: Array(JSONSerialization.data(withJSONObject: o)))
    }

    func peer(lag: Int) -> [String: Any] {
        [
            "address": "10.0.0.2:5000", "protocol": "ordersync", "terminal": "till", "terminalId": "T", "connectedSeconds": 5,
            "lastSeenMillisAgo": 100, "ackedSeq": 42 - lag, "lag": lag, "messages": 1, "rejected": 0,
        ]
    }

    /// A slave's status; `extra` replaces members, `link` members of `master`.
    func slave(_ extra: [String: Any] = [:], link: [String: Any] = [:]) throws -> NodeStatus {
        var l: [String: Any] = [
            "state": "live", "url": "ws://10.0.0.1:7420/", "serviceName": NSNull(), "sinceSeconds": 100,
            "lastSeenMillisAgo": 5, "lastError": NSNull(), "notLiveSeconds": NSNull(),
        ]
        l.merge(link) { _, new in new }
        var o: [String: Any] = [
            "role": "slave", "version": "0.1.0", "store": "shop1", "name": "till2", "nodeId": "N", "terminalId": "T",
            "masterId": "M", "pairing": "paired", "seq": 40, "masterSeq": 40, "lag": 0, "epoch": "E", "orders": 3, "dataDir": "/d",
            "avahi": "not used (--master)", "uptimeSeconds": 100, "master": l, "pendingWrites": 0, "outbox": 0, "mastersSeen": [],
            "commits": ["batches": 0, "messages": 0, "largestBatch": 0, "failed": 0],
            "ready": ["store": "ok", "published": NSNull(), "link": "live"], "state": "ready", "lastError": NSNull(),
        ]
        o.merge(extra) { _, new in new }
        return try NodeStatus(jsonBytes: Array(JSONSerialization.data(withJSONObject: o)))
    }

    func check(_ s: NodeStatus, lag: String = "100,1000", outbox: String = "100", silence: String = "60") -> HealthReport {
        let t = HealthThresholds(
            lag: HealthThreshold(parsing: lag)!, outbox: HealthThreshold(parsing: outbox)!,
            silence: HealthThreshold(parsing: silence, singleIsCritical: true)!)
        return HealthCheck.evaluate(s, thresholds: t)
    }

    func testThresholdsParse() {
        XCTAssertEqual(HealthThreshold(parsing: "100"), HealthThreshold(warning: 100, critical: nil))
        XCTAssertEqual(HealthThreshold(parsing: "60", singleIsCritical: true), HealthThreshold(warning: nil, critical: 60))
        XCTAssertEqual(HealthThreshold(parsing: "100,1000"), HealthThreshold(warning: 100, critical: 1000))
        XCTAssertEqual(HealthThreshold(parsing: ",5"), HealthThreshold(warning: nil, critical: 5))
        XCTAssertEqual(HealthThreshold(parsing: "7,"), HealthThreshold(warning: 7, critical: nil))
        for bad in ["", ",", "-1", "a", "10,5", "1,2,3", "1.5"] {
            XCTAssertNil(HealthThreshold(parsing: bad), bad)
        }
        let t = HealthThreshold(warning: 100, critical: 1000)
        XCTAssertEqual([0, 100, 101, 1000, 1001].map { t.state(of: $0) }, [.ok, .ok, .warning, .warning, .critical])
    }

    func testStatesCombineWithCriticalWorst() {
        XCTAssertEqual([HealthState.ok, .warning, .unknown].max(), .unknown)
        XCTAssertEqual([HealthState.unknown, .critical, .warning].max(), .critical)
        XCTAssertEqual(HealthState.allExitCodes, [0, 1, 2, 3])
    }

    func testLiveMasterIsOKWithOneLine() throws {
        let r = check(try master(["peers": [peer(lag: 0), peer(lag: 2), peer(lag: 0)]]))
        XCTAssertEqual(r.state, .ok)
        XCTAssertEqual(
            r.line, "ORDERSYNC OK - master shop1, 3 terminals, max lag 2 | terminals=3 lag=2;100;1000 outbox=0 away=0 away_seconds=0s;600;")
    }

    func testMasterLagAboveThresholds() throws {
        XCTAssertEqual(check(try master(["peers": [peer(lag: 101)]])).state, .warning)
        let r = check(try master(["peers": [peer(lag: 1001), peer(lag: 3)]]))
        XCTAssertEqual(r.state, .critical)
        XCTAssertEqual(r.summary, "master shop1, 2 terminals, max lag 1001: max lag 1001 above 1000 (critical)")
    }

    func testMasterUnpublishedWarnsAndUnreadableStoreIsCritical() throws {
        let down = check(try master(["avahi": "down", "ready": ["store": "ok", "published": "failed"], "state": "degraded"]))
        XCTAssertEqual(down.state, .warning)
        XCTAssertTrue(down.summary.contains("not published on the LAN (avahi down)"), down.summary)
        let broken = check(try master(["ready": ["store": "failed", "published": "ok"], "state": "failed"]))
        XCTAssertEqual(broken.state, .critical)
        XCTAssertTrue(broken.summary.contains("store not readable"), broken.summary)
    }

    func testLiveSlaveIsOK() throws {
        let r = check(try slave())
        XCTAssertEqual(r.state, .ok)
        XCTAssertEqual(
            r.line, "ORDERSYNC OK - slave till2 of shop1, link live, lag 0, outbox 0 | lag=0;100;1000 outbox=0;100; silence=0s;;60")
    }

    func testSlaveSilenceIsCriticalPastItsThresholdOnly() throws {
        let down: [String: Any] = ["ready": ["store": "ok", "link": "connecting"], "state": "degraded"]
        let link: [String: Any] = ["state": "waiting", "sinceSeconds": 1, "notLiveSeconds": 61, "lastError": "connection refused"]
        let r = check(try slave(down, link: link))
        XCTAssertEqual(r.state, .critical)
        XCTAssertTrue(
            r.summary.hasSuffix("not live to its master for 61 s (connecting, last error: connection refused) above 60 (critical) s"),
            r.summary)
        var recent = link
        recent["notLiveSeconds"] = 59
        XCTAssertEqual(check(try slave(down, link: recent)).state, .ok)
        XCTAssertEqual(check(try slave(down, link: link), silence: "30,90").state, .warning)
    }

    func testSlaveOutboxAndLagWarn() throws {
        let r = check(try slave(["outbox": 150]))
        XCTAssertEqual(r.state, .warning)
        XCTAssertEqual(r.summary, "slave till2 of shop1, link live, lag 0, outbox 150: outbox 150 above 100")
        XCTAssertEqual(check(try slave(["outbox": 150]), outbox: "100,120").state, .critical)
        XCTAssertEqual(check(try slave(["lag": 500, "masterSeq": 540])).state, .warning)
    }

    func testRefusedSlaveIsCritical() throws {
        let r = check(try slave(["pairing": "refused", "ready": ["store": "ok", "link": "pairing_required"]], link: ["state": "waiting"]))
        XCTAssertEqual(r.state, .critical)
        XCTAssertTrue(r.summary.contains("pair it again"), r.summary)
    }

    func testStatusOfAnOlderDaemonWithoutReadinessIsJudgedFromItsLink() throws {
        var o: [String: Any] = [:]
        o["ready"] = NSNull()
        o["state"] = NSNull()
        let r = check(try slave(o, link: ["state": "connecting", "sinceSeconds": 90, "notLiveSeconds": NSNull()]))
        XCTAssertEqual(r.state, .critical)
    }

    func testReadinessValues() {
        XCTAssertEqual(NodeReadiness.Link(state: .waiting, pairing: .paired), .connecting)
        XCTAssertEqual(NodeReadiness.Link(state: .connecting, pairing: .pairing), .connecting)
        XCTAssertEqual(NodeReadiness.Link(state: .idle, pairing: .paired), .searching)
        XCTAssertEqual(NodeReadiness.Link(state: .waiting, pairing: .refused), .pairingRequired)
        XCTAssertEqual(NodeReadiness.Published(avahi: .up, confirmedName: nil), .pending)
        XCTAssertEqual(NodeReadiness.Published(avahi: .up, confirmedName: "front"), .ok)
        XCTAssertEqual(NodeReadiness.Published(avahi: .down, confirmedName: "front"), .failed)
        XCTAssertEqual(NodeReadiness(store: .ok, published: .ok).state, .ready)
        XCTAssertEqual(NodeReadiness(store: .ok, published: .notUsed).state, .ready)
        XCTAssertEqual(NodeReadiness(store: .ok, published: .pending).state, .degraded)
        XCTAssertEqual(NodeReadiness(store: .ok, link: .connecting).state, .degraded)
        XCTAssertEqual(NodeReadiness(store: .failed, link: .live).state, .failed)
    }
}

extension HealthState {
    static var allExitCodes: [Int32] { [HealthState.ok, .warning, .critical, .unknown].map(\.rawValue) }
}
