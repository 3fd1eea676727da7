import SyncCore
import XCTest

/// `MemberVoters`: the voter flags a master reads for each standby in every group, worked out
/// once when the members change; they must say what a scan of the members would.
final class MemberVotersTests: XCTestCase {
    private func terminal(_ id: String, voter: Bool = true, revoked: Int64? = nil) -> MemberTerminal {
        MemberTerminal(
            member: StoreMember(id: id, key: String(repeating: "cd", count: 32), name: id.lowercased()), pairedMillis: 5,
            revokedMillis: revoked, voter: voter)
    }

    private func members(_ terminals: [MemberTerminal]) -> StoreMembers {
        StoreMembers(term: 1, master: StoreMember(id: "MAIN", key: String(repeating: "ab", count: 32), name: "main"), terminals: terminals)
    }

    /// The scan the cache replaces (`MasterEngine.standbys` before it): the first terminal named
    /// `id`, voting and not revoked; one not named votes.
    private func scanned(_ m: StoreMembers?, _ id: String) -> Bool {
        guard let t = m?.terminals.first(where: { $0.member.id == id }) else { return true }
        return t.voter && t.revokedMillis == nil
    }

    func testNoMembersYetEveryTerminalVotesAndNoCount() {
        let v = MemberVoters(nil)
        XCTAssertTrue(v.votes("ANY"))
        XCTAssertNil(v.count)
    }

    func testHandheldsAndRevokedTerminalsDoNotVoteUnnamedOnesDo() {
        let m = members([terminal("A"), terminal("H", voter: false), terminal("R", revoked: 9), terminal("B")])
        let v = MemberVoters(m)
        XCTAssertEqual(["A", "H", "R", "B", "X"].map(v.votes), [true, false, false, true, true])
        XCTAssertEqual(v.count, 2)
        for id in ["A", "H", "R", "B", "X"] { XCTAssertEqual(v.votes(id), scanned(m, id), id) }
    }

    /// An id named twice: the first entry decides, as the scan found it; the count counts entries.
    func testAnIdNamedTwiceTakesItsFirstEntry() {
        let m = members([terminal("A", voter: false), terminal("A"), terminal("B", revoked: 3), terminal("B")])
        let v = MemberVoters(m)
        XCTAssertFalse(v.votes("A"))
        XCTAssertFalse(v.votes("B"))
        XCTAssertEqual(v.count, 2, "two entries vote, as the scan counted them")
        for id in ["A", "B"] { XCTAssertEqual(v.votes(id), scanned(m, id), id) }
    }

    /// The master's own row among the terminals (Docs/PROTOCOL.md 7.20) is the master, counted
    /// apart (`StableSeq.compute` adds it): not a second voter.
    func testTheMastersOwnRowIsNotCountedAsAVoterBesideIt() {
        let m = members([terminal("MAIN"), terminal("A"), terminal("B")])
        XCTAssertEqual(MemberVoters(m).count, 2)
        XCTAssertEqual(StableSeq.compute(masterSeq: 10, voterHeld: [7], voters: MemberVoters(m).count ?? 0), 7, "2 of 3 hold 7")
    }
}
