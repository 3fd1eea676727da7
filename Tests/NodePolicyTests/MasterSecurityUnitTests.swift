import Foundation
import HTTP1
import JSON
import SecureLink
import SyncCore
import XCTest

@testable import NodePolicy

/// The pure parts of the master's security: the pairing window, StorePOS ranges and the master's
/// API routes.
final class MasterSecurityUnitTests: XCTestCase {
    private let code = try! PairingCode(bytes: Array(1...10))
    private let other = try! PairingCode(bytes: Array(11...20))

    func testPairingWindowExpiresAndIsClampedToTenMinutes() throws {
        var w = PairingWindows()
        XCTAssertTrue(w.openWindows(now: 0).isEmpty)
        let open = try XCTUnwrap(w.open(code: code, name: "till-3", validForSeconds: 3600, now: 1_000))
        XCTAssertEqual(open.expiresAtMillis, 601_000, "at most 600 s")
        XCTAssertEqual(w.openWindows(now: 600_999).map(\.code), [code])
        XCTAssertEqual(w.nextExpiryMillis, 601_000)
        XCTAssertTrue(w.openWindows(now: 601_000).isEmpty)
        XCTAssertEqual(w.status(now: 601_000).state, .expired)
        XCTAssertNil(w.complete(code: code, terminal: "X", now: 601_001), "an expired code pairs nothing")
        XCTAssertEqual(w.open(code: code, name: nil, validForSeconds: 0, now: 0)?.expiresAtMillis, 1_000, "at least 1 s")
    }

    func testSeveralCodesAreOpenAtOnceEachSingleUseAndCancellable() throws {
        var w = PairingWindows()
        let codes = (0..<PairingWindows.maxOpen).map { i in try! PairingCode(bytes: Array(repeating: UInt8(i), count: 10)) }
        for (i, c) in codes.enumerated() { XCTAssertNotNil(w.open(code: c, name: "till-\(i)", validForSeconds: 600, now: Int64(i))) }
        XCTAssertNil(w.open(code: code, name: nil, validForSeconds: 600, now: 10), "at most \(PairingWindows.maxOpen) open")
        XCTAssertEqual(w.status(now: 10).openCodes, PairingWindows.maxOpen)
        XCTAssertEqual(w.complete(code: codes[2], terminal: "ABCD", now: 11)?.name, "till-2")
        XCTAssertNil(w.complete(code: codes[2], terminal: "EFGH", now: 12), "single use")
        XCTAssertEqual(w.openWindows(now: 12).count, PairingWindows.maxOpen - 1, "the others stay open")
        // Cancelled by its code as typed (lower case, no dashes) or by its name.
        XCTAssertEqual(w.cancel(codes[0].description.lowercased().replacingOccurrences(of: "-", with: ""), now: 13).map(\.code), [codes[0]])
        XCTAssertEqual(w.cancel("till-1", now: 13).map(\.code), [codes[1]])
        XCTAssertEqual(w.cancel("till-1", now: 13), [], "cancelled once")
        XCTAssertNil(w.complete(code: codes[1], terminal: "X", now: 14), "a cancelled code pairs nothing")
        XCTAssertEqual(w.closeAll().count, PairingWindows.maxOpen - 3)
        XCTAssertTrue(w.openWindows(now: 15).isEmpty)
        XCTAssertEqual(w.status(now: 15).state, .closed)
    }

    func testWrongCodesLockOutTheirAddressOnly() throws {
        var w = PairingWindows()
        w.open(code: code, name: nil, validForSeconds: 600, now: 0)
        for left in (1...4).reversed() {
            XCTAssertEqual(w.recordFailure(address: "10.0.0.66", now: 1), .counted(remaining: left))
        }
        XCTAssertFalse(w.isLockedOut("10.0.0.66", now: 1))
        let until = 2 + PairingWindows.lockoutMillis
        XCTAssertEqual(w.recordFailure(address: "10.0.0.66", now: 2), .lockedOut(untilMillis: until))
        XCTAssertTrue(w.isLockedOut("10.0.0.66", now: 3))
        XCTAssertEqual(
            w.recordFailure(address: "10.0.0.66", now: 4), .lockedOut(untilMillis: until), "a try while locked out does not extend it")
        XCTAssertFalse(w.isLockedOut("10.0.0.7", now: 3), "another address is not locked out")
        XCTAssertEqual(w.openWindows(now: 5).map(\.code), [code], "wrong codes never close a code")
        XCTAssertEqual(w.status(now: 5).lockedOutAddresses, 1)
        XCTAssertEqual(w.complete(code: code, terminal: "ABCD", now: 6)?.code, code)
        // The lockout ends; old wrong tries are forgotten.
        XCTAssertFalse(w.isLockedOut("10.0.0.66", now: until))
        XCTAssertEqual(w.recordFailure(address: "10.0.0.66", now: until), .counted(remaining: 4))
        XCTAssertEqual(w.recordFailure(address: "10.0.0.9", now: 0), .counted(remaining: 4))
        XCTAssertEqual(
            w.recordFailure(address: "10.0.0.9", now: PairingWindows.lockoutMillis + 1), .counted(remaining: 4),
            "a wrong try older than the lockout is forgotten")
    }

