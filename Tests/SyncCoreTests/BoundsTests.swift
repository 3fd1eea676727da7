import JSON
import XCTest

@testable import SyncCore

/// Limits on what a peer may send: members per object, bytes per order, and the token bucket
/// behind the per-terminal rate limit.
final class BoundsTests: XCTestCase {
    private let uuid = "6f1c2a0e-6a57-4d1c-9a4e-1f1b2c3d4e5f"

    private func order(extraMembers: Int, valueBytes: Int = 8) -> JSONValue {
        var o = JSONObject()
        o["uuid"] = .string(uuid)
        o["customerName"] = .string("Ann")
        for n in 0..<extraMembers { o["x\(n)"] = .string(String(repeating: "v", count: valueBytes)) }
        return .object(o)
    }

    func testAMessageWithSixtyThousandMembersIsTooLarge() {
        var text = "{\"operation\":0,\"orders\":[{\"uuid\":\"\(uuid)\""
        for n in 0..<60_000 { text += ",\"m\(n)\":0" }
        text += "}]}"
        guard case .failure(let e) = ClientMessage.decode(text) else { return XCTFail("accepted") }
        XCTAssertEqual(e.code, .tooLarge)
        XCTAssertTrue(e.message.contains("more than 256 members"), e.message)
    }

    func testAnOrderOver16KiBIsRefusedAloneAndTheOthersApply() {
        let big = order(extraMembers: 100, valueBytes: 200) // about 21 KB
        XCTAssertGreaterThan(big.serialized().utf8.count, OperationPlanner.maxOrderBytes)
        let small: JSONValue = .object(
            JSONObject([("uuid", .string("7f1c2a0e-6a57-4d1c-9a4e-1f1b2c3d4e5f")), ("customerName", .string("Bo"))]))
        let plan = OperationPlanner.plan(
            OperationMessage(operation: .create, orders: [big, small]), now: OrderTimestamp(epochMillis: 0), lookup: { _ in nil })
        XCTAssertEqual(plan.errors.map(\.code), [.orderTooLarge])
        XCTAssertEqual(plan.errors.first?.index, 0)
        XCTAssertEqual(plan.errors.first?.uuid, uuid)
        XCTAssertEqual(plan.changes.map(\.order.customerName), ["Bo"])
    }

    func testAnOrderJustUnderTheLimitIsAccepted() {
        let fits = order(extraMembers: 50, valueBytes: 200) // about 10.6 KB
        XCTAssertLessThan(fits.serialized().utf8.count, OperationPlanner.maxOrderBytes)
        let plan = OperationPlanner.plan(
            OperationMessage(operation: .create, orders: [fits]), now: OrderTimestamp(epochMillis: 0), lookup: { _ in nil })
        XCTAssertEqual(plan.errors, [])
        XCTAssertEqual(plan.changes.count, 1)
    }

    func testAnUpdateThatWouldGrowAnOrderPast16KiBIsRefused() throws {
        let stored = try OrderFields.newOrder(
            from: order(extraMembers: 50, valueBytes: 200).objectValue!, index: 0, now: OrderTimestamp(epochMillis: 0))
        var more = JSONObject()
        more["uuid"] = .string(uuid)
        for n in 0..<50 { more["y\(n)"] = .string(String(repeating: "w", count: 200)) }
        XCTAssertLessThan(JSONValue.object(more).serialized().utf8.count, OperationPlanner.maxOrderBytes)
        let plan = OperationPlanner.plan(
            OperationMessage(operation: .update, orders: [.object(more)]), now: OrderTimestamp(epochMillis: 0),
            lookup: { _ in stored })
        XCTAssertEqual(plan.errors.map(\.code), [.orderTooLarge])
        XCTAssertTrue(plan.changes.isEmpty)
    }

    func testTheTokenBucketAllowsTheBurstThenTheSustainedRate() {
        let limit = RateLimit(operationsPerSecond: 200, burst: 1000)
        var bucket = TokenBucket(limit: limit, now: 10_000)
        for _ in 0..<1000 { XCTAssertTrue(bucket.take(now: 10_000)) }
        XCTAssertFalse(bucket.take(now: 10_000), "the burst is spent")
        XCTAssertEqual(bucket.millisUntilFull(now: 10_000), 5000)
        XCTAssertFalse(bucket.take(now: 10_004), "less than one token in 4 ms at 200/s")
        XCTAssertTrue(bucket.take(now: 10_005), "one token every 5 ms")
        // One second later: 200 more, not 201.
        var taken = 0
        while bucket.take(now: 11_005) { taken += 1 }
        XCTAssertEqual(taken, 200)
        XCTAssertFalse(bucket.isFull(now: 11_005))
        XCTAssertTrue(bucket.isFull(now: 16_005))
    }

    func testAClockGoingBackRefillsNothing() {
        var bucket = TokenBucket(limit: RateLimit(operationsPerSecond: 10, burst: 2), now: 1_000)
        XCTAssertTrue(bucket.take(now: 1_000))
        XCTAssertTrue(bucket.take(now: 1_000))
        XCTAssertFalse(bucket.take(now: 0))
        XCTAssertFalse(bucket.take(now: 1_050))
        XCTAssertTrue(bucket.take(now: 1_100))
    }

