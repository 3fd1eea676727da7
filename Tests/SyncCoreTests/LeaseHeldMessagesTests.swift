import SyncCore
import XCTest

/// The bound on what a master holds while its lease is lapsed (`--auto-failover`): a count and a
/// byte bound over all links; an operation over it is refused (sent again later), and the later
/// operations of its link with it so none overtakes it; a message that is not an operation and
/// must wait behind held ones ends its link instead.
final class LeaseHeldMessagesTests: XCTestCase {
    private let op: [UInt8] = Array(#"{"operation":0,"orders":[],"opId":"x"}"#.utf8)
    private let ack: [UInt8] = Array(#"{"type":"ack","seq":1}"#.utf8)

    func testOperationsAreHeldUpToTheCountThenRefused() {
        var h = LeaseHeldMessages<Int>(mostMessages: 3, mostBytes: 1 << 20)
        XCTAssertEqual(h.offer(ack, isOperation: false, from: 1), .pass, "a link that holds nothing: applied as usual")
        XCTAssertEqual((0..<3).map { _ in h.offer(op, isOperation: true, from: 1) }, [.held, .held, .held])
        XCTAssertEqual(h.held.count, 3)
        XCTAssertEqual(h.bytes, 3 * op.count)
        XCTAssertEqual(h.offer(op, isOperation: true, from: 2), .refuse, "the fourth message does not fit")
        XCTAssertEqual(h.refused, 1)
        XCTAssertEqual(h.held.count, 3, "nothing more is held")
    }

    func testTheByteBoundRefusesAnOperationThatDoesNotFit() {
        var h = LeaseHeldMessages<Int>(mostMessages: 100, mostBytes: 2 * op.count + 5)
        XCTAssertEqual(h.offer(op, isOperation: true, from: 1), .held)
        XCTAssertEqual(h.offer(op, isOperation: true, from: 2), .held)
        XCTAssertEqual(h.offer(op, isOperation: true, from: 3), .refuse)
        XCTAssertEqual(h.bytes, 2 * op.count)
    }

    /// Once one of a link's operations was refused, its later ones are refused too, even when
    /// room was made meanwhile: held, a later one would be applied before the refused one's
    /// retry.
    func testALinksOperationsAfterARefusedOneAreRefusedUntilRelease() {
        var h = LeaseHeldMessages<Int>(mostMessages: 1, mostBytes: 1 << 20)
        XCTAssertEqual(h.offer(op, isOperation: true, from: 1), .held)
        XCTAssertEqual(h.offer(op, isOperation: true, from: 2), .refuse)
        h.ended(1)
        XCTAssertEqual(h.held.count, 0, "room again")
        XCTAssertEqual(h.offer(op, isOperation: true, from: 2), .refuse, "link 2 stays refused")
        XCTAssertEqual(h.offer(op, isOperation: true, from: 3), .held, "another link is held")
        XCTAssertEqual(h.refused, 2)

        XCTAssertEqual(h.release().map(\.session), [3])
        XCTAssertEqual(h.offer(op, isOperation: true, from: 2), .held, "after release link 2 is held again")
        XCTAssertEqual(h.refused, 0)
    }

    /// A non-operation behind a held operation waits with it; when it does not fit, the link is
    /// ended and what it held goes (never acknowledged: still in the terminal's outbox).
    func testAMessageBehindHeldOnesThatDoesNotFitEndsItsLink() {
        var h = LeaseHeldMessages<Int>(mostMessages: 3, mostBytes: 1 << 20)
        XCTAssertEqual(h.offer(op, isOperation: true, from: 1), .held)
        XCTAssertEqual(h.offer(ack, isOperation: false, from: 1), .held, "waits behind the operation")
        XCTAssertEqual(h.offer(op, isOperation: true, from: 2), .held)
        XCTAssertEqual(h.offer(ack, isOperation: false, from: 2), .close)
        XCTAssertEqual(h.held.map(\.session), [1, 1], "link 2's operation went with its link")
        XCTAssertEqual(h.bytes, op.count + ack.count)
        XCTAssertEqual(h.offer(ack, isOperation: false, from: 2), .pass, "a new link holds nothing")
    }

    func testReleaseGivesTheHeldMessagesInArrivalOrder() {
        var h = LeaseHeldMessages<Int>()
        XCTAssertEqual(h.mostMessages, 10_000)
        XCTAssertEqual(h.mostBytes, 16 << 20)
        for s in [2, 1, 2] { XCTAssertEqual(h.offer(op, isOperation: true, from: s), .held) }
        XCTAssertEqual(h.offer(ack, isOperation: false, from: 1), .held)
        XCTAssertEqual(h.release().map(\.session), [2, 1, 2, 1])
        XCTAssertEqual(h.held.count, 0)
        XCTAssertEqual(h.bytes, 0)
        XCTAssertEqual(h.offer(ack, isOperation: false, from: 1), .pass)
    }
}
