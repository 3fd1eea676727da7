import Foundation
import JSON
import NodePolicy
import OrderSyncNode
import XCTest

/// Health that sees every till, from real nodes on loopback: the master lists a paired
/// terminal that left as away (how long, how far behind) and its per-terminal series say so;
/// the slave cut off from its master says its lag is unknown; the `process_*` series are there.
extension NodeMetricsTests {
    func testAPairedTerminalThatLeftIsAwayBehindAndItsSeriesSaySo() throws {
        let master = try RunningNode(role: .master, dataDirectory: temporaryDirectory(), name: "front")
        defer { master.stop() }
        let slave = try master.pairedSlave(dataDirectory: temporaryDirectory(), name: "till")
        let id = try waitForStatus(master, "the till to be connected and acked") { status -> String? in
            guard case .master(let m) = status, m.away == [], let p = m.peers.first, p.lag == 0 else { return nil }
            return p.terminalId
        }
        let metrics = LocalAPIClient(dataDirectory: master.dataDirectory)
        let live = try metrics.metrics()
        XCTAssertEqual(sample(live, #"ordersync_terminal_connected{terminal="\#(id)",name="till"}"#), 1, live)
        let seenLive = try XCTUnwrap(sample(live, #"ordersync_terminal_last_seen_seconds{terminal="\#(id)",name="till"}"#), live)
        XCTAssertEqual(seenLive, Date().timeIntervalSince1970, accuracy: 5)
        XCTAssertEqual(sample(live, "ordersync_ready"), 1, live)
        XCTAssertEqual(sample(live, "ordersync_store_ready"), 1, live)
        XCTAssertEqual(sample(live, "ordersync_rival_masters"), 0, live)
        XCTAssertGreaterThan(sample(live, "process_resident_memory_bytes") ?? 0, 1_000_000, live)
        XCTAssertGreaterThan(sample(live, "process_open_fds") ?? 0, 3, live)
        XCTAssertGreaterThan(sample(live, "process_cpu_seconds_total") ?? 0, 0, live)
        XCTAssertTrue(live.contains("# TYPE process_cpu_seconds_total counter"), live)
        let replica = try LocalAPIClient(dataDirectory: slave.dataDirectory).metrics()
        XCTAssertEqual(sample(replica, "ordersync_lag_operations"), 0, replica)
        XCTAssertNil(sample(replica, "ordersync_published"), "master series only: \(replica)")

        slave.stop()
        let api = LocalAPIClient(dataDirectory: master.dataDirectory)
        for i in 0..<3 {
            let created = try api.send(
                method: "POST", path: "/v1/orders",
                body: .object(JSONObject([("uuid", .string(UUID().uuidString)), ("customerName", .string("guest \(i)"))])))
            XCTAssertEqual(created.status, 201, "\(created.body)")
        }
        let away = try waitForStatus(master, "the till to be away, 3 behind") { status -> MasterStatus.AwayTerminal? in
            guard case .master(let m) = status, let a = m.away?.first, a.behind == 3 else { return nil }
            return a
        }
        XCTAssertEqual(away.terminalId, id)
        XCTAssertEqual(away.name, "till")
        XCTAssertEqual(away.ackedSeq, 0)
        XCTAssertLessThan(away.awaySeconds, 10)
        let gone = try metrics.metrics()
        XCTAssertEqual(sample(gone, #"ordersync_terminal_connected{terminal="\#(id)",name="till"}"#), 0, gone)
        let seenGone = try XCTUnwrap(sample(gone, #"ordersync_terminal_last_seen_seconds{terminal="\#(id)",name="till"}"#), gone)
        XCTAssertEqual(seenGone, Date().timeIntervalSince1970, accuracy: 10)
        XCTAssertEqual(sample(gone, #"ordersync_terminal_lag_operations{terminal="\#(id)",name="till"}"#), 3, gone)
        let text = StatusText.render(try master.status(), nowMillis: Int64(Date().timeIntervalSince1970 * 1000))
        XCTAssertTrue(text.contains("  behind 3"), text)
    }

    func testASlaveCutOffSaysItsLagIsUnknown() throws {
        let master = try RunningNode(role: .master, dataDirectory: temporaryDirectory(), name: "front")
        let slave = try master.pairedSlave(dataDirectory: temporaryDirectory(), name: "till")
        defer { slave.stop() }
        _ = try waitForStatus(slave, "the slave to go live") { status -> Bool? in
            guard case .slave(let s) = status, s.master.state == .live, s.lag == 0 else { return nil }
            return true
        }
        master.stop()
        let cut = try waitForStatus(slave, "the slave to notice") { status -> SlaveStatus? in
            guard case .slave(let s) = status, s.master.state != .live else { return nil }
            return s
        }
        XCTAssertNil(cut.lag, "never 0 while it cannot know")
        let replica = try LocalAPIClient(dataDirectory: slave.dataDirectory).metrics()
        let lag = try XCTUnwrap(sample(replica, "ordersync_lag_operations"), replica)
        XCTAssertTrue(lag.isNaN, replica)
    }
}
