import Foundation
import JSON
import SyncCore
import XCTest

@testable import OrderStore

/// Clock sense through both engines on their SQLite stores (`Docs/PROTOCOL.md` 4.8): a till
/// whose clock is 10 minutes ahead is measured by the master from its hello and from a
/// heartbeat's round trip, both sides warn, and the orders it takes are stamped on the
/// master's clock.
final class ClockSenseEngineTests: StoreTestCase {
    private let terminal = AuthenticatedTerminal(nodeId: "TILL-0001-AAAA", name: "till-3")
    /// The master's clock at the start; the till's runs `ahead` milliseconds in front of it.
    private let start: Int64 = 1_750_000_000_000
    private let ahead: Int64 = 600_000

    private func sends(_ actions: [MasterEngine.Action], to peer: Int) -> [[UInt8]] {
        actions.compactMap {
            switch $0 {
            case .send(let p, let bytes) where p == peer: return bytes
            case .broadcast(let bytes, let peers) where peers.contains(peer): return bytes
            default: return nil
            }
        }
    }

    private func logs(_ actions: [MasterEngine.Action]) -> [EngineLog] {
        actions.compactMap { if case .log(let l) = $0 { return l } else { return nil } }
    }

    private func logs(_ actions: [SlaveEngine.Action]) -> [EngineLog] {
        actions.compactMap { if case .log(let l) = $0 { return l } else { return nil } }
    }

    /// A master and a till joined through its hello, sent 5 ms before the master reads it.
    private func joined() throws -> (MasterEngine, SlaveEngine, [EngineLog]) {
        let master = try MasterEngine(store: SQLiteMasterStore(db: .inMemory()), storeId: "s", epoch: "e")
        let slave = try SlaveEngine(
            store: SQLiteSlaveStore(db: .inMemory()), terminalId: terminal.nodeId, terminalName: terminal.name, configuredStore: "s")
        _ = master.peerConnected(1, address: "10.0.0.3:5000", terminal: terminal)
        var said: [EngineLog] = []
        for case .send(let hello) in slave.linkOpened(now: start + ahead) {
            XCTAssertTrue(String(decoding: hello, as: UTF8.self).contains("\"time\":\(start + ahead)"))
            let answer = master.received(hello, from: 1, now: start + 5)
            said += logs(answer)
            for bytes in sends(answer, to: 1) { _ = slave.received(bytes, now: start + ahead + 6) }
        }
        XCTAssertEqual(slave.link, .live)
        return (master, slave, said)
    }

    func testATillTenMinutesAheadIsMeasuredWarnedAboutAndItsOrdersStampedOnTheMastersClock() throws {
        let (master, slave, helloLogs) = try joined()
        // The hello alone: one way, off by its 5 ms on the wire.
        XCTAssertEqual(master.peers[1]?.clock.offsetMillis, ahead - 5)
        let warning = try XCTUnwrap(helloLogs.first { $0.event == "clock.skewed" }, "\(helloLogs)")
        XCTAssertEqual(warning.level, .warning)
        XCTAssertTrue(warning.metadata.contains { $0 == ("terminal", "till-3") } && warning.metadata.contains { $0.0 == "clock.offset_ms" })
        // A heartbeat 10 s later: the till answers 20 ms after it left, the answer is back 40 ms after.
        let sent = start + 10_000
        let beat = try XCTUnwrap(master.heartbeat(for: 1, now: sent))
        let text = String(decoding: beat, as: UTF8.self)
        XCTAssertTrue(text.contains("\"time\":\(sent)") && text.contains("\"clockOffset\":\(ahead - 5)"), text)
        let answered = slave.received(beat, now: sent + ahead + 20)
        XCTAssertEqual(slave.clock.offsetMillis, ahead - 5, "the till takes the master's estimate")
        XCTAssertEqual(logs(answered).map(\.event), ["clock.skewed"])
        let acks = answered.compactMap { action -> [UInt8]? in if case .send(let b) = action { return b } else { return nil } }
        XCTAssertEqual(acks.count, 1)
        guard case .success(.ack(_, _, _, let clock?)) = ClientMessage.decode(acks[0]) else { return XCTFail("no clock in \(acks)") }
        XCTAssertEqual(clock, AckClock(echo: sent, time: sent + ahead + 20))
        XCTAssertEqual(logs(master.received(acks[0], from: 1, now: sent + 40)).map(\.event), [], "already warned")
        XCTAssertEqual(master.peers[1]?.clock.sample, ClockSample(offsetMillis: ahead, roundTripMillis: 40))
        // An order the till takes at 10:00:00.700 by its clock is stamped 09:50:00 (the master's).
        let taken = start + ahead + 60_700
        let uuid = "9437c8f5-d742-46cb-9847-000000000001"
        let create = OperationMessage(operation: .create, orders: [.object(JSONObject([("uuid", .string(uuid))]))])
        let (write, _) = slave.localWrite(create, opId: "op-1", now: taken)
        XCTAssertNil(write.failure)
        XCTAssertEqual(try slave.store.order(uuid: uuid)?.created.epochMillis, start + 60_000)
        // A `created` the caller gives is its own, kept as it is.
        let given = "9437c8f5-d742-46cb-9847-000000000002"
        let own = OperationMessage(
            operation: .create,
            orders: [.object(JSONObject([("uuid", .string(given)), ("created", .string("2016-01-12T21:35:16+0800"))]))])
        _ = slave.localWrite(own, opId: "op-2", now: taken)
        XCTAssertEqual(try slave.store.order(uuid: given)?.created.storePOSText, "2016-01-12T21:35:16+0800")
    }

    /// The clock set right: the next round trip lifts the warning on both sides.
    func testAClockSetRightIsNoLongerWarnedAbout() throws {
        let (master, slave, _) = try joined()
        let beat = try XCTUnwrap(master.heartbeat(for: 1, now: start + 10_000))
        // The till's clock was corrected meanwhile: it answers on the master's time.
        let answered = slave.received(beat, now: start + 10_010)
        guard case .send(let ack)? = answered.last else { return XCTFail("no ack: \(answered)") }
        XCTAssertEqual(logs(master.received(ack, from: 1, now: start + 10_020)).map(\.event), ["clock.recovered"])
        XCTAssertEqual(master.peers[1]?.clock.isSkewed, false)
        XCTAssertEqual(master.peers[1]?.clock.offsetMillis, 0)
        let next = try XCTUnwrap(master.heartbeat(for: 1, now: start + 20_000))
        XCTAssertEqual(logs(slave.received(next, now: start + 20_001)).map(\.event), ["clock.recovered"])
        XCTAssertEqual(slave.clock.offsetMillis, 0)
    }

    /// Without a clock (`now` not given) the heartbeat is as before, and a slave that answers
    /// it sends no clock members.
    func testAHeartbeatWithoutTimeIsAnsweredWithoutClock() throws {
        let (master, slave, _) = try joined()
        let beat = try XCTUnwrap(master.heartbeat(for: 1))
        XCTAssertEqual(String(decoding: beat, as: UTF8.self), #"{"type":"heartbeat","seq":0}"#)
        guard case .send(let ack)? = slave.received(beat, now: start).last,
            case .success(.ack(_, _, _, let clock)) = ClientMessage.decode(ack)
        else { return XCTFail("no ack") }
        XCTAssertNil(clock)
    }
}
