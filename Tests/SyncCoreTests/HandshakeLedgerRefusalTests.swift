import XCTest

@testable import SyncCore

/// Refusals before any handshake work (a plain client the master does not admit, an address
/// over its caps, an upgrade refused or too slow) share an address's allowance of full lines
/// with its handshake failures and are all counted in its summary (Docs/SECURITY.md, "Logged as
/// a summary").
final class HandshakeLedgerRefusalTests: XCTestCase {
    func testRefusalsGetTheAllowanceOfFullLinesThenAreCountedInTheSummary() {
        var ledger = HandshakeLedger(linesPerInterval: 5)
        var full = 0
        for _ in 0..<1000 {
            if ledger.refusedLogsInFull("10.0.0.9") { full += 1 }
        }
        XCTAssertEqual(full, 5)
        // The same allowance as its handshake failures: none left for one of those.
        ledger.started("10.0.0.9")
        XCTAssertFalse(ledger.logsFailureInFull("10.0.0.9"))
        ledger.failed("10.0.0.9")
        // Another address keeps its own allowance.
        XCTAssertTrue(ledger.refusedLogsInFull("10.0.0.2"))
        let summaries = ledger.endInterval()
        XCTAssertEqual(summaries.map(\.host), ["10.0.0.2", "10.0.0.9"])
        var expected = HandshakeLedger.Counts()
        expected.started = 1
        expected.failed = 1
        expected.refused = 1000
        expected.unlogged = 996
        XCTAssertEqual(summaries.last?.counts, expected)
        XCTAssertEqual(summaries.first?.counts.refused, 1)
        XCTAssertEqual(summaries.first?.counts.unlogged, 0)
        // A new interval: the allowance is back.
        XCTAssertTrue(ledger.refusedLogsInFull("10.0.0.9"))
    }
}
