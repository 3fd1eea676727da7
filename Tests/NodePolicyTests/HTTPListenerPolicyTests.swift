import XCTest

@testable import NodePolicy

/// The HTTP listeners' admission (a cap in all and per address) and each connection's deadline.
final class HTTPListenerPolicyTests: XCTestCase {
    private let limits = HTTPListenerLimits(
        maxConnections: 10, maxConnectionsPerAddress: 3, headTimeout: .seconds(5), idleTimeout: .seconds(30))

    func testOneAddressHoldsOnlyItsShareAndAFloodNeverLocksOutAnother() {
        var admission = HTTPAdmission(limits: limits)
        var admitted = 0
        for _ in 0..<100 where admission.admit("10.0.0.2") == .admit { admitted += 1 }
        XCTAssertEqual(admitted, 3)
        XCTAssertEqual(admission.admit("10.0.0.2"), .addressFull(open: 3))
        XCTAssertEqual(admission.admit("10.0.0.3"), .admit, "another address still gets in")
        XCTAssertEqual(admission.total, 4)
        admission.release("10.0.0.2")
        XCTAssertEqual(admission.open(from: "10.0.0.2"), 2)
        XCTAssertEqual(admission.admit("10.0.0.2"), .admit, "a closed connection frees its address's slot")
    }

    func testTheListenerCapHoldsAcrossAddresses() {
        var admission = HTTPAdmission(limits: limits)
        for host in 1...4 {
            for _ in 0..<3 { _ = admission.admit("10.0.0.\(host)") }
        }
        XCTAssertEqual(admission.total, 10)
        XCTAssertEqual(admission.admit("10.0.0.9"), .listenerFull(open: 10))
        XCTAssertEqual(admission.admit("10.0.0.1"), .addressFull(open: 3), "the address's own cap is named first")
        admission.release("10.0.0.4")
        XCTAssertEqual(admission.admit("10.0.0.9"), .admit)
        XCTAssertEqual(admission.open(from: "10.0.0.4"), 0)
    }

    func testARequestHasTheHeadDeadlineFromTheStartAndTricklingBuysNoTime() {
        var deadline = HTTPConnectionDeadline(limits: limits)
        XCTAssertEqual(deadline.opened(), .arm(.seconds(5)))
        XCTAssertEqual(deadline.phase, .request)
        XCTAssertEqual(deadline.received(), .keep, "more bytes of the same request keep its deadline")
        XCTAssertEqual(deadline.received(), .keep)
    }

    func testKeptAliveConnectionsIdleThenCountAgainFromTheNextRequestsFirstByte() {
        var deadline = HTTPConnectionDeadline(limits: limits)
        _ = deadline.opened()
        XCTAssertEqual(deadline.answered(), .arm(.seconds(30)))
        XCTAssertEqual(deadline.phase, .idle)
        XCTAssertEqual(deadline.received(), .arm(.seconds(5)))
        XCTAssertEqual(deadline.phase, .request)
        XCTAssertEqual(deadline.received(), .keep)
    }

    func testAStreamHasNoDeadline() {
        var deadline = HTTPConnectionDeadline(limits: limits)
        _ = deadline.opened()
        XCTAssertEqual(deadline.streaming(), .disarm)
        XCTAssertEqual(deadline.phase, .streaming)
        XCTAssertEqual(deadline.received(), .keep)
    }

    func testTheDefaultsLeaveABrowserRoomAndNeedSeveralAddressesToFillTheListener() {
        let standard = HTTPListenerLimits.standard
        XCTAssertGreaterThanOrEqual(standard.maxConnectionsPerAddress, 6, "a browser opens up to 6 connections to one host")
        XCTAssertGreaterThanOrEqual(standard.maxConnections / standard.maxConnectionsPerAddress, 8)
        XCTAssertLessThanOrEqual(standard.headTimeout, .seconds(10))
    }
}
