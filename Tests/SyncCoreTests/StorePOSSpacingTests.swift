import JSON
import SyncCore
import WireTestSupport
import XCTest

/// What keeps a StorePOS app's concurrent queue from applying two messages about one order the
/// wrong way round: the fences and pauses of its connect sequence, and the spacing of live
/// messages (`Docs/PROTOCOL.md` 4.2.1).
final class StorePOSSpacingTests: XCTestCase {
    private func order(_ uuid: String) -> Order {
        Order(uuid: uuid, customerName: "c", created: OrderTimestamp(epochMillis: 0))
    }

    private func orders(_ text: String) -> [String] {
        let message = try? JSONParser.parse(Array(text.utf8)).objectValue
        return (message?["orders"]?.arrayValue ?? []).compactMap { $0.objectValue?["uuid"]?.stringValue }
    }

    func testMessagesAboutOtherOrdersNeedNoFence() {
        var spacing = StorePOSSpacing(distance: 4)
        XCTAssertEqual(spacing.fencesBefore(naming: ["A"], promises: 1), 0)
        XCTAssertEqual(spacing.fencesBefore(naming: ["B"], promises: 1), 0)
        XCTAssertEqual(spacing.fencesBefore(naming: ["C", "D"], promises: 2), 0)
        XCTAssertEqual(spacing.promises, 4)
    }

    func testAChangeRightAfterAnotherOfTheSameOrderWaitsBehindTheDistance() {
        var spacing = StorePOSSpacing(distance: 4)
        // A Create of three orders: promises 0, 1, 2; each counts as named at the last, 2.
        XCTAssertEqual(spacing.fencesBefore(naming: ["A", "B", "C"], promises: 3), 0)
        // An Update of A next: promise 3 would be 1 after 2; three fences put it at 6, 4 after.
        XCTAssertEqual(spacing.fencesBefore(naming: ["a"], promises: 1), 3, "uuids compared case-insensitively")
        XCTAssertEqual(spacing.promises, 7)
        // Other messages in between count: two promises later, one fence is enough.
        XCTAssertEqual(spacing.fencesBefore(naming: ["X"], promises: 1), 0)
        XCTAssertEqual(spacing.fencesBefore(naming: ["Y"], promises: 1), 0)
        XCTAssertEqual(spacing.fencesBefore(naming: ["A"], promises: 1), 1)
        // Far enough: none.
        for i in 0..<4 { XCTAssertEqual(spacing.fencesBefore(naming: ["Z\(i)"], promises: 1), 0) }
        XCTAssertEqual(spacing.fencesBefore(naming: ["A"], promises: 1), 0)
    }

    func testKeysComputedOnceForAMessageSpaceEveryTerminalAsItsUuidsWould() {
        // The master computes a message's keys once and hands them to each StorePOS terminal.
        XCTAssertEqual(StorePOSSpacing.keys(naming: ["ab-CD"]), StorePOSSpacing.keys(naming: ["AB-cd"]))
        XCTAssertNotEqual(StorePOSSpacing.keys(naming: ["A"]), StorePOSSpacing.keys(naming: ["B"]))
        let messages: [[String]] = [["A", "B"], ["a"], ["C"], ["b"], ["A"], ["D", "E", "F"], ["e"]]
        var byName = StorePOSSpacing(distance: 3)
        var byKeys = StorePOSSpacing(distance: 3)
        let fences = messages.map { byName.fencesBefore(naming: $0, promises: $0.count) }
        XCTAssertEqual(messages.map { byKeys.fencesBefore(keys: StorePOSSpacing.keys(naming: $0), promises: $0.count) }, fences)
        XCTAssertEqual(fences, [0, 2, 0, 0, 0, 0, 2])
        XCTAssertEqual(byKeys.promises, byName.promises)
    }

