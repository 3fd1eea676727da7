import Foundation
import Glibc
import NodePolicy
import Noise
import SecureLink
import XCTest

@testable import OrderSyncNode

/// The slave's trust file: written 0600 whatever the umask, read back, refused when others may
/// read it, when damaged or altered; a slave neither paired nor given a code refused at start,
/// the credential of each trust and what an ended link means (the pure rules: SlaveTrustTests).
final class MasterTrustTests: XCTestCase {
    private func temporaryDirectory() throws -> String {
        let d = NSTemporaryDirectory() + "ordersync-trust-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: d) }
        return d
    }

    private let masterKey = NoiseKeyPair.generate().publicKey
    private let code = try! PairingCode(bytes: Array(0..<10))

    private func trust() -> MasterTrust {
        MasterTrust(
            store: "shop1", publicKey: masterKey, pairedAtMillis: 1_700_000_000_000,
            codeDigest: MasterTrust.codeDigest(ofCodeBytes: code.bytes))
    }

    func testWrittenOwnerOnlyUnderUmask000AndReadBack() throws {
        let path = try temporaryDirectory() + "/master.trust"
        XCTAssertNil(try MasterTrust.load(path: path), "no file: not paired")
        let previous = umask(0)
        defer { umask(previous) }
        try trust().write(to: path)
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o7777, 0o600)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + ".new"))
        XCTAssertEqual(try MasterTrust.load(path: path), trust())
        let object = try XCTUnwrap(
            JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        XCTAssertEqual(
            Set(object.keys), ["store", "master", "publicKey", "pairedAtMillis", "codeDigest", "previousKeys"])
        XCTAssertEqual(object["master"] as? String, NodeIdentity.nodeId(publicKey: masterKey))
        XCTAssertEqual(object["publicKey"] as? String, Data(masterKey).base64EncodedString())
    }

    func testAFileOthersMayReadIsRefusedWithAFix() throws {
        let path = try temporaryDirectory() + "/master.trust"
        try trust().write(to: path)
        XCTAssertEqual(chmod(path, 0o640), 0)
        XCTAssertThrowsError(try MasterTrust.load(path: path)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("readable by group or others (mode 640)"), text)
            XCTAssertTrue(text.contains("chmod 600 \(path)"), text)
        }
    }

    func testASymlinkIsRefused() throws {
        let directory = try temporaryDirectory()
        try trust().write(to: directory + "/elsewhere")
        XCTAssertEqual(symlink(directory + "/elsewhere", directory + "/master.trust"), 0)
        XCTAssertThrowsError(try MasterTrust.load(path: directory + "/master.trust"))
    }

    func testADamagedOrAlteredFileIsRefusedNeverTrusted() throws {
        let path = try temporaryDirectory() + "/master.trust"
        let other = NoiseKeyPair.generate().publicKey
        try trust().write(to: path)
        let good = try String(contentsOfFile: path, encoding: .utf8)
        let altered = [
            "{",
            good.replacingOccurrences(of: Data(masterKey).base64EncodedString(), with: Data(other).base64EncodedString()),
            good.replacingOccurrences(of: Data(masterKey).base64EncodedString(), with: Data(masterKey.prefix(31)).base64EncodedString()),
            good.replacingOccurrences(of: MasterTrust.codeDigest(ofCodeBytes: code.bytes), with: "zz"),
        ]
        for text in altered {
            XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(text.utf8)))
            XCTAssertEqual(chmod(path, 0o600), 0)
            XCTAssertThrowsError(try MasterTrust.load(path: path), text) { error in
                XCTAssertTrue("\(error)".contains("is damaged"), "\(error)")
                XCTAssertTrue("\(error)".contains("--pair CODE"), "\(error)")
            }
        }
    }

    func testAHandoverKeepsTheOldKeyAmongThePreviousOnesAndSurvivesTheFile() throws {
        let path = try temporaryDirectory() + "/master.trust"
        var t = trust()
        let oldId = t.master
        XCTAssertFalse(t.handOver(to: masterKey), "the current key again changes nothing")
        let newKey = NoiseKeyPair.generate().publicKey
        XCTAssertTrue(t.handOver(to: newKey))
        XCTAssertEqual(t.master, NodeIdentity.nodeId(publicKey: newKey))
        XCTAssertEqual(t.publicKey, newKey)
        XCTAssertEqual(t.previousKeys.map(\.master), [oldId])
        XCTAssertEqual(t.knownMasterIds, [oldId, t.master])
        try t.write(to: path)
        XCTAssertEqual(try MasterTrust.load(path: path), t)
        for _ in 0..<6 { XCTAssertTrue(t.handOver(to: NoiseKeyPair.generate().publicKey)) }
        XCTAssertEqual(t.previousKeys.count, MasterTrust.previousKeysKept, "only the newest earlier keys are kept")
    }

    // MARK: The rules at start

    func testNoTrustAndNoCodeRefusesToStart() {
        XCTAssertThrowsError(try SlaveTrust.atStart(trust: nil, code: nil)) { error in
            XCTAssertEqual(
                "\(error)", "this terminal is not paired: run `ordersync pair` on the master, then start with --pair CODE")
        }
    }

    func testEachTrustOffersItsCredential() throws {
        let (pairing, _) = try SlaveTrust.atStart(trust: nil, code: code)
        XCTAssertEqual(pairing.credential.subprotocol, "ordersync.pair.v1")
        let (same, _) = try SlaveTrust.atStart(trust: trust(), code: try PairingCode(parsing: code.description.lowercased()))
        XCTAssertEqual(same.credential, .known(masterKey: masterKey))
        XCTAssertEqual(same.credential.subprotocol, "ordersync.ik.v1")
    }

    // MARK: What an ended link means

    func testVerdictsOfEndedLinks() {
        let paired = SlaveTrust.paired(trust(), refused: false)
        let pairing = SlaveTrust.pairing(code, previous: nil)
        func byMaster(_ code: UInt16?, _ reason: String) -> MasterLinkEnding {
            MasterLinkEnding(closeCode: code, reason: reason, localFailure: nil)
        }
        let unproven = MasterLinkEnding(
            closeCode: 1008, reason: "secure link failed",
            localFailure: .secure(.init(reason: "authenticationFailed", masterUnproven: true)))
        // A 1008 before the answer proved the trusted key may come from anyone: never pairing again.
        XCTAssertEqual(paired.verdict(secured: false, ending: byMaster(1008, "unknown terminal")), .masterUntrusted)
        XCTAssertEqual(paired.verdict(secured: false, ending: byMaster(1008, "terminal revoked")), .masterUntrusted)
        let proven = MasterLinkEnding(
            closeCode: 1008, reason: "the master refused this terminal: unknown terminal",
            localFailure: .secure(.init(reason: "refused", masterUnproven: false, refusedByMaster: "unknown terminal")))
        XCTAssertEqual(paired.verdict(secured: false, ending: proven), .pairingRequired)
        XCTAssertEqual(paired.verdict(secured: false, ending: byMaster(1008, "handshake failed")), .masterUntrusted)
        XCTAssertEqual(paired.verdict(secured: false, ending: unproven), .masterUntrusted)
        XCTAssertEqual(paired.verdict(secured: false, ending: byMaster(nil, "connection refused")), .ordinary)
        XCTAssertEqual(paired.verdict(secured: true, ending: byMaster(1008, "unknown terminal")), .ordinary)
        XCTAssertEqual(pairing.verdict(secured: false, ending: byMaster(1008, "pairing failed")), .pairingRefused)
        XCTAssertEqual(pairing.verdict(secured: false, ending: unproven), .pairingFailed)
        XCTAssertEqual(pairing.verdict(secured: false, ending: byMaster(1001, "going away")), .ordinary)
    }
}
