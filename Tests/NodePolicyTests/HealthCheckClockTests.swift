import Foundation
import XCTest

@testable import NodePolicy

/// Clock sense in `ordersync check` and `ordersync status` (Docs/PROTOCOL.md 4.8): a clock past
/// the bound is a WARNING naming the till and the offset; one within it says nothing.
extension HealthCheckTests {
    private func clock(_ offsetMillis: Int, skewed: Bool) -> [String: Any] {
        ["offsetMillis": offsetMillis, "skewed": skewed, "boundMillis": 30_000, "roundTripMillis": 8]
    }

    func testAConnectedTillsClockPastTheBoundIsAWarning() throws {
        var off = peer(lag: 0)
        off["clock"] = clock(600_001, skewed: true)
        var fine = peer(lag: 0)
        fine["terminal"] = "bar"
        fine["clock"] = clock(-400, skewed: false)
        let r = check(try master(["peers": [off, fine]]))
        XCTAssertEqual(r.state, .warning)
        XCTAssertEqual(r.summary, "master shop1, 2 terminals, max lag 0: clock of till 10.0 min ahead (bound 30 s)")
        XCTAssertEqual(check(try master(["peers": [fine]])).state, .ok)
        guard case .master(let m) = try master(["peers": [off, fine]]) else { return XCTFail() }
        XCTAssertEqual(
            StatusText.clockLines(m),
            ["clock:     till 10.0 min ahead of the master (over the 30 s bound: set its time, timedatectl set-ntp true)"])
    }

    func testASlavesOwnClockPastTheBoundIsAWarning() throws {
        let r = check(try slave(["clock": clock(-45_500, skewed: true)]))
        XCTAssertEqual(r.state, .warning)
        XCTAssertTrue(r.summary.hasSuffix(": clock 45.5 s behind the master (bound 30 s)"), r.summary)
        XCTAssertEqual(check(try slave(["clock": clock(200, skewed: false)])).state, .ok)
        guard case .slave(let s) = try slave(["clock": clock(200, skewed: false)]) else { return XCTFail() }
        XCTAssertEqual(StatusText.clockLines(s), ["clock:     in step with the master"])
    }
}
