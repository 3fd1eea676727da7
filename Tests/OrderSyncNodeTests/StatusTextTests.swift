import JSON
import XCTest
import OrderSyncNode
import SyncCore

final class StatusTextTests: XCTestCase {
    private func status(_ json: String) throws -> JSONValue {
        try JSONParser.parse(json)
    }

    func testMasterListsConnectedLinksAndSlavesThatAreAwayWithTheirLag() throws {
        let text = StatusText.render(try status("""
        {"role":"master","store":"shop1","name":"Front","orders":3,"seq":42,"avahi":"running",
         "port":7420,"serviceName":"Front","serviceType":"_pos._tcp","tombstones":1,
         "peers":[{"address":"10.0.0.2:53314","protocol":"ordersync","terminal":"bar-2","terminalId":"t2",
                   "connectedSeconds":12,"lastSeenMillisAgo":200,"ackedSeq":41,"lag":1},
                  {"address":"10.0.0.9:5555","protocol":"storepos","terminal":null,"terminalId":null,
                   "connectedSeconds":3,"lastSeenMillisAgo":1000,"ackedSeq":null,"lag":null}],
         "terminals":[{"terminalId":"t2","name":"bar-2","address":"10.0.0.2:53314","connected":true,
                       "ackedSeq":41,"lag":1,"lastSeen":"2026-11-23T10:52:30+0000"},
                      {"terminalId":"t3","name":"kitchen","address":"10.0.0.3:41000","connected":false,
                       "ackedSeq":30,"lag":12,"lastSeen":"2026-11-23T09:00:00+0000"}]}
        """))
        let lines = text.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.contains("terminals: 2 connected, 2 known slaves, 1 away"), text)
        let bar = try XCTUnwrap(lines.first { $0.contains("bar-2") }, text)
        XCTAssertTrue(bar.hasPrefix("  connected") && bar.contains("10.0.0.2:53314") && bar.contains("acked 41  lag 1"), bar)
        let pos = try XCTUnwrap(lines.first { $0.contains("10.0.0.9:5555") }, text)
        XCTAssertTrue(pos.contains("storepos") && !pos.contains("lag"), pos)
        let kitchen = try XCTUnwrap(lines.first { $0.contains("kitchen") }, text)
        XCTAssertTrue(kitchen.hasPrefix("  away") && kitchen.contains("10.0.0.3:41000")
                      && kitchen.contains("last seen 2026-11-23T09:00:00+0000") && kitchen.contains("lag 12"), kitchen)
        XCTAssertEqual(lines.filter { $0.contains("bar-2") }.count, 1, "a connected slave is listed once: \(text)")
        XCTAssertTrue(lines.contains("tombstones: 1"), text)
    }

    func testAConnectedSlaveThatHasNotAckedYetShowsWhatTheMasterKnowsOfIt() throws {
        let text = StatusText.render(try status("""
        {"role":"master","store":"shop1","name":"Front","orders":3,"seq":42,"avahi":"running",
         "peers":[{"address":"10.0.0.2:53314","protocol":"ordersync","terminal":"bar-2","terminalId":"t2",
                   "connectedSeconds":1,"lastSeenMillisAgo":1250,"ackedSeq":null,"lag":null}],
         "terminals":[{"terminalId":"t2","name":"bar-2","address":"10.0.0.2:53314","connected":true,
                       "ackedSeq":39,"lag":3,"lastSeen":"2026-11-23T10:52:30+0000"}]}
        """))
        let bar = try XCTUnwrap(text.split(separator: "\n").first { $0.contains("bar-2") }, text)
        XCTAssertTrue(bar.contains("last heard 1.2 s ago") || bar.contains("last heard 1.3 s ago"), String(bar))
        XCTAssertTrue(bar.contains("acked 39  lag 3"), String(bar))
        XCTAssertTrue(text.contains("terminals: 1 connected, 1 known slave, 0 away"), text)
    }

    func testSlaveShowsItsMasterLagAndOutbox() throws {
        let text = StatusText.render(try status("""
        {"role":"slave","store":"shop1","name":"bar-2","orders":3,"seq":40,"avahi":"running",
         "master":{"state":"connected","url":"ws://10.0.0.1:7420/","serviceName":"Front"},
         "lag":2,"masterSeq":42,"outbox":5}
        """))
        XCTAssertTrue(text.contains("master:    connected ws://10.0.0.1:7420/ Front"), text)
        XCTAssertTrue(text.contains("lag:       2 (master at 42)"), text)
        XCTAssertTrue(text.contains("outbox:    5 local changes waiting"), text)
    }
}
