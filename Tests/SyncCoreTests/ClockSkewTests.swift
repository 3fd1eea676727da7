import JSON
import SyncCore
import XCTest

/// Clock sense (`Docs/PROTOCOL.md` 4.8): the estimates, the warning's state machine, the
/// correction of `created`, and the wire members that carry the clocks.
final class ClockSkewTests: XCTestCase {
    /// Cristian's estimate is off by at most half the round trip, wherever in it the terminal
    /// read its clock.
    func testARoundTripSampleIsWithinHalfTheRoundTrip() throws {
        let offset: Int64 = 600_000
        for read in stride(from: Int64(1_000), through: 1_100, by: 10) {
            let s = try XCTUnwrap(ClockSample.roundTrip(sentAt: 1_000, peerTime: read + offset, receivedAt: 1_100))
            XCTAssertEqual(s.roundTripMillis, 100)
            XCTAssertLessThanOrEqual(abs(s.offsetMillis - offset), 50, "read at \(read)")
        }
        let middle = try XCTUnwrap(ClockSample.roundTrip(sentAt: 1_000, peerTime: 1_050 - 42_000, receivedAt: 1_100))
        XCTAssertEqual(middle.offsetMillis, -42_000, "a terminal behind has a negative offset")
    }

    func testARoundTripThatWentBackwardsOrTookTooLongIsNoSample() {
        XCTAssertNil(ClockSample.roundTrip(sentAt: 2_000, peerTime: 5_000, receivedAt: 1_999), "the master's clock was set back")
        XCTAssertNil(ClockSample.roundTrip(sentAt: 0, peerTime: 5_000, receivedAt: ClockSample.maxRoundTripMillis + 1))
        XCTAssertNotNil(ClockSample.roundTrip(sentAt: 0, peerTime: 5_000, receivedAt: ClockSample.maxRoundTripMillis))
        XCTAssertNil(ClockSample.roundTrip(sentAt: .min, peerTime: 0, receivedAt: .max), "overflow is no sample, not a trap")
        XCTAssertNil(ClockSample.roundTrip(sentAt: 0, peerTime: .min, receivedAt: 10))
    }

    /// One way, the sign depends on whose clock stamped the message.
    func testOneWaySamplesFromEitherSide() {
        // A hello stamped 10:00:00 by a till 10 min ahead reaches the master at 09:50:00.005.
        XCTAssertEqual(ClockSample.oneWay(sentAt: 600_000, receivedAt: 5, senderIsTerminal: true)?.offsetMillis, 599_995)
        // A heartbeat stamped 09:50:00 by the master reaches that till at 10:00:00.005.
        XCTAssertEqual(ClockSample.oneWay(sentAt: 0, receivedAt: 600_005, senderIsTerminal: false)?.offsetMillis, 600_005)
        XCTAssertNil(ClockSample.oneWay(sentAt: .min, receivedAt: 1, senderIsTerminal: true))
    }

    /// Past 30 s it warns once, stays warned above 25 s, and says when it is back.
    func testTheWarningHasABoundAndComesBackBelowIt() {
        var skew = ClockSkew()
        XCTAssertNil(skew.offsetMillis)
        XCTAssertFalse(skew.isSkewed)
        XCTAssertEqual(skew.measured(ClockSample(offsetMillis: 1_200)), .none)
        XCTAssertEqual(skew.offsetMillis, 1_200)
        XCTAssertEqual(skew.measured(ClockSample(offsetMillis: ClockSkew.boundMillis)), .none, "at the bound is within it")
        XCTAssertEqual(skew.measured(ClockSample(offsetMillis: 600_000)), .skewed(offsetMillis: 600_000))
        XCTAssertTrue(skew.isSkewed)
        XCTAssertEqual(skew.measured(ClockSample(offsetMillis: 599_000)), .none, "warned once, not on every sample")
        XCTAssertEqual(skew.measured(ClockSample(offsetMillis: 28_000)), .none, "between 25 s and 30 s it stays warned")
        XCTAssertTrue(skew.isSkewed)
        XCTAssertEqual(skew.measured(ClockSample(offsetMillis: 200)), .recovered(offsetMillis: 200))
        XCTAssertFalse(skew.isSkewed)
        XCTAssertEqual(skew.measured(ClockSample(offsetMillis: -30_001)), .skewed(offsetMillis: -30_001), "behind counts too")
    }

    /// `created` on the master's clock: the local clock less the offset in whole seconds.
    func testMastersTimeTakesOffTheOffsetInWholeSeconds() {
        var skew = ClockSkew()
        XCTAssertEqual(skew.mastersTime(atLocal: 1_000_000), 1_000_000, "unmeasured: its own clock")
        _ = skew.measured(ClockSample(offsetMillis: 600_400))
        XCTAssertEqual(skew.mastersTime(atLocal: 1_000_000), 400_000)
        _ = skew.measured(ClockSample(offsetMillis: -600_600))
        XCTAssertEqual(skew.mastersTime(atLocal: 1_000_000), 1_601_000)
        _ = skew.measured(ClockSample(offsetMillis: 400))
        XCTAssertEqual(skew.mastersTime(atLocal: 1_000_000), 1_000_000, "within half a second: as it is")
    }

    /// hello `time`, heartbeat `time`/`clockOffset`, ack `echo`/`time`: encoded, decoded, and
    /// ignored by a reader that does not know them.
    func testTheClockMembersOnTheWire() throws {
        var hello = HelloMessage(terminalId: "t", terminalName: "bar", store: "s", lastSeq: 3, epoch: "e")
        hello.time = 1_750_000_000_123
        XCTAssertTrue(hello.encoded().contains("\"time\":1750000000123"))
        XCTAssertEqual(try ClientMessage.decode(hello.encodedBytes()).get(), .hello(hello))
        let clock = AckClock(echo: 10, time: 20)
        let ack = ClientMessage.encodeAck(seq: 4, outbox: 0, held: 4, clock: clock)
        XCTAssertEqual(try ClientMessage.decode(ack).get(), .ack(seq: 4, outbox: 0, held: 4, clock: clock))
        XCTAssertEqual(try ClientMessage.decode(#"{"type":"ack","seq":4}"#).get(), .ack(seq: 4, outbox: nil, held: nil, clock: nil))
        for bad in [#"{"type":"ack","seq":4,"echo":1}"#, #"{"type":"ack","seq":4,"echo":1,"time":"now"}"#] {
            guard case .failure(let e) = ClientMessage.decode(bad) else { return XCTFail("accepted \(bad)") }
            XCTAssertEqual(e.code, .invalidMessage)
            XCTAssertTrue(e.message.contains("\"echo\" and \"time\""), e.message)
        }
        let beat = HeartbeatClock(time: 99, clockOffset: -600_000).heartbeatBytes(seq: 7)
        XCTAssertEqual(try ServerMessage.decode(beat).get(), .heartbeat(seq: 7), "an older slave reads a heartbeat")
        let object = try JSONParser.parse(beat).objectValue
        XCTAssertEqual(HeartbeatClock(object), HeartbeatClock(time: 99, clockOffset: -600_000))
        XCTAssertNil(HeartbeatClock(try JSONParser.parse(ServerMessage.heartbeat(seq: 7).encodedBytes()).objectValue))
    }
}
