import Foundation
import JSON
import NodePolicy
import SyncCore
import XCTest

@testable import OrderStore
@testable import OrderSyncNode

/// The store's first master is a member of its store like a paired fixed terminal (Docs/PROTOCOL.md
/// 7.20), on real nodes: its row (its key, a voter) is there from the store's first start, a store
/// of the previous version gets it once at the master's next start, the standbys hold it, the
/// voters count it once and the master cannot revoke itself.
final class MasterOwnRowNodeTests: XCTestCase {
    var directories: [String] = []

    override func tearDown() {
        for d in directories { try? FileManager.default.removeItem(atPath: d) }
    }

    func temporaryDirectory() -> String {
        let d = NSTemporaryDirectory() + "ordersync-ownrow-" + UUID().uuidString
        directories.append(d)
        return d
    }

    private func database(_ directory: String) throws -> OrderDatabase {
        try OrderDatabase(path: directory + "/" + NodeDefaults.databaseFile)
    }

    private func masterStatus(_ node: RunningNode) throws -> MasterStatus {
        guard case .master(let m) = try node.status() else { throw CancellationError() }
        return m
    }

    func testANewStoresMasterIsAVotingMemberAndItsStandbysHoldItsRow() throws {
        let directory = temporaryDirectory()
        let master = try RunningNode(role: .master, dataDirectory: directory, name: "front")
        let alone = try masterStatus(master)
        XCTAssertEqual(alone.voters?.names, ["front"], "counted once")
        XCTAssertEqual(alone.pairedTerminals, 0, "its own row is no terminal it serves")
        let slaveDirectory = temporaryDirectory()
        let slave = try master.pairedSlave(dataDirectory: slaveDirectory, name: "bar-2")
        let voters = try waitForStatus(master, "the slave to pair") { status -> MasterStatus.Voters? in
            guard case .master(let m) = status, m.pairedTerminals == 1 else { return nil }
            return m.voters
        }
        XCTAssertEqual(voters, MasterStatus.Voters(names: ["front", "bar-2"]))
        let listed = try LocalAPIClient(dataDirectory: directory).send(method: "GET", path: "/v1/terminals")
        XCTAssertEqual(listed.body.objectValue?["terminals"]?.arrayValue?.compactMap { $0.objectValue?["name"]?.stringValue }, ["bar-2"])
        let revoked = try LocalAPIClient(dataDirectory: directory).send(method: "POST", path: "/v1/terminals/front/revoke")
        XCTAssertEqual(revoked.status, 409, "\(revoked.body)")
        XCTAssertEqual(revoked.body.objectValue?["error"]?.objectValue?["code"]?.stringValue, "is_master")
        let masterId = alone.nodeId
        // The standby copy lists the master among the terminals, a voter, under its number.
        let row = try waitForStatus(slave, "the standby copy to hold the master's row") { _ -> MemberTerminal? in
            guard let standby = try? OrderDatabase.openReadOnly(path: slaveDirectory + "/" + NodeDefaults.databaseFile) else {
                return nil
            }
            defer { standby.close() }
            return (try? standby.memberTerminals())?.first { $0.member.id == masterId }
        }
        slave.stop()
        master.stop()
        XCTAssertTrue(row.voter)
        XCTAssertEqual(row.member.name, "front")
        let stored = try database(directory)
        defer { stored.close() }
        XCTAssertEqual(row.member.number, try stored.ownMemberNumber())
    }

    func testAStoreOfThePreviousVersionGetsTheMastersRowOnceAtItsNextStart() throws {
        let directory = temporaryDirectory()
        let first = try RunningNode(role: .master, dataDirectory: directory, name: "front")
        let masterId = try masterStatus(first).nodeId
        first.stop()
        // As the previous version left it: a member number, no row of its own.
        let db = try database(directory)
        try db.connection.executeOnce("DELETE FROM paired_terminals")
        XCTAssertNotNil(try db.ownMemberNumber())
        db.close()

        let upgraded = try RunningNode(role: .master, dataDirectory: directory, name: "front")
        XCTAssertEqual(try masterStatus(upgraded).voters?.count, 1)
        upgraded.stop()
        let after = try database(directory)
        let row = try XCTUnwrap(try after.memberTerminals().first { $0.member.id == masterId }, "the row is added")
        XCTAssertTrue(row.voter)
        XCTAssertEqual(row.member.number, try after.ownMemberNumber())
        after.close()

        let again = try RunningNode(role: .master, dataDirectory: directory, name: "front")
        again.stop()
        let last = try database(directory)
        defer { last.close() }
        XCTAssertEqual(try last.memberTerminals(), [row], "added once: a later start keeps it as it is")
    }

    func testAfterAKeyRotationTheMastersRowHoldsTheNewKey() throws {
        let directory = temporaryDirectory()
        let master = try RunningNode(role: .master, dataDirectory: directory, name: "front")
        let before = try masterStatus(master).nodeId
        let rotated = try LocalAPIClient(dataDirectory: directory).send(method: "POST", path: "/v1/key/rotate")
        XCTAssertEqual(rotated.status, 200, "\(rotated.body)")
        let after = try XCTUnwrap(rotated.body.objectValue?["master"]?.stringValue)
        XCTAssertNotEqual(after, before)
        let row = try waitForStatus(master, "the row to take the new key") { _ -> MemberTerminal? in
            guard let db = try? OrderDatabase.openReadOnly(path: directory + "/" + NodeDefaults.databaseFile) else { return nil }
            defer { db.close() }
            return (try? db.memberTerminals())?.first { $0.member.id == after }
        }
        XCTAssertTrue(row.voter)
        master.stop()
        let db = try database(directory)
        defer { db.close() }
        XCTAssertEqual(try db.memberTerminals().map(\.member.id), [after], "the retired key is no member any more")
        XCTAssertEqual(row.member.number, try db.ownMemberNumber())
    }
}
