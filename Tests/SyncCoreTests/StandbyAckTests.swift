import JSON
import WireTestSupport
import XCTest

@testable import SyncCore

/// An ack's `held`, a broadcast's `ackNow` and the writes that wait for standbys
/// (Docs/PROTOCOL.md 7, "Standby acknowledgements").
final class StandbyAckTests: XCTestCase {
    func testAnAckCarriesHeldAndABadHeldIsRefused() {
        XCTAssertEqual(ClientMessage.encodeAck(seq: 4, outbox: 2, held: 9).text, #"{"type":"ack","seq":4,"outbox":2,"held":9}"#)
        XCTAssertEqual(try ClientMessage.decode(#"{"type":"ack","seq":4,"outbox":2,"held":9}"#).get(), .ack(seq: 4, outbox: 2, held: 9))
        XCTAssertEqual(try ClientMessage.decode(#"{"type":"ack","seq":4,"held":0}"#).get(), .ack(seq: 4, outbox: nil, held: 0))
        // From a slave that does not say (an older build): no held.
        XCTAssertEqual(try ClientMessage.decode(#"{"type":"ack","seq":4}"#).get(), .ack(seq: 4, outbox: nil, held: nil))
        for bad in [
            #"{"type":"ack","seq":1,"held":-1}"#, #"{"type":"ack","seq":1,"held":"3"}"#, #"{"type":"ack","seq":1,"held":1.5}"#,
            #"{"type":"ack","seq":1,"held":null}"#, #"{"type":"ack","seq":1,"held":[]}"#,
        ] {
            guard case .failure(let e) = ClientMessage.decode(bad) else { return XCTFail("accepted \(bad)") }
            XCTAssertEqual(e.code, .invalidMessage, bad)
            XCTAssertTrue(e.message.contains("\"held\" must be an integer of 0 or more"), e.message)
        }
    }

    func testAckNowIsAppendedAsTheLastMemberAndRecognisedThere() throws {
        let broadcast = ServerMessage.applied(
            operation: .create,
            orders: [Order(uuid: "9437C8F5-D742-46CB-9847-737C5809392C", customerName: "A", created: .init(epochMillis: 0))],
            seq: 3, opId: "op", origin: "front", snapshot: nil
        ).encodedBytes()
        XCTAssertFalse(AckNow.isMarked(broadcast))
        let marked = AckNow.marking(broadcast)
        XCTAssertTrue(AckNow.isMarked(marked))
        XCTAssertEqual(AckNow.marking(marked), marked, "marked once")
        let object = try XCTUnwrap(JSONParser.parse(marked).objectValue)
        XCTAssertEqual(object["ackNow"], .bool(true))
        XCTAssertEqual(object.members.last?.key, "ackNow")
        XCTAssertEqual(try ServerMessage.decode(marked).get(), try ServerMessage.decode(broadcast).get(), "the rest reads the same")
        XCTAssertEqual(AckNow.marking("{}".bytes), "{}".bytes)
        XCTAssertFalse(AckNow.isMarked(#"{"ackNow":false}"#.bytes))
    }

    private func standby(_ id: String, held: Int64?) -> MasterEngine.Standby {
        MasterEngine.Standby(peer: id.hashValue, terminalId: id, name: "till-\(id)", held: held)
    }

    func testAWriteWaitsForItsStandbysOrItsDeadline() throws {
        var waits = ReplicationWaits<String, Int>()
        // None connected: answered at once, unreplicated.
        let alone = try XCTUnwrap(waits.add(seq: 1, replicas: 1, standbys: [], deadline: 100, answer: "a"))
        XCTAssertFalse(alone.replicated)
        XCTAssertEqual(alone.wanted, 0)
        // Already held: answered at once, replicated.
        let held = try XCTUnwrap(waits.add(seq: 2, replicas: 1, standbys: [standby("1", held: 2)], deadline: 100, answer: "b"))
        XCTAssertTrue(held.replicated)
        XCTAssertEqual(held.heldBy, ["till-1"])
        // Waits for two of three.
        let three = [standby("1", held: 2), standby("2", held: 2), standby("3", held: nil)]
        XCTAssertNil(waits.add(seq: 3, replicas: 2, standbys: three, deadline: 100, answer: "c"))
        XCTAssertNil(waits.add(seq: 4, replicas: 2, standbys: three, deadline: 50, answer: "d"))
        XCTAssertEqual(waits.count, 2)
        XCTAssertEqual(waits.nextDeadline, 50)
        XCTAssertEqual(waits.heard([standby("1", held: 3), standby("2", held: 2), standby("3", held: 2)]).map(\.answer), [])
        let c = waits.heard([standby("1", held: 3), standby("2", held: 2), standby("3", held: 3)])
        XCTAssertEqual(c.map(\.answer), ["c"])
        XCTAssertEqual(c.first?.heldBy, ["till-1", "till-3"])
        XCTAssertEqual(c.first?.replicated, true)
        // The deadline passes first: unreplicated, with whoever held it.
        XCTAssertEqual(waits.expired(now: 49).count, 0)
        let d = waits.expired(now: 50)
        XCTAssertEqual(d.map(\.answer), ["d"])
        XCTAssertEqual(d.first?.replicated, false)
        XCTAssertEqual(d.first?.heldBy, [], "till-1's 3 is below 4")
        XCTAssertEqual(waits.count, 0)
    }

    func testWhenStandbysLeaveAWriteWaitsOnlyForThoseStillConnected() throws {
        var waits = ReplicationWaits<String, Int>()
        XCTAssertNil(waits.add(seq: 5, replicas: 2, standbys: [standby("1", held: 4), standby("2", held: 4)], deadline: 9, answer: "e"))
        // Till 2 left; till 1 holds it: every connected standby does.
        let e = waits.heard([standby("1", held: 5)])
        XCTAssertEqual(e.map(\.replicated), [true])
        // Every standby left before holding it: it waits for its deadline (one may come back).
        XCTAssertNil(waits.add(seq: 6, replicas: 1, standbys: [standby("1", held: 5)], deadline: 9, answer: "f"))
        XCTAssertEqual(waits.heard([]).count, 0)
        XCTAssertEqual(waits.drain().map(\.replicated), [false])
    }

    /// An election consults voters only: a handheld's copy is no replica a write waits for.
    func testAHandheldIsNotCountedAsAReplica() throws {
        var handheld = standby("h", held: 7)
        handheld.voter = false
        var waits = ReplicationWaits<String, Int>()
        let alone = try XCTUnwrap(waits.add(seq: 7, replicas: 1, standbys: [handheld], deadline: 9, answer: "g"))
        XCTAssertFalse(alone.replicated, "only a handheld is connected: answered at once, unreplicated")
        XCTAssertEqual(alone.wanted, 0)
        // With a voter too, the write waits for the voter, whatever the handheld holds.
        XCTAssertNil(waits.add(seq: 8, replicas: 2, standbys: [handheld, standby("1", held: 7)], deadline: 9, answer: "h"))
        handheld.held = 8
        XCTAssertEqual(waits.heard([handheld, standby("1", held: 7)]).count, 0)
        let h = waits.heard([handheld, standby("1", held: 8)])
        XCTAssertEqual(h.map(\.replicated), [true])
        XCTAssertEqual(h.first?.wanted, 1)
        XCTAssertEqual(h.first?.heldBy, ["till-1"])
    }

    /// A standby whose snapshot is still going out can hold no write before its last part: a
    /// write left waiting only for such standbys is answered at once, unreplicated, instead of
    /// at its deadline; `replicated` means what it meant (Docs/PROTOCOL.md 7.8).
    func testAWriteLeftWaitingOnlyForStandbysReceivingTheirSnapshotIsAnsweredAtOnce() throws {
        var joining = standby("j", held: nil)
        joining.floor = 8
        joining.receivingSnapshot = true
        var waits = ReplicationWaits<String, Int>()
        let alone = try XCTUnwrap(waits.add(seq: 9, replicas: 1, standbys: [joining], deadline: 99, answer: "i"))
        XCTAssertFalse(alone.replicated, "answered at once, unreplicated, not at its deadline")
        XCTAssertEqual(alone.wanted, 1)
        // Beside a live one, waiting for both: once the live one holds it, only the joining one
        // is missing, which cannot hold it yet: unreplicated at once, held by the live one.
        XCTAssertNil(waits.add(seq: 10, replicas: 2, standbys: [joining, standby("1", held: 9)], deadline: 99, answer: "k"))
        XCTAssertEqual(waits.heard([joining, standby("1", held: 9)]).count, 0, "the live one may still hold it")
        let k = waits.heard([joining, standby("1", held: 10)])
        XCTAssertEqual(k.map(\.replicated), [false])
        XCTAssertEqual(k.first?.wanted, 2)
        XCTAssertEqual(k.first?.heldBy, ["till-1"])
        // Waiting for one of them: the live one is enough.
        XCTAssertNil(waits.add(seq: 11, replicas: 1, standbys: [joining, standby("1", held: 10)], deadline: 99, answer: "l"))
        XCTAssertEqual(waits.heard([joining, standby("1", held: 11)]).map(\.replicated), [true])
        // Its snapshot gone out, it switches to it: not waited for until it says it holds it.
        joining.receivingSnapshot = false
        joining.switchingToSnapshot = true
        let switching = try XCTUnwrap(waits.add(seq: 12, replicas: 1, standbys: [joining], deadline: 99, answer: "s"))
        XCTAssertFalse(switching.replicated, "answered at once while it switches")
        // Once its snapshot is in, it is waited for again.
        joining.switchingToSnapshot = false
        XCTAssertNil(waits.add(seq: 12, replicas: 1, standbys: [joining], deadline: 99, answer: "m"))
        joining.held = 12
        XCTAssertEqual(waits.heard([joining]).map(\.replicated), [true])
        XCTAssertEqual(waits.count, 0)
    }
}
