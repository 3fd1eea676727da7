import XCTest

@testable import NodePolicy

/// `ordersync status` as text shows automatic failover (`autoFailover` in the JSON) when the
/// node runs with `--auto-failover`, and nothing without it.
final class StatusTextAutoFailoverTests: XCTestCase {
    private func master(_ auto: AutoFailoverStatus?) -> NodeStatus {
        var m = MasterStatus(
            version: "0.1.0", store: "shop1", name: "front", nodeId: "N", epoch: "E", seq: 42, orders: 3, port: 7420,
            dataDir: "/d", serviceType: "_pos._tcp", serviceName: "front", avahi: .up, uptimeSeconds: 10, peers: [],
            terminals: [], tombstones: 0, pairing: PairingWindowStatus(state: .closed, openCodes: 0), pairedTerminals: 2)
        m.autoFailover = auto
        return .master(m)
    }

    func testAMasterShowsItsLeaseAndNothingWithoutTheFlag() {
        let held = AutoFailoverStatus(state: .held, leaseMillis: 3_000, heard: 2, majority: 2)
        let text = StatusText.render(master(held), nowMillis: 0)
        XCTAssertTrue(text.contains("\nauto:      held (2 voters heard, majority 2; lease 3000 ms)"), text)
        XCTAssertFalse(StatusText.render(master(nil), nowMillis: 0).contains("auto:"))
    }

    func testASlaveShowsHowLongItsMasterIsSilentAndWhenItStands() {
        let watching = AutoFailoverStatus(state: .watching, leaseMillis: 3_000, silentMillis: 120, standAfterMillis: 3_600)
        XCTAssertEqual(StatusText.autoFailoverLine(watching), "auto:      watching (master silent 120 ms; stands after 3600 ms)")
        XCTAssertEqual(
            StatusText.autoFailoverLine(AutoFailoverStatus(state: .standing, leaseMillis: 3_000)), "auto:      standing (a candidacy runs)")
        XCTAssertEqual(
            StatusText.autoFailoverLine(AutoFailoverStatus(state: .off, leaseMillis: 3_000)),
            "auto:      off (fewer than 3 voters, or this terminal does not vote: promote by hand)")
        XCTAssertNil(StatusText.autoFailoverLine(nil))
    }
}
