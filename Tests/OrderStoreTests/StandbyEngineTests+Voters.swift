import SyncCore
import XCTest

@testable import OrderStore

/// A handheld's copy (`ordersync pair --handheld`) is not a standby a write waits for: elections
/// consult voters only (`MasterEngine.Standby.voter`, `ReplicationWaits`).
extension StandbyEngineTests {
    private func members(voter: Bool) -> StoreMembers {
        StoreMembers(
            term: 1, master: StoreMember(id: "MAIN", key: String(repeating: "ab", count: 32), name: "main"),
            terminals: [
                MemberTerminal(
                    member: StoreMember(id: terminal.nodeId, key: String(repeating: "cd", count: 32), name: "till-1"), pairedMillis: 5,
                    voter: voter)
            ])
    }

    /// Found by `EngineFailoverSimulationTests` (seed 715): a master write held only by a
    /// handheld was answered replicated, the master died, the voter promoted never had it.
    func testAWriteHeldOnlyByAHandheldIsNotReplicated() throws {
        let master = try MasterEngine(store: SQLiteMasterStore(db: .inMemory()), storeId: "s", epoch: "e")
        _ = master.membersChanged(members(voter: false))
        let db = try OrderDatabase.inMemory()
        let (slave, _) = try join(master, on: db)
        let a = master.apply(create([uuid(1)], opId: "op-a"), origin: "main", now: 2_000)
        let seq = try XCTUnwrap(a.seq)
        for case .send(let ack) in slave.received(try XCTUnwrap(a.broadcast), now: 2_000) + slave.ackDue() {
            _ = master.received(ack, from: 1, now: 5_000)
        }
        XCTAssertEqual(master.standbys.map(\.held), [seq], "the handheld holds it")
        XCTAssertEqual(master.standbys.map(\.voter), [false])
        var waits = ReplicationWaits<String, Int>()
        let alone = try XCTUnwrap(waits.add(seq: seq, replicas: 1, standbys: master.standbys, deadline: 9, answer: "a"))
        XCTAssertFalse(alone.replicated, "no voter holds it")
        XCTAssertEqual(alone.wanted, 0)

        // Made a voter: the same copy counts.
        _ = master.membersChanged(members(voter: true))
        XCTAssertEqual(master.standbys.map(\.voter), [true])
        let held = try XCTUnwrap(waits.add(seq: seq, replicas: 1, standbys: master.standbys, deadline: 9, answer: "b"))
        XCTAssertTrue(held.replicated)
        XCTAssertEqual(held.heldBy, ["till-1"])
    }

    /// The voter flags are worked out when the members change (`MasterEngine.voters`): a
    /// standby revoked, then named again as a voter, is read so at once by `standbys`.
    func testTheStandbysVoterFlagFollowsEachMembersChange() throws {
        let master = try MasterEngine(store: SQLiteMasterStore(db: .inMemory()), storeId: "s", epoch: "e")
        _ = try join(master, on: try OrderDatabase.inMemory())
        XCTAssertEqual(master.standbys.map(\.voter), [true], "no members yet: a voter")
        XCTAssertNil(master.voters.count)
        var m = members(voter: true)
        _ = master.membersChanged(m)
        XCTAssertEqual(master.standbys.map(\.voter), [true])
        XCTAssertEqual(master.voters.count, 1)
        m.terminals[0].revokedMillis = 7
        _ = master.membersChanged(m)
        XCTAssertEqual(master.standbys.map(\.voter), [false], "revoked")
        XCTAssertEqual(master.voters.count, 0)
        m.terminals[0].revokedMillis = nil
        _ = master.membersChanged(m)
        XCTAssertEqual(master.standbys.map(\.voter), [true])
    }

    /// A voter's place among the voting slaves is read from the store again only when the
    /// members were committed since (`SlaveEngine.membersCommitted`), not on every tick: the
    /// count moves with each members message kept, and not with an order's broadcast.
    func testTheMembersCommittedCountMovesWithEachMembersMessageOnly() throws {
        let master = try MasterEngine(store: SQLiteMasterStore(db: .inMemory()), storeId: "s", epoch: "e")
        let (slave, _) = try join(master, on: try OrderDatabase.inMemory())
        let before = slave.membersCommitted
        _ = slave.received(members(voter: true).encodedBytes(), now: 1_000)
        XCTAssertEqual(slave.membersCommitted, before + 1)
        let a = master.apply(create([uuid(1)], opId: "op-a"), origin: "main", now: 2_000)
        _ = slave.received(try XCTUnwrap(a.broadcast), now: 2_000)
        XCTAssertEqual(slave.membersCommitted, before + 1, "an order's broadcast changes no member")
        _ = slave.received(members(voter: false).encodedBytes(), now: 3_000)
        XCTAssertEqual(slave.membersCommitted, before + 2)
    }
}
