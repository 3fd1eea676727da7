import Discovery
import EventLoopIO
import Foundation
import JSON
import OrderStore
import SyncCore
import XCTest

@testable import OrderSyncNode

/// A master that sees a member announce a higher term counts the voters it still hears before
/// it follows (`MasterNode.considerStepDown`): its connected standbys that vote, itself
/// included. A handheld keeps a standby copy but has no say in an election, so a master that
/// hears only handhelds cannot know that no promotion won: it steps down.
extension MasterWritesOffTheLoopTests {
    /// Pairs `name` (a voter or a handheld) in the master's store.
    private func pair(_ master: MasterNode, _ id: String, _ name: String, key: UInt8, voter: Bool) {
        var done: Result<Void, any Error>?
        master.storeWrite({
            try $0.addPairedTerminal(
                PairedTerminal(nodeId: id, publicKey: Array(repeating: key, count: 32), name: name, pairedAtMillis: Int64(key)))
            if !voter { try $0.setVoter(nodeId: id, false) }
        }) { done = $0 }
        runUntil(loop) { done != nil }
        XCTAssertNoThrow(try done?.get())
    }

    /// The terminal `id` connects to the master's engine as a standby (its hello answered).
    private func connect(_ master: MasterNode, peer: Int, _ id: String, _ name: String) {
        _ = master.engine.peerConnected(peer, address: "10.0.0.\(peer):5000", terminal: AuthenticatedTerminal(nodeId: id, name: name))
        let hello = HelloMessage(terminalId: id, terminalName: name, store: master.storeId, lastSeq: 0, epoch: nil)
        _ = master.engine.received(hello.encodedBytes(), from: peer, now: 1_000)
    }

    /// The voter `id` announcing term `term` on the LAN.
    private func announcement(_ master: MasterNode, by id: String, term: Int64) -> ResolvedService {
        ResolvedService(
            name: "voter", type: NodeDefaults.serviceType, domain: "local", hostName: "voter.local", address: "10.0.0.9",
            port: 7000, txt: ["proto": orderSyncProtocolName, "store": master.storeId, "id": id, "term": "\(term)"],
            interfaceIndex: 1)
    }

    func testAMasterHearingOnlyHandheldsStepsDownForAVotersHigherTerm() throws {
        let master = try master()
        // Voters: the master and two tills (a majority is 2). Two handhelds are connected.
        pair(master, "TILL-0001-AAAA", "till-1", key: 1, voter: true)
        pair(master, "TILL-0002-BBBB", "till-2", key: 2, voter: true)
        pair(master, "HAND-0003-CCCC", "hand-1", key: 3, voter: false)
        pair(master, "HAND-0004-DDDD", "hand-2", key: 4, voter: false)
        master.announceMembers()
        connect(master, peer: 1, "HAND-0003-CCCC", "hand-1")
        connect(master, peer: 2, "HAND-0004-DDDD", "hand-2")
        XCTAssertEqual(master.engine.standbys.map(\.voter), [false, false])
        // till-1 was promoted while the master heard only the handhelds: it steps down.
        XCTAssertTrue(master.considerStepDown(announcement(master, by: "TILL-0001-AAAA", term: 5), settled: true))
    }

    func testAMasterHearingAVoterStaysForAnotherVotersHigherTerm() throws {
        let master = try master()
        pair(master, "TILL-0001-AAAA", "till-1", key: 1, voter: true)
        pair(master, "TILL-0002-BBBB", "till-2", key: 2, voter: true)
        pair(master, "HAND-0003-CCCC", "hand-1", key: 3, voter: false)
        master.announceMembers()
        connect(master, peer: 1, "HAND-0003-CCCC", "hand-1")
        connect(master, peer: 2, "TILL-0002-BBBB", "till-2")
        // The master and till-2 are a majority of the three voters: no promotion can have won.
        XCTAssertFalse(master.considerStepDown(announcement(master, by: "TILL-0001-AAAA", term: 5), settled: true))
    }
}