    func testAByteBucketTakesWholeMessagesOrNothing() {
        var bucket = TokenBucket(allowance: Allowance(perSecond: 1_048_576, capacity: 4_194_304), now: 0)
        for _ in 0..<4 { XCTAssertTrue(bucket.take(Double(1 << 20), now: 0)) }
        XCTAssertFalse(bucket.take(1, now: 0), "4 MiB spent")
        XCTAssertFalse(bucket.take(Double(1 << 20), now: 999), "a MiB needs a whole second back")
        XCTAssertEqual(bucket.tokens, 999 * 1_048.576, accuracy: 0.01, "a refused take costs nothing")
        XCTAssertTrue(bucket.holds(Double(1 << 20), now: 1_000))
        XCTAssertEqual(bucket.millisUntil(holding: Double(2 << 20), now: 1_000), 1_000)
        XCTAssertEqual(bucket.millisUntilFull(now: 1_000), 3_000)
        XCTAssertTrue(bucket.take(Double(1 << 20), now: 1_000))
    }

    func testABudgetChargedAfterwardsOwesAndRecoversAtItsRate() {
        // 3,600 bytes an hour: one a second.
        var budget = TokenBucket(allowance: Allowance(perSecond: 1, capacity: 3_600), now: 0)
        budget.charge(5_000, now: 0)
        XCTAssertEqual(budget.tokens, -1_400, "a cost known only afterwards is owed")
        XCTAssertFalse(budget.holds(1, now: 1_400_000), "nothing until the debt is paid")
        XCTAssertTrue(budget.holds(1, now: 1_401_000))
        XCTAssertEqual(budget.millisUntil(holding: 60, now: 1_400_000), 60_000)
        XCTAssertEqual(budget.millisUntil(holding: 1e9, now: 0), 5_000_000, "never beyond full")
    }

    func testARateBelowOnePerSecondIsKept() {
        var snapshots = TokenBucket(allowance: Allowance(perSecond: 1.0 / 15, capacity: 4), now: 0)
        for _ in 0..<4 { XCTAssertTrue(snapshots.take(now: 0)) }
        XCTAssertEqual(snapshots.millisUntil(holding: 1, now: 10_000), 5_000)
        XCTAssertFalse(snapshots.take(now: 14_999))
        XCTAssertTrue(snapshots.take(now: 15_000), "one every 15 s")
        XCTAssertFalse(snapshots.take(now: 15_000))
    }

    func testRefusalLinesAreSummarisedPerSourceAndMinute() {
        var summary = RefusalLogSummary(windowMillis: 60_000, fullLines: 3)
        let logged = (0..<1_000).filter { n in
            summary.note("message.rejected", source: "address 10.0.0.9", reason: "r\(n)", now: Int64(n))
        }
        XCTAssertEqual(logged, [0, 1, 2], "the first three in full, the rest counted")
        XCTAssertTrue(summary.note("message.rejected", source: "address 10.0.0.7", reason: "x", now: 1_000), "another source has its own")
        XCTAssertTrue(summary.note("peer.rate_limited", source: "address 10.0.0.9", reason: "x", now: 1_000), "another kind too")
        XCTAssertEqual(summary.due(now: 59_999), [], "nothing before the minute is over")
        XCTAssertFalse(summary.hasPending)
        XCTAssertEqual(
            summary.due(now: 60_000),
            [RefusalLogSummary.Due(event: "message.rejected", source: "address 10.0.0.9", count: 997, sinceMillis: 0, lastReason: "r999")])
        XCTAssertEqual(summary.due(now: 60_001), [], "one summary per window; quiet windows say nothing")
        // A new window after the minute: in full again, and the previous window's summary comes due.
        for n in 0..<5 { _ = summary.note("message.rejected", source: "address 10.0.0.9", reason: "s", now: 70_000 + Int64(n)) }
        XCTAssertTrue(summary.note("message.rejected", source: "address 10.0.0.9", reason: "t", now: 130_000))
        XCTAssertTrue(summary.hasPending)
        XCTAssertEqual(summary.due(now: 130_000).map(\.count), [2])
    }

    func testRateLimitedErrorsCarryTheirHintOnTheWire() {
        var e = WireError(.rateLimited, "slow down")
        e.retryAfterMillis = 4321
        let text = ServerMessage.error(e, opId: "op-9", operation: .create).encoded()
        XCTAssertTrue(text.contains("\"code\":\"rate_limited\""), text)
        XCTAssertTrue(text.contains("\"retryAfterMs\":4321"), text)
        guard case .success(.error(let back, let opId, _)) = ServerMessage.decode(text) else { return XCTFail(text) }
        XCTAssertEqual(back.retryAfterMillis, 4321)
        XCTAssertEqual(opId, "op-9")
    }
}
