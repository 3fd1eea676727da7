import Foundation
import HTTP1
import JSON
import OrderStore
import SecureLink
import SyncCore
import XCTest

@testable import OrderSyncNode

/// The pure parts of the master's security: the pairing window, StorePOS ranges, the master's
/// API routes and the engine's rule that the journal names the authenticated terminal.
final class MasterSecurityUnitTests: XCTestCase {
    private let code = try! PairingCode(bytes: Array(1...10))
    private let other = try! PairingCode(bytes: Array(11...20))

    func testPairingWindowExpiresAndIsClampedToTenMinutes() {
        var w = PairingWindow()
        XCTAssertNil(w.openWindow(now: 0))
        let open = w.open(code: code, name: "till-3", validForSeconds: 3600, now: 1_000)
        XCTAssertEqual(open.expiresAtMillis, 601_000, "at most 600 s")
        XCTAssertEqual(w.openWindow(now: 600_999)?.code, code)
        XCTAssertNil(w.openWindow(now: 601_000))
        XCTAssertEqual(w.state, .expired)
        XCTAssertNil(w.complete(code: code, terminal: "X", now: 601_001), "an expired code pairs nothing")
        XCTAssertEqual(w.open(code: code, name: nil, validForSeconds: 0, now: 0).expiresAtMillis, 1_000, "at least 1 s")
    }

    func testFiveWrongCodesCloseTheWindow() {
        var w = PairingWindow()
        w.open(code: code, name: nil, validForSeconds: 600, now: 0)
        XCTAssertEqual(w.recordFailure(code: other, now: 1), .ignored, "a failure on a replaced window does not count")
        for left in (1...4).reversed() { XCTAssertEqual(w.recordFailure(code: code, now: 1), .counted(remaining: left)) }
        XCTAssertEqual(w.status.failedTries, 4)
        XCTAssertEqual(w.recordFailure(code: code, now: 1), .exhausted)
        XCTAssertEqual(w.state, .exhausted)
        XCTAssertNil(w.complete(code: code, terminal: "X", now: 2), "the right code after five wrong ones pairs nothing")
        XCTAssertEqual(w.status.state, .exhausted)
    }

    func testAWindowPairsOnceAndOpeningAgainReplacesIt() {
        var w = PairingWindow()
        w.open(code: code, name: "till-3", validForSeconds: 600, now: 0)
        w.open(code: other, name: nil, validForSeconds: 600, now: 0)
        XCTAssertNil(w.complete(code: code, terminal: "X", now: 1), "the replaced code is dead")
        XCTAssertEqual(w.complete(code: other, terminal: "ABCD", now: 1)?.code, other)
        XCTAssertEqual(w.state, .used(terminal: "ABCD"))
        XCTAssertNil(w.complete(code: other, terminal: "EFGH", now: 2), "single use")
        w.open(code: code, name: nil, validForSeconds: 600, now: 3)
        XCTAssertTrue(w.close())
        XCTAssertFalse(w.close())
        XCTAssertNil(w.openWindow(now: 4))
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
            ("POST", "/v1/pairing", "[", 400), ("POST", "/v1/pairing", "[]", 400), ("GET", "/v1/pairing", "", 405),
            ("DELETE", "/v1/terminals", "", 405), ("GET", "/v1/terminals/x/revoke", "", 405), ("GET", "/v1/key/rotate", "", 405),
            ("POST", "/v1/key", "", 404), ("POST", "/v1/terminals/x", "", 404),
        ] {
            guard case .failure(let f)? = route(method, path, body) else { return XCTFail("\(method) \(path) \(body) accepted") }
            XCTAssertEqual(f.status, status, "\(method) \(path) \(body)")
        }
        XCTAssertNil(route("GET", "/v1/status"), "other routes are the local API's")
        XCTAssertNil(route("GET", "/v1/orders"))
    }

    func testTheJournalNamesTheAuthenticatedTerminalNotTheHello() throws {
        let db = try OrderDatabase.inMemory()
        let master = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e")
        let till = AuthenticatedTerminal(nodeId: "ABCD-EFGH-IJKL-MNOP-QRST-UVWX-YZ23-4567", name: "till-2")
        XCTAssertEqual(master.peerConnected(1, address: "10.0.0.3:5555", terminal: till), [])
        let hello = master.received(
            HelloMessage(terminalId: "forged", terminalName: "front (local API)", store: "s", lastSeq: 0, epoch: "e").encoded(),
            from: 1, now: 1)
        XCTAssertTrue(
            hello.contains {
                if case .log(let l) = $0 { return l.event == "peer.hello_mismatch" && l.level == .debug }; return false
            })
        XCTAssertEqual(master.peers[1]?.terminalName, "till-2")
        XCTAssertEqual(master.peers[1]?.terminalId, till.nodeId)
        let order = JSONValue.object(JSONObject([("uuid", .string(UUID().uuidString)), ("customerName", .string("A"))]))
        _ = master.received(OperationMessage(operation: .create, orders: [order], opId: "op-1").encoded(), from: 1, now: 2)
        XCTAssertEqual(try db.journal(since: 0, orderUUID: nil, limit: 10).map(\.origin), ["till-2 [ABCD-EFGH]@10.0.0.3:5555"])
        XCTAssertEqual(try db.knownTerminals().map(\.id), [till.nodeId], "acks are kept under the authenticated id")

        // A StorePOS terminal is its address, and may not say hello.
        _ = master.peerConnected(2, address: "10.0.0.9:1", terminal: nil)
        XCTAssertNil(master.peers[2]?.terminalName)
        XCTAssertEqual(master.peers[2]?.origin, "10.0.0.9:1")

        // Revoked: its link closes, and it is not recorded again when the link ends.
        try db.saveTerminal(KnownTerminal(id: till.nodeId, name: "till-2", address: "x", ackedSeq: 0, lastSeenMillis: 1))
        XCTAssertEqual(master.revoked(terminal: till.nodeId), [.close(peer: 1, code: 1008, reason: "revoked")])
        try db.forgetTerminals(lastSeenBefore: .max)
        _ = master.peerDisconnected(1, now: 5)
        XCTAssertEqual(try db.knownTerminals(), [])
    }
}
