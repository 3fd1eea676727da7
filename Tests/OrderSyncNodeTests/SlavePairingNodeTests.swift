import EventLoopIO
import Foundation
import Logging
import Noise
import OrderSyncNode
import SecureLink
import XCTest

/// A real slave's start-up rules for pairing: no trust file and no code is refused with the
/// operator's next step; a trust file others may read is refused; a code already used is
/// ignored.
final class SlavePairingNodeTests: XCTestCase {
    private func temporaryDirectory() -> String {
        let d = NSTemporaryDirectory() + "ordersync-pairing-" + UUID().uuidString
        addTeardownBlock { try? FileManager.default.removeItem(atPath: d) }
        return d
    }

    private let nowhere = MasterURL(host: "127.0.0.1", port: 9)

    func testAnUnpairedSlaveWithoutACodeRefusesToStart() throws {
        XCTAssertThrowsError(try RunningNode(role: .slave, dataDirectory: temporaryDirectory(), name: "bar-2", masterURL: nowhere)) {
            XCTAssertEqual(
                "\($0)", "this terminal is not paired: run `ordersync pair` on the master, then start with --pair CODE")
        }
    }

    func testAPairedSlaveStartsWithoutACodeAndShowsItsMaster() throws {
        let directory = temporaryDirectory()
        let code = PairingCode.generate()
        // A first start creates the directory (and the key); the trust is then what a pairing leaves.
        let first = try RunningNode(
            role: .slave, dataDirectory: directory, name: "bar-2", masterURL: nowhere, configure: { $0.pairingCode = code })
        first.stop()
        let masterKey = NoiseKeyPair.generate().publicKey
        let trust = MasterTrust(
            store: "shop1", publicKey: masterKey, pairedAtMillis: 1, codeDigest: MasterTrust.codeDigest(ofCodeBytes: code.bytes))
        try trust.write(to: directory + "/" + NodeDefaults.masterTrustFile)

        for again in [nil, code] {
            let slave = try RunningNode(
                role: .slave, dataDirectory: directory, name: "bar-2", masterURL: nowhere, configure: { $0.pairingCode = again })
            guard case .slave(let status) = try slave.status() else { return XCTFail("not a slave") }
            XCTAssertEqual(status.masterId, trust.master)
            XCTAssertEqual(status.pairing, .paired, "the code it paired with is ignored")
            XCTAssertTrue(StatusText.render(.slave(status)).contains("master id: \(trust.master)\n"), StatusText.render(.slave(status)))
            slave.stop()
        }
        let anew = try RunningNode(
            role: .slave, dataDirectory: directory, name: "bar-2", masterURL: nowhere,
            configure: { $0.pairingCode = PairingCode.generate() })
        guard case .slave(let status) = try anew.status() else { return XCTFail("not a slave") }
        XCTAssertEqual(status.pairing, .pairing, "a new code pairs anew")
        XCTAssertEqual(status.masterId, trust.master, "the old trust stays until that succeeds")
        anew.stop()
        XCTAssertEqual(try MasterTrust.load(path: directory + "/" + NodeDefaults.masterTrustFile), trust)

        XCTAssertEqual(chmod(directory + "/" + NodeDefaults.masterTrustFile, 0o644), 0)
        XCTAssertThrowsError(try RunningNode(role: .slave, dataDirectory: directory, name: "bar-2", masterURL: nowhere)) {
            XCTAssertTrue("\($0)".contains("chmod 600"), "\($0)")
        }
    }
}