    func testTheTriesOfAtMostSoManyAddressesAreKept() {
        var w = PairingWindows()
        for i in 0..<(PairingWindows.maxTrackedAddresses + 10) {
            _ = w.recordFailure(address: "10.1.\(i / 256).\(i % 256)", now: Int64(i))
        }
        XCTAssertLessThanOrEqual(w.tries.count, PairingWindows.maxTrackedAddresses)
        XCTAssertNil(w.tries["10.1.0.0"], "the oldest are forgotten first")
    }

    func testStorePOSRanges() throws {
        let lan = try XCTUnwrap(AddressRange(parsing: "192.168.1.0/24"))
        XCTAssertTrue(lan.contains(host: "192.168.1.77"))
        XCTAssertTrue(lan.contains(host: "::ffff:192.168.1.77"))
        XCTAssertFalse(lan.contains(host: "192.168.2.1"))
        XCTAssertFalse(lan.contains(host: "fd00::1"))
        XCTAssertEqual(lan.description, "192.168.1.0/24")
        let six = try XCTUnwrap(AddressRange(parsing: "fd00:ab::/32"))
        XCTAssertTrue(six.contains(host: "fd00:ab:1::9"))
        XCTAssertFalse(six.contains(host: "fd00:ac::9"))
        XCTAssertTrue(try XCTUnwrap(AddressRange(parsing: "10.0.0.3")).contains(host: "10.0.0.3"))
        XCTAssertTrue(try XCTUnwrap(AddressRange(parsing: "0.0.0.0/0")).contains(host: "8.8.8.8"))
        XCTAssertEqual(AddressRange(parsing: "10.1.2.3/12")?.description, "10.0.0.0/12")
        for bad in ["", "10.0.0.0/33", "fd00::/129", "shop", "10.0.0.0/", "10.0.0.0/+8", "10.0.0/8"] {
            XCTAssertNil(AddressRange(parsing: bad), bad)
        }
    }

    private func route(_ method: String, _ path: String, _ body: String = "") -> Result<MasterAPIRoute, LocalAPIRoute.Failure>? {
        MasterAPIRoute.decode(method: method, path: path, body: Array(body.utf8))
    }

    func testMasterRoutes() throws {
        XCTAssertEqual(try route("POST", "/v1/pairing")?.get(), .openPairing(name: nil, validForSeconds: 600))
        XCTAssertEqual(
            try route("POST", "/v1/pairing", #"{"name":"till-3","validForSeconds":60}"#)?.get(),
            .openPairing(name: "till-3", validForSeconds: 60))
        XCTAssertEqual(try route("DELETE", "/v1/pairing")?.get(), .closePairing)
        XCTAssertEqual(try route("GET", "/v1/pairing")?.get(), .pairingCodes)
        XCTAssertEqual(try route("DELETE", "/v1/pairing/till-3")?.get(), .cancelPairing("till-3"))
        guard case .failure(let refused)? = route("POST", "/v1/pairing/till-3") else { return XCTFail("POST on a code is refused") }
        XCTAssertEqual(refused.status, 405)
        XCTAssertEqual(try route("GET", "/v1/terminals")?.get(), .terminals)
        XCTAssertEqual(try route("POST", "/v1/terminals/till (2)/revoke")?.get(), .revokeTerminal("till (2)"))
        XCTAssertEqual(try route("POST", "/v1/key/rotate")?.get(), .rotateKey)
        // A name holding '/' travels as %2F and stays one segment (the server splits the path
        // before decoding each segment).
        let slashed = try HTTPRequest(method: "POST", target: "/v1/terminals/bar%2F2/revoke")
        XCTAssertEqual(slashed.pathSegments, ["v1", "terminals", "bar/2", "revoke"])
        XCTAssertEqual(
            try MasterAPIRoute.decode(method: "POST", path: slashed.path, segments: slashed.pathSegments, body: [])?.get(),
            .revokeTerminal("bar/2"))
        let token = try HTTPRequest(method: "POST", target: "/v1/dashboard/tokens/a%2Fb%20c/revoke")
        XCTAssertEqual(
            try MasterAPIRoute.decode(method: "POST", path: token.path, segments: token.pathSegments, body: [])?.get(),
            .revokeDashboardToken("a/b c"))
        for (method, path, body, status) in [
            ("POST", "/v1/pairing", #"{"validForSeconds":601}"#, 400), ("POST", "/v1/pairing", #"{"validForSeconds":0}"#, 400),
            ("POST", "/v1/pairing", #"{"name":""}"#, 400), ("POST", "/v1/pairing", #"{"name":7}"#, 400),
            ("POST", "/v1/pairing", "[", 400), ("POST", "/v1/pairing", "[]", 400), ("PATCH", "/v1/pairing", "", 405),
            ("DELETE", "/v1/terminals", "", 405), ("GET", "/v1/terminals/x/revoke", "", 405), ("GET", "/v1/key/rotate", "", 405),
            ("POST", "/v1/key", "", 404), ("POST", "/v1/terminals/x", "", 404),
        ] {
            guard case .failure(let f)? = route(method, path, body) else { return XCTFail("\(method) \(path) \(body) accepted") }
            XCTAssertEqual(f.status, status, "\(method) \(path) \(body)")
        }
        XCTAssertNil(route("GET", "/v1/status"), "other routes are the local API's")
        XCTAssertNil(route("GET", "/v1/orders"))
    }
}
