import EventLoopIO
import Foundation
import JSON
import OrderSyncNode
import XCTest

/// `GET /metrics` from real nodes on loopback: the exposition holds the series after
/// operations, on the local API socket and on `--metrics-listen`.
final class NodeMetricsTests: XCTestCase {
    private var directories: [String] = []

    override func tearDown() {
        for d in directories { try? FileManager.default.removeItem(atPath: d) }
    }

    func temporaryDirectory() -> String {
        let d = NSTemporaryDirectory() + "ordersync-metrics-" + UUID().uuidString
        directories.append(d)
        return d
    }

    /// The value of the sample `series` (name and labels exactly as exposed), nil if absent.
    func sample(_ text: String, _ series: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    private func waitForMetrics(_ node: RunningNode, _ what: String, _ condition: (String) -> Bool) throws -> String {
        let deadline = Date().addingTimeInterval(10)
        while true {
            let text = try LocalAPIClient(dataDirectory: node.dataDirectory).metrics()
            if condition(text) { return text }
            if Date() > deadline {
                XCTFail("timed out waiting for \(what):\n\(text)")
                throw CancellationError()
            }
            usleep(20_000)
        }
    }

    func testTheExpositionHoldsTheSeriesAfterOperations() throws {
        let master = try RunningNode(role: .master, dataDirectory: temporaryDirectory(), name: "front")
        defer { master.stop() }
        let slave = try master.pairedSlave(dataDirectory: temporaryDirectory(), name: "till")
        defer { slave.stop() }
        let api = LocalAPIClient(dataDirectory: master.dataDirectory)
        let uuid = UUID().uuidString
        let created = try api.send(
            method: "POST", path: "/v1/orders",
            body: .object(JSONObject([("uuid", .string(uuid)), ("customerName", .string("Ann"))])))
        XCTAssertEqual(created.status, 201, "\(created.body)")
        let missing = try api.send(
            method: "PATCH", path: "/v1/orders/\(UUID().uuidString)", body: .object(JSONObject([("customerName", .string("Bo"))])))
        XCTAssertEqual(missing.status, 404)

        // The slave acknowledges the create: its lag on the master falls to 0 (and its acks say its
        // outbox is empty).
        let text = try waitForMetrics(master, "the slave's acknowledgement") {
            sample($0, #"ordersync_terminals_connected{protocol="ordersync"}"#) == 1
                && $0.split(separator: "\n").contains {
                    $0.hasPrefix("ordersync_terminal_lag_operations{") && $0.hasSuffix(#"name="till"} 0.0"#)
                }
        }
        XCTAssertEqual(sample(text, #"ordersync_operations_applied_total{op="create"}"#), 1, text)
        XCTAssertEqual(sample(text, #"ordersync_operations_applied_total{op="update"}"#), 0, text)
        XCTAssertEqual(sample(text, #"ordersync_operations_refused_total{code="not_found"}"#), 1, text)
        XCTAssertEqual(sample(text, #"ordersync_operations_refused_total{code="conflict"}"#), 0, text)
        XCTAssertEqual(sample(text, "ordersync_journal_seq"), 1, text)
        XCTAssertEqual(sample(text, #"ordersync_terminals_connected{protocol="storepos"}"#), 0, text)
        XCTAssertGreaterThanOrEqual(sample(text, "ordersync_commit_duration_seconds_count") ?? 0, 1, text)
        XCTAssertGreaterThan(sample(text, "ordersync_received_bytes_total") ?? 0, 0, text)
        XCTAssertGreaterThan(sample(text, "ordersync_sent_messages_total") ?? 0, 0, text)
        XCTAssertTrue(text.contains("# TYPE ordersync_commit_duration_seconds histogram"), text)
        XCTAssertTrue(text.contains("# HELP ordersync_operations_applied_total "), text)
        XCTAssertTrue(text.contains(#"ordersync_node_info{role="master",version="#), text)
        guard case .master(let status) = try master.status() else { return XCTFail("not a master") }
        let terminalId = try XCTUnwrap(status.terminals.first?.terminalId)
        XCTAssertEqual(sample(text, #"ordersync_terminal_lag_operations{terminal="\#(terminalId)",name="till"}"#), 0, text)
        let outbox = try waitForMetrics(master, "the slave's outbox") {
            sample($0, #"ordersync_terminal_outbox_operations{terminal="\#(terminalId)",name="till"}"#) == 0
        }
        XCTAssertTrue(outbox.contains("# TYPE ordersync_terminal_outbox_operations gauge"), outbox)

        let replica = try waitForMetrics(slave, "the slave's replica") { sample($0, "ordersync_journal_seq") == 1 }
        XCTAssertEqual(sample(replica, "ordersync_master_link_live"), 1, replica)
        XCTAssertEqual(sample(replica, "ordersync_outbox_operations"), 0, replica)
        XCTAssertEqual(sample(replica, "ordersync_lag_operations"), 0, replica)
        XCTAssertEqual(sample(replica, "ordersync_master_connects_total"), 1, replica)
        XCTAssertGreaterThanOrEqual(sample(replica, "ordersync_master_connect_attempts_total") ?? 0, 1, replica)
        XCTAssertGreaterThan(sample(replica, "ordersync_received_messages_total") ?? 0, 0, replica)
        XCTAssertGreaterThanOrEqual(sample(replica, "ordersync_commit_duration_seconds_count") ?? 0, 1, replica)
        XCTAssertNil(sample(replica, #"ordersync_operations_applied_total{op="create"}"#), "master series only")

        // A revoked terminal loses its lag series.
        let revoked = try api.send(method: "POST", path: "/v1/terminals/till/revoke")
        XCTAssertEqual(revoked.status, 200, "\(revoked.body)")
        let after = try waitForMetrics(master, "the revoked terminal's series to go") {
            !$0.contains("ordersync_terminal_lag_operations{") && !$0.contains("ordersync_terminal_outbox_operations{")
        }
        XCTAssertEqual(sample(after, #"ordersync_operations_applied_total{op="create"}"#), 1, "counters stay: \(after)")
    }

    func testMetricsListenServesOnlyGetMetricsOverTCP() throws {
        let port = try freePort()
        let master = try RunningNode(
            role: .master, dataDirectory: temporaryDirectory(), name: "front",
            configure: { $0.metricsListen = MetricsAddress(host: "127.0.0.1", port: port) })
        defer { master.stop() }
        let ok = try httpExchange(port: port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        XCTAssertTrue(ok.hasPrefix("HTTP/1.1 200 OK\r\n"), ok)
        XCTAssertTrue(ok.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"), ok)
        XCTAssertTrue(ok.contains("\nordersync_journal_seq 0.0\n"), ok)
        let other = try httpExchange(port: port, "GET /v1/orders HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        XCTAssertTrue(other.hasPrefix("HTTP/1.1 404 "), other)
        XCTAssertFalse(other.contains("orders\""), "the local API is not reachable here: \(other)")
        let post = try httpExchange(port: port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        XCTAssertTrue(post.hasPrefix("HTTP/1.1 405 "), post)
        XCTAssertTrue(post.contains("Allow: GET, HEAD\r\n"), post)
        let head = try httpExchange(port: port, "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        XCTAssertTrue(head.hasPrefix("HTTP/1.1 200 OK\r\n"), head)
        XCTAssertTrue(head.contains("Content-Length: "), head)
        XCTAssertTrue(head.hasSuffix("\r\n\r\n"), "HEAD has no body: \(head)")
        let body = try httpExchange(port: port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
        XCTAssertTrue(body.hasPrefix("HTTP/1.1 413 "), "no request body is taken: \(body)")
        // Two requests on one kept-alive connection are both answered, in order.
        let twice = try httpExchange(
            port: port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        XCTAssertEqual(twice.components(separatedBy: "HTTP/1.1 ").count, 3, twice)
        XCTAssertTrue(twice.contains("HTTP/1.1 404 "), twice)
        // The local API socket answers GET /metrics too.
        XCTAssertTrue(try LocalAPIClient(dataDirectory: master.dataDirectory).metrics().contains("ordersync_journal_seq 0.0"))
    }
}
