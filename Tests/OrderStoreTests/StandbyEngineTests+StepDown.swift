import XCTest

@testable import OrderStore
@testable import SyncCore

/// A master stepping down (`OrderDatabase.becomeReplicaOfOwnJournal`, as `MasterNode.stepDown`
/// does) becomes a slave whose own entries beyond the new master's history go back into its
/// outbox.
extension StandbyEngineTests {
    /// Found by `EngineFailoverSimulationTests` (seed 240): a slave promoted while it wanted a
    /// snapshot (a refused local change) kept that need when it stepped down; its hello carried
    /// no epoch, the new master sent a plain snapshot, and the writes only it held were lost.
    func testASteppedDownMasterThatOnceWantedASnapshotRequeuesItsTail() throws {
        let old = try OrderDatabase.inMemory()
        try old.setMetadata("replica.needs_snapshot", "1")
        let oldMaster = try MasterEngine(store: SQLiteMasterStore(db: old), storeId: "s", epoch: "e")
        XCTAssertNotNil(oldMaster.apply(create([uuid(1)], opId: "op-1"), origin: "t", now: 1).seq)
        XCTAssertNotNil(oldMaster.apply(create([uuid(2)], opId: "op-2"), origin: "t", now: 1).seq)
        // The new master holds entry 1 only and began term 2 after it.
        let newDB = try OrderDatabase.inMemory()
        for e in try old.journalEntries(after: 0, limit: 1) { try newDB.appendJournal(e) }
        for o in try old.allOrders().prefix(1) { try newDB.insertOrder(o) }
        try newDB.becomeMasterFromStandby(term: 2, lineage: "e", oldMaster: nil)
        let newMaster = try MasterEngine(store: SQLiteMasterStore(db: newDB), storeId: "s", epoch: "e")
        XCTAssertNotNil(newMaster.apply(create([uuid(3)], opId: "op-3"), origin: "t9", now: 1).seq)

        try old.becomeReplicaOfOwnJournal(lineage: "e", store: "s", term: 1)
        let slave = try SlaveEngine(
            store: SQLiteSlaveStore(db: old), terminalId: terminal.nodeId, terminalName: "till-1", configuredStore: "s")
        XCTAssertFalse(slave.needsSnapshot)
        XCTAssertEqual(slave.lastSeq, 2)
        _ = newMaster.peerConnected(1, address: "a", terminal: terminal)
        var texts: [String] = []
        for case .send(let hello) in slave.linkOpened() {
            XCTAssertTrue(String(decoding: hello, as: UTF8.self).contains("\"epoch\":\"e\""), "the hello names the lineage")
            texts = sends(newMaster.received(hello, from: 1, now: 1), to: 1)
        }
        XCTAssertTrue(texts.first?.contains("{\"type\":\"diverged\",\"keep\":1,\"term\":2}") == true, "\(texts)")
        for t in texts { _ = slave.received(Array(t.utf8), now: 1) }
        XCTAssertEqual(slave.outbox.map(\.opId), ["op-2"], "the write only the old master held goes back to its outbox")
        XCTAssertNotNil(try old.order(uuid: uuid(2)))
        XCTAssertNotNil(try old.order(uuid: uuid(3)))
    }
}

/// Live spacing is for StorePOS apps only: a broadcast's recipients name which ones they are, so
/// that a slave's `Peer` is not touched for spacing on every delivery (Docs/PERFORMANCE.md,
/// "Where a paired delivery's instructions go").
extension StandbyEngineTests {
    func testOnlyStorePOSRecipientsAreSpacedAndASlaveGetsNoFence() throws {
        let master = try MasterEngine(store: SQLiteMasterStore(db: .inMemory()), storeId: "s", epoch: "e")
        _ = try join(master, peer: 2, on: .inMemory())
        _ = master.peerConnected(1, address: "b", terminal: nil)
        _ = master.peerConnected(3, address: "c", terminal: nil)
        let to = master.recipients(of: .update, from: 3)
        XCTAssertEqual(to.all, [1, 2])
        XCTAssertEqual(to.storePOS, [1])
        let created = master.received(#"{"operation":0,"orders":[{"uuid":"\#(uuid(1))","customerName":"c"}]}"#, from: 3, now: 2_000)
        XCTAssertEqual(sends(created, to: 2).count, 1, "the slave gets the Create")
        // An Update of the same order right after: the StorePOS terminal waits behind fences.
        let updated = master.received(#"{"operation":1,"orders":[{"uuid":"\#(uuid(1))","customerName":"d"}]}"#, from: 3, now: 2_001)
        let fence = String(decoding: StorePOSSpacing.fenceMessage, as: UTF8.self)
        XCTAssertGreaterThan(sends(updated, to: 1).filter { $0 == fence }.count, 0, "\(sends(updated, to: 1))")
        XCTAssertEqual(sends(updated, to: 2).filter { $0 == fence }, [])
        XCTAssertEqual(sends(updated, to: 2).count, 1, "the slave gets the Update's broadcast only")
    }
}
