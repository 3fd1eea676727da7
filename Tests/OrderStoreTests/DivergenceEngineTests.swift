import Foundation
import JSON
import SyncCore
import XCTest

@testable import OrderStore

/// Divergence across three terms through the master engine's hello (`Docs/PROTOCOL.md` 7,
/// "Divergence across terms"): the hello carries the slave's term starts, and the master keeps
/// the last entry both histories hold in the same term.
final class DivergenceEngineTests: StoreTestCase {
    private let terminal = AuthenticatedTerminal(nodeId: "TILL-0001-AAAA", name: "till-1")

    /// A term-4 master at seq 20 whose lineage held term 2 from 11 and term 4 from 14 (term 3's
    /// master was deposed before its entries reached it), with a terminal connected as peer 1.
    private func termFourMaster() throws -> MasterEngine {
        let master = try MasterEngine(store: SQLiteMasterStore(db: try OrderDatabase.inMemory()), storeId: "s", epoch: "e")
        for i in 1...20 {
            let uuid = String(format: "9437c8f5-d742-46cb-9847-%012d", i)
            let order = JSONValue.object(JSONObject([("uuid", .string(uuid)), ("customerName", .string("c"))]))
            XCTAssertNotNil(master.apply(OperationMessage(operation: .create, orders: [order], opId: "op-\(i)"), origin: "t", now: 1).seq)
        }
        master.terms = MasterTerms(term: 4, starts: TermStarts([1: 1, 2: 11, 4: 14]))
        _ = master.peerConnected(1, address: "a", terminal: terminal)
        return master
    }

    /// The slave that followed term 3's master: entries 11-15 of term 3.
    private func termThreeHello(sendsStarts: Bool) -> HelloMessage {
        var hello = HelloMessage(terminalId: terminal.nodeId, terminalName: terminal.name, store: "s", lastSeq: 15, epoch: "e")
        (hello.term, hello.lastTerm) = (3, 3)
        if sendsStarts { hello.termStarts = TermStarts([1: 1, 3: 11]) }
        return hello
    }

    /// The `keep` of the `diverged` the master answers `hello` with; nil when it sends none.
    private func keep(answering hello: HelloMessage, on master: MasterEngine) -> Int64? {
        for case .send(1, let bytes) in master.received(hello.encodedBytes(), from: 1, now: 1_000) {
            guard let o = try? JSONParser.parse(bytes).objectValue, o["type"]?.stringValue == "diverged" else { continue }
            XCTAssertEqual(o["term"]?.intValue, 4)
            return o["keep"]?.intValue
        }
        return nil
    }

    func testAHelloWithTermStartsKeepsOnlyWhatBothHistoriesHoldInOneTerm() throws {
        // Entries 11-13 are term 2 on the master and term 3 on the slave: not shared.
        XCTAssertEqual(keep(answering: termThreeHello(sendsStarts: true), on: try termFourMaster()), 10)
    }

    func testAHelloWithoutTermStartsFallsBackToTheLastTermRule() throws {
        // An older build: `TermStarts.keep` from (lastSeq, lastTerm) alone, as before.
        let expected = TermStarts([1: 1, 2: 11, 4: 14]).keep(lastSeq: 15, lastTerm: 3, masterLastSeq: 20)
        XCTAssertEqual(expected, 13)
        XCTAssertEqual(keep(answering: termThreeHello(sendsStarts: false), on: try termFourMaster()), expected)
    }

    func testAHelloInTheMastersHistoryIsNotDiverged() throws {
        // A slave of the same lineage behind the master (term 2 up to 12) keeps everything.
        var hello = termThreeHello(sendsStarts: true)
        (hello.lastSeq, hello.term, hello.lastTerm, hello.termStarts) = (12, 2, 2, TermStarts([1: 1, 2: 11]))
        XCTAssertNil(keep(answering: hello, on: try termFourMaster()))
        // Its starts say nothing of terms: all of it is term 1, up to 10 only.
        hello.termStarts = TermStarts()
        XCTAssertEqual(keep(answering: hello, on: try termFourMaster()), 10)
    }

    func testTheSlaveEngineSendsItsStoredTermStarts() throws {
        let db = try OrderDatabase.inMemory()
        try db.setTermStarts(TermStarts([1: 1, 3: 11]))
        let slave = try SlaveEngine(
            store: SQLiteSlaveStore(db: db), terminalId: terminal.nodeId, terminalName: terminal.name, configuredStore: "s")
        var sent: [HelloMessage] = []
        for case .send(let bytes) in slave.linkOpened() {
            if case .success(.hello(let hello)) = ClientMessage.decode(bytes) { sent.append(hello) }
        }
        XCTAssertEqual(sent.map(\.termStarts), [TermStarts([1: 1, 3: 11])])
    }
}
