import XCTest

@testable import SyncCore

/// The master's admission before authentication: the pre-authentication budget, the handshake
/// rate per address and in total, and the per-address ledger behind the log's summaries.
final class AdmissionTests: XCTestCase {
    private func budget(maxConnections: Int = 1024, reserved: Int = 64, memory: Int = 16 << 20) -> PreAuthenticationBudget {
        PreAuthenticationBudget(
            memoryBytes: memory, headBytes: 8192, messageBytes: 1024, maxConnections: maxConnections,
            reservedForAuthenticated: reserved)
    }

    // MARK: - Budget

    func testTheBudgetCapsUnauthenticatedConnectionsByMemoryWhateverTheAddresses() {
        let b = budget(maxConnections: 100_000)
        XCTAssertEqual(b.bytesPerConnection, 8192 + 1024 + PreAuthenticationBudget.connectionOverheadBytes)
        XCTAssertEqual(b.maxPreAuthenticated, (16 << 20) / b.bytesPerConnection)
        XCTAssertLessThanOrEqual(b.heldBytesBound, 16 << 20)
        XCTAssertEqual(b.admit(preAuthenticated: b.maxPreAuthenticated - 1, total: 5000), .admit)
        XCTAssertEqual(b.admit(preAuthenticated: b.maxPreAuthenticated, total: 5000), .admitEvictingOldest)
    }

    func testUnauthenticatedConnectionsNeverTakeTheReservedSlots() {
        let b = budget(maxConnections: 1024, reserved: 64)
        XCTAssertEqual(b.maxPreAuthenticated, 960)
        // 960 unauthenticated: the next one takes the oldest one's slot, the reserve stays free.
        XCTAssertEqual(b.admit(preAuthenticated: 960, total: 960), .admitEvictingOldest)
        // Authenticated terminals use the reserve; when every slot is held the oldest
        // unauthenticated connection gives way, and with none left the new one is refused.
        XCTAssertEqual(b.admit(preAuthenticated: 0, total: 1023), .admit)
        XCTAssertEqual(b.admit(preAuthenticated: 10, total: 1024), .admitEvictingOldest)
        XCTAssertEqual(b.admit(preAuthenticated: 0, total: 1024), .refuse)
    }

    func testATinyBudgetStillAdmitsOne() {
        let b = budget(maxConnections: 1, reserved: 5, memory: 0)
        XCTAssertEqual(b.reservedForAuthenticated, 0)
        XCTAssertEqual(b.maxPreAuthenticated, 1)
        XCTAssertEqual(b.admit(preAuthenticated: 0, total: 0), .admit)
    }

    // MARK: - Rate

    func testEachAddressHasItsBurstThenItsRate() {
        var limiter = HandshakeRateLimiter(
            perAddress: RateLimit(operationsPerSecond: 2, burst: 10), total: RateLimit(operationsPerSecond: 1000, burst: 1000),
            now: 0)
        for _ in 0..<10 { XCTAssertNil(limiter.begin("10.0.0.9", now: 0)) }
        XCTAssertFalse(limiter.hasHandshakeLeft("10.0.0.9", now: 0))
        XCTAssertEqual(limiter.begin("10.0.0.9", now: 0), .address)
        XCTAssertEqual(limiter.begin("10.0.0.9", now: 499), .address, "2 per second: one every 500 ms")
        XCTAssertTrue(limiter.hasHandshakeLeft("10.0.0.9", now: 500))
        XCTAssertNil(limiter.begin("10.0.0.9", now: 500))
        // Another address is not affected, and asking takes nothing.
        XCTAssertTrue(limiter.hasHandshakeLeft("10.0.0.10", now: 500))
        XCTAssertNil(limiter.begin("10.0.0.10", now: 500))
    }

    func testTheTotalLimitHoldsAcrossAddressesAndATryRefusedInTotalCostsItsAddress() {
        var limiter = HandshakeRateLimiter(
            perAddress: RateLimit(operationsPerSecond: 2, burst: 10), total: RateLimit(operationsPerSecond: 32, burst: 64), now: 0)
        var started = 0
        var refusedInTotal = 0
        var refusedForAddress = 0
        // 16 addresses, 12 tries each at once: the total burst of 64 admits 64, each address
        // then spends its own 10 on tries refused in total, and is refused on its own.
        for n in 0..<16 {
            for _ in 0..<12 {
                switch limiter.begin("10.0.1.\(n)", now: 0) {
                case nil: started += 1
                case .total?: refusedInTotal += 1
                case .address?: refusedForAddress += 1
                }
            }
        }
        XCTAssertEqual(started, 64)
        XCTAssertEqual(refusedInTotal, 160 - 64)
        XCTAssertEqual(refusedForAddress, 16 * 2)
        for n in 0..<16 { XCTAssertFalse(limiter.hasHandshakeLeft("10.0.1.\(n)", now: 0)) }
        // One second later each address has 2 tokens again, and all together 32 start.
        var later = 0
        for n in 0..<16 {
            for _ in 0..<2 where limiter.begin("10.0.1.\(n)", now: 1000) == nil { later += 1 }
        }
        XCTAssertEqual(later, 32)
        XCTAssertEqual(limiter.begin("10.0.9.9", now: 1000), .total, "a new address too waits for the total")
    }

    func testFullBucketsAreForgotten() {
        var limiter = HandshakeRateLimiter(
            perAddress: RateLimit(operationsPerSecond: 2, burst: 10), total: RateLimit(operationsPerSecond: 1000, burst: 1000),
            now: 0, trackedAddressesBeforePruning: 100)
        for n in 0..<100 { XCTAssertNil(limiter.begin("10.0.2.\(n)", now: 0)) }
        XCTAssertEqual(limiter.trackedAddresses, 100)
        // Half a second later each bucket is full again: the 101st address prunes them.
        XCTAssertNil(limiter.begin("10.0.3.1", now: 500))
        XCTAssertEqual(limiter.trackedAddresses, 1)
    }

    // MARK: - Ledger

    func testAFloodingAddressGetsAFewFullLinesThenOneSummaryPerInterval() {
        var ledger = HandshakeLedger(linesPerInterval: 5)
        var full = 0
        for _ in 0..<200 {
            ledger.started("10.0.0.9")
            if ledger.logsFailureInFull("10.0.0.9") { full += 1 }
            ledger.failed("10.0.0.9")
        }
        for _ in 0..<1000 { ledger.refused("10.0.0.9") }
        ledger.started("10.0.0.2")
        ledger.succeeded("10.0.0.2")
        XCTAssertEqual(full, 5)
        let summaries = ledger.endInterval()
        XCTAssertEqual(summaries.map(\.host), ["10.0.0.9"], "a terminal that only succeeded gets no line")
        var expected = HandshakeLedger.Counts()
        expected.started = 200
        expected.failed = 200
        expected.refused = 1000
        expected.unlogged = 1195
        XCTAssertEqual(summaries.first?.counts, expected)
        XCTAssertTrue(ledger.isEmpty)
        // A new interval: the allowance of full lines is back.
        XCTAssertTrue(ledger.logsFailureInFull("10.0.0.9"))
    }
}
