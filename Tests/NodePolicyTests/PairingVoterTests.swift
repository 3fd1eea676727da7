import SecureLink
import XCTest

@testable import NodePolicy

/// `POST /v1/pairing` with `"voter": false` (`ordersync pair --handheld`): the window pairs a
/// terminal that does not vote in a promotion.
final class PairingVoterTests: XCTestCase {
    private func route(_ body: String) -> Result<MasterAPIRoute, LocalAPIRoute.Failure>? {
        MasterAPIRoute.decode(method: "POST", path: "/v1/pairing", body: Array(body.utf8))
    }

    func testTheVoterMemberIsReadStrictly() throws {
        XCTAssertEqual(try route("")?.get(), .openPairing(name: nil, validForSeconds: 600, voter: true))
        XCTAssertEqual(try route(#"{"voter":true}"#)?.get(), .openPairing(name: nil, validForSeconds: 600, voter: true))
        XCTAssertEqual(
            try route(#"{"name":"hh-1","voter":false}"#)?.get(), .openPairing(name: "hh-1", validForSeconds: 600, voter: false))
        for bad in [#"{"voter":"no"}"#, #"{"voter":0}"#] {
            guard case .failure(let f)? = route(bad) else { return XCTFail("accepted \(bad)") }
            XCTAssertEqual(f.status, 400)
            XCTAssertEqual(f.code, "invalid_field")
        }
    }

    func testANameOverSixtyThreeBytesIsTooLargeNotInvalid() throws {
        // 20 four-byte characters: within any character bound the document could state, 80 bytes.
        let long = String(repeating: "\u{1D54B}", count: 20)
        for path in ["/v1/pairing", "/v1/dashboard/tokens"] {
            let body = Array(#"{"name":"\#(long)"}"#.utf8)
            guard case .failure(let f)? = MasterAPIRoute.decode(method: "POST", path: path, body: body) else {
                return XCTFail("accepted an 80-byte name on \(path)")
            }
            XCTAssertEqual(f.status, 413, path)
            XCTAssertEqual(f.code, "too_large", path)
        }
        let fits = String(repeating: "\u{1D54B}", count: 15) // 60 bytes
        XCTAssertEqual(try route(#"{"name":"\#(fits)"}"#)?.get(), .openPairing(name: fits, validForSeconds: 600, voter: true))
        guard case .failure(let empty)? = route(#"{"name":""}"#) else { return XCTFail("accepted an empty name") }
        XCTAssertEqual(empty.status, 400)
    }

    func testAWindowKeepsItsVoterFlag() throws {
        var windows = PairingWindows()
        let code = PairingCode.generate()
        let handheld = try XCTUnwrap(windows.open(code: code, name: "hh", validForSeconds: 60, now: 0, voter: false))
        XCTAssertFalse(handheld.voter)
        XCTAssertEqual(windows.complete(code: code, terminal: "X", now: 1)?.voter, false)
        XCTAssertEqual(windows.open(code: PairingCode.generate(), name: nil, validForSeconds: 60, now: 2)?.voter, true)
    }
}
