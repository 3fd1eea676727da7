import CryptoPrimitives
import Foundation
import Glibc
import NodePolicy
import XCTest

@testable import OrderSyncNode

/// The node key: made once, kept 0600, reloaded; its id a stable readable hash.
final class NodeIdentityTests: XCTestCase {
    private func temporaryDirectory() throws -> String {
        let d = NSTemporaryDirectory() + "ordersync-identity-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: d) }
        return d
    }

    func testBase32FollowsRFC4648() {
        // RFC 4648 section 10 test vectors, without their padding.
        let vectors = ["": "", "f": "MY", "fo": "MZXQ", "foo": "MZXW6", "foob": "MZXW6YQ", "fooba": "MZXW6YTB", "foobar": "MZXW6YTBOI"]
        for (input, output) in vectors {
            XCTAssertEqual(NodeId.base32(Array(input.utf8)), output, input)
        }
    }

    func testNodeIdOfAFixedKeyIsStable() throws {
        // Private key 01 02 ... 20; its public key and id computed independently (Python's
        // `cryptography` X25519, hashlib SHA-256, base64.b32encode).
        let key = try X25519.PrivateKey(rawRepresentation: Array(1...32))
        XCTAssertEqual(
            key.publicKey.rawRepresentation.map { String(format: "%02x", $0) }.joined(),
            "07a37cbc142093c8b755dc1b10e86cb426374ad16aa853ed0bdfc0b2b86d1c7c")
        let identity = NodeIdentity(privateKey: key)
        XCTAssertEqual(identity.nodeId, "VKUP-75YD-WUFS-FF7U-63QT-KCHX-EQQN-S36Q")
        XCTAssertEqual(NodeIdentity.fileText(identity), "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\n")
    }

    /// A key file written before the primitives moved to OpenSSL (by swift-crypto's
    /// `Curve25519.KeyAgreement`, one line of base64): here RFC 7748 6.1's Alice's private key,
    /// whose low bits and top bit a clamp changes. It loads to the same public key (RFC 7748's)
    /// and node id (Python's hashlib and base64.b32encode), and the file is left as it was.
    func testAKeyFileWrittenBeforeLoadsToTheSameIdentity() throws {
        let path = try temporaryDirectory() + "/node.key"
        let text = "dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo=\n"
        XCTAssertTrue(
            FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]))
        let identity = try NodeIdentity.loadOrCreate(path: path)
        XCTAssertEqual(
            identity.publicKey.rawRepresentation.map { String(format: "%02x", $0) }.joined(),
            "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
        XCTAssertEqual(identity.nodeId, "GAGJ-ZFQD-XEVE-WOPN-HFML-7ESA-CFEA-JW2P")
        XCTAssertEqual(identity.noiseKeyPair?.publicKey, identity.publicKeyBytes)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), text)
        XCTAssertEqual(NodeIdentity.fileText(identity), text)
    }

    func testKeyIsCreatedOnceWithMode0600AndReloaded() throws {
        let path = try temporaryDirectory() + "/node.key"
        let previous = umask(0)
        defer { umask(previous) }
        let first = try NodeIdentity.loadOrCreate(path: path)
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o7777, 0o600)
        let second = try NodeIdentity.loadOrCreate(path: path)
        XCTAssertEqual(second.nodeId, first.nodeId)
        XCTAssertEqual(second.privateKey.rawRepresentation, first.privateKey.rawRepresentation)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), NodeIdentity.fileText(first))
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + ".new"))
    }

    func testAKeyReadableByOthersIsRefused() throws {
        let path = try temporaryDirectory() + "/node.key"
        _ = try NodeIdentity.loadOrCreate(path: path)
        XCTAssertEqual(chmod(path, 0o644), 0)
        XCTAssertThrowsError(try NodeIdentity.loadOrCreate(path: path)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("readable by group or others (mode 644)"), text)
            XCTAssertTrue(text.contains("chmod 600"), text)
        }
        XCTAssertEqual(chmod(path, 0o640), 0)
        XCTAssertThrowsError(try NodeIdentity.loadOrCreate(path: path))
    }

    func testADamagedKeyIsReportedAndKept() throws {
        let path = try temporaryDirectory() + "/node.key"
        XCTAssertTrue(
            FileManager.default.createFile(atPath: path, contents: Data("not a key\n".utf8), attributes: [.posixPermissions: 0o600]))
        XCTAssertThrowsError(try NodeIdentity.loadOrCreate(path: path)) { error in
            XCTAssertTrue("\(error)".contains("damaged"), "\(error)")
        }
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "not a key\n")
    }
}
