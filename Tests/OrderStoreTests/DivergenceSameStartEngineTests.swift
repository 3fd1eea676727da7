import Foundation
import JSON
import SyncCore
import XCTest

@testable import OrderStore

/// Divergence through the master engine's hello when two terms start at the same seq
/// (`Docs/PROTOCOL.md` 7, "Divergence across terms"; engine failover simulation, seed 1666).
///
/// A slave at seq 47 kept a term-4 master's `ready` (`{"1":1,"4":48}`) before that master's
/// first entry reached it, then was promoted at 47 itself, to term 1026: its starts name term 4
/// and term 1026 at 48, and its entries from 48 on are term 1026's. The deposed term-4 master
/// comes back with 48-52 of term 4, written while it was cut off.
final class DivergenceSameStartEngineTests: StoreTestCase {
    private let terminal = AuthenticatedTerminal(nodeId: "TILL-0003-AAAA", name: "till-3")

    /// The term-1026 master at seq 55, with the deposed master connected as peer 1.
    private func promotedMaster() throws -> MasterEngine {
        let master = try MasterEngine(store: SQLiteMasterStore(db: try OrderDatabase.inMemory()), storeId: "s", epoch: "e")
        for i in 1...55 {
            let uuid = String(format: "5e3d9a21-3b94-4da5-ac4e-%012d", i)
            let order = JSONValue.object(JSONObject([("uuid", .string(uuid)), ("customerName", .string("c"))]))
            XCTAssertNotNil(master.apply(OperationMessage(operation: .create, orders: [order], opId: "op-\(i)"), origin: "t", now: 1).seq)
        }
        master.terms = MasterTerms(term: 1026, starts: TermStarts([1: 1, 4: 48, 1026: 48]))
        _ = master.peerConnected(1, address: "a", terminal: terminal)
        return master
    }

    /// The `diverged` the master answers `hello` with (its keep), nil when it sends none, and
    /// whether it caught the peer up instead.
    private func answer(to hello: HelloMessage, on master: MasterEngine) -> (keep: Int64?, caughtUp: Bool) {
        var keep: Int64?
        var caughtUp = false
        for case .send(1, let bytes) in master.received(hello.encodedBytes(), from: 1, now: 1_000) {
            guard let o = try? JSONParser.parse(bytes).objectValue else { continue }
            if o["type"]?.stringValue == "diverged" {
                XCTAssertEqual(o["term"]?.intValue, 1026)
                keep = o["keep"]?.intValue
            }
            if o["operation"] != nil, let seq = o["seq"]?.intValue, seq == 53 { caughtUp = true }
        }
        return (keep, caughtUp)
    }

    func testTheDeposedMastersEntriesOfTheEmptyTermAreDiverged() throws {
        var hello = HelloMessage(terminalId: terminal.nodeId, terminalName: terminal.name, store: "s", lastSeq: 52, epoch: "e")
        (hello.term, hello.lastTerm, hello.termStarts) = (4, 4, TermStarts([1: 1, 4: 48]))
        let answer = answer(to: hello, on: try promotedMaster())
        XCTAssertEqual(answer.keep, 47, "48-52 are term 4 there and term 1026 here: re-queued, not kept")
        XCTAssertFalse(answer.caughtUp, "not caught up from 52 on top of its own entries")
    }

    func testASlaveOfTheSameTermIsCaughtUp() throws {
        var hello = HelloMessage(terminalId: terminal.nodeId, terminalName: terminal.name, store: "s", lastSeq: 52, epoch: "e")
        (hello.term, hello.lastTerm, hello.termStarts) = (1026, 1026, TermStarts([1: 1, 4: 48, 1026: 48]))
        let answer = answer(to: hello, on: try promotedMaster())
        XCTAssertNil(answer.keep)
        XCTAssertTrue(answer.caughtUp)
    }
}