    /// Long runs, well past the point where the table of recently named orders is pruned (more
    /// than four distances of orders): every message gets the fences a spacing that forgets
    /// nothing would give it, with orders named again soon, late and never.
    func testPruningTheRecentOrdersNeverChangesAFence() {
        var generator = SystemRandomNumberGenerator()
        for distance in [2, 3, 8, 256] {
            var spacing = StorePOSSpacing(distance: distance)
            var promises = 0
            var lastNamed: [Int: Int] = [:]
            var fenced = 0
            for step in 0..<(20 * distance + 500) {
                // From a pool wider than the table's four distances (so it is pruned) in which
                // some orders still come back within the distance.
                let pool = 6 * distance + 2
                let keys = (0..<Int.random(in: 1...3, using: &generator)).map { _ in Int.random(in: 0..<pool, using: &generator) }
                let count = Int.random(in: 1...4, using: &generator)
                var fences = 0
                for key in keys { if let at = lastNamed[key] { fences = max(fences, at + distance - promises) } }
                promises += fences
                for key in keys { lastNamed[key] = promises + count - 1 }
                promises += count
                XCTAssertEqual(spacing.fencesBefore(keys: keys, promises: count), fences, "distance \(distance), message \(step)")
                fenced += fences
            }
            XCTAssertEqual(spacing.promises, promises)
            XCTAssertGreaterThan(fenced, 0, "some messages came back within the distance")
        }
    }

    func testARemoveIsOnePromiseAndDistanceZeroSpacesNothing() {
        XCTAssertEqual(StorePOSSpacing.promises(of: .remove, orders: 9), 1)
        XCTAssertEqual(StorePOSSpacing.promises(of: .create, orders: 9), 9)
        var none = StorePOSSpacing(distance: 0)
        XCTAssertEqual(none.fencesBefore(naming: ["A"], promises: 1), 0)
        XCTAssertEqual(none.fencesBefore(naming: ["A"], promises: 1), 0)
    }

    func testTheConnectSequencePausesAfterEachFenceAndOnlyThenGoesOn() {
        var stream = SnapshotStream(
            orders: ["A", "B", "C"].map(order), seq: 7, chunk: 2, epoch: "e", storeId: "s", sendsReady: false,
            clearing: ["A", "B", "C", "R"], fence: 3)
        XCTAssertEqual(stream.parts, 4 + 3 + 2 + 3)
        var sent: [String] = []
        while let part = stream.nextPart() { sent.append(part.text) }
        XCTAssertEqual(sent.count, 7, "the Removes and the first fence, then a pause")
        XCTAssertEqual(sent.prefix(4).map(orders), [["A"], ["B"], ["C"], ["R"]])
        XCTAssertEqual(sent.suffix(3).map(orders), [[], [], []])
        XCTAssertTrue(sent.allSatisfy { $0.contains(#""operation":2"#) && $0.contains(#""snapshot":"#) })
        XCTAssertTrue(stream.isSettling)
        XCTAssertFalse(stream.isComplete)
        stream.settle()
        while let part = stream.nextPart() { sent.append(part.text) }
        XCTAssertEqual(sent.count, 12)
        XCTAssertEqual(sent[7...8].map(orders), [["A", "B"], ["C"]])
        XCTAssertTrue(sent[7].contains(#""operation":0"#))
        XCTAssertEqual(sent.suffix(3).map(orders), [[], [], []])
        XCTAssertTrue(stream.isSettling, "a pause before what was held meanwhile")
        XCTAssertFalse(stream.isComplete)
        stream.settle()
        XCTAssertTrue(stream.isComplete)
        XCTAssertNil(stream.nextPart())
        XCTAssertTrue(sent.last?.contains(#""part":12,"parts":12"#) == true, sent.last ?? "")
    }

    func testWithoutAFenceThereIsNoPause() {
        var stream = SnapshotStream(
            orders: ["A"].map(order), seq: 1, chunk: 2, epoch: "e", storeId: "s", sendsReady: true, clearing: ["A"])
        XCTAssertEqual(stream.parts, 2)
        XCTAssertNotNil(stream.nextPart())
        XCTAssertFalse(stream.isSettling)
        XCTAssertNotNil(stream.nextPart())
        XCTAssertTrue(stream.isComplete)
    }
}
