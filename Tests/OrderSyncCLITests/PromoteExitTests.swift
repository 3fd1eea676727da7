import NodePolicy
import XCTest

@testable import ordersync

/// `ordersync promote` exits 1 for every refusal of a promotion (Docs/OPERATIONS.md, "When the
/// master dies"; Docs/API.md, `POST /v1/promote`), whichever part of the promotion refused it.
final class PromoteExitTests: XCTestCase {
    func testEveryRefusalOfAPromotionExitsOne() {
        // The codes Docs/API.md lists for `POST /v1/promote`.
        for code in ["no_majority", "fetch_failed", "tail_unavailable", "rival_candidate", "not_a_slave", "no_standby_copy"] {
            XCTAssertEqual(PromoteCommand.exitStatus(refusal: code, httpStatus: 409), .failure, code)
        }
        for code in PromoteRefusal.Code.allCases {
            XCTAssertEqual(PromoteCommand.exitStatus(refusal: code.rawValue, httpStatus: code == .promoting ? 503 : 409), .failure)
        }
    }

    func testWhatTheLocalAPIRefusedKeepsItsExitStatus() {
        XCTAssertEqual(PromoteCommand.exitStatus(refusal: "rate_limited", httpStatus: 429), .tryAgain)
        XCTAssertEqual(PromoteCommand.exitStatus(refusal: "no_route", httpStatus: 404), .protocolError)
        XCTAssertEqual(PromoteCommand.exitStatus(refusal: "", httpStatus: 500), .software)
    }
}
