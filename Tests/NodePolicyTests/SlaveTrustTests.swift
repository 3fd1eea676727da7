import SecureLink
import XCTest

@testable import NodePolicy

/// The rules a `--pair` code follows at start, and the trust file's code digest.
final class SlaveTrustTests: XCTestCase {
    private let masterKey = (0..<32).map { _ in UInt8.random(in: 0...255) }
    private let code = try! PairingCode(bytes: Array(0..<10))

    private func trust() -> MasterTrust {
        MasterTrust(
            store: "shop1", publicKey: masterKey, pairedAtMillis: 1_700_000_000_000,
            codeDigest: MasterTrust.codeDigest(ofCodeBytes: code.bytes))
    }

    func testCodeDigestIsTheHexSHA256OfTheCodeBytes() {
        // Python: hashlib.sha256(bytes(range(10))).hexdigest()
        XCTAssertEqual(
            MasterTrust.codeDigest(ofCodeBytes: Array(0..<10)), "1f825aa2f0020ef7cf91dfa30da4668d791c5d4824fc8e41354b89ec05795ab3")
    }

    func testNoTrustAndNoCodeIsNoStart() {
        XCTAssertNil(SlaveTrust.starting(trust: nil, code: nil))
    }

    func testACodeWithoutTrustPairs() throws {
        let (state, use) = try XCTUnwrap(SlaveTrust.starting(trust: nil, code: code))
        XCTAssertEqual(state, .pairing(code, previous: nil))
        XCTAssertEqual(use, .none)
        XCTAssertEqual(state.trustedIds, [])
        XCTAssertEqual(state.status.masterId, nil)
        XCTAssertEqual(state.status.pairing, .pairing)
    }

    func testTheSameCodeAgainIsIgnoredAndANewCodePairsAnew() throws {
        let again = try PairingCode(parsing: code.description.lowercased())
        let (same, sameUse) = try XCTUnwrap(SlaveTrust.starting(trust: trust(), code: again))
        XCTAssertEqual(same, .paired(trust(), refused: false))
        XCTAssertEqual(sameUse, .ignoredAlreadyPaired)

        let other = try PairingCode(bytes: Array(1...10))
        let (anew, anewUse) = try XCTUnwrap(SlaveTrust.starting(trust: trust(), code: other))
        XCTAssertEqual(anew, .pairing(other, previous: trust()), "the old trust stays until pairing succeeds")
        XCTAssertEqual(anewUse, .pairAnew)
        XCTAssertEqual(anew.status.masterId, trust().master)
        XCTAssertEqual(anew.trustedIds, [], "pairing anew may meet a master with a new key")

        let (plain, plainUse) = try XCTUnwrap(SlaveTrust.starting(trust: trust(), code: nil))
        XCTAssertEqual(plain, .paired(trust(), refused: false))
        XCTAssertEqual(plainUse, .none)
        XCTAssertEqual(plain.trustedIds, [trust().master])
    }
}
