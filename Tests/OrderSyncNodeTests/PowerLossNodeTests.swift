import FaultVFS
import Foundation
import JSON
import OrderStore
import OrderSyncNode
import XCTest

/// A master in this process on the fault VFS (Tests/CFaultVFS): it acknowledges StorePOS
/// operations (broadcasts them after their commit), loses power without a clean shutdown (a
/// torn power cut: every write not yet synced is torn, its handles are dead while it stops),
/// and restarts with every acknowledged operation in its journal, exactly once.
final class PowerLossNodeTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        directory = NSTemporaryDirectory() + "ordersync-powerloss-node-" + UUID().uuidString
        FaultVFS.install()
        FaultVFS.reset()
    }

    override func tearDownWithError() throws {
        FaultVFS.reset()
        FaultVFS.uninstall()
        try? FileManager.default.removeItem(atPath: directory)
        try super.tearDownWithError()
    }

    private func startMaster() throws -> RunningNode {
        try RunningNode(
            role: .master, dataDirectory: directory, name: "front",
            configure: {
                $0.insecureStorePOS = true
                $0.rateLimitPerSecond = 1_000_000
                $0.rateLimitBurst = 1_000_000
            })
    }

    func testAMasterThatLosesPowerRestartsWithEveryAcknowledgedOperationOnce() throws {
        let started = Date()
        let master = try startMaster()
        let receiver = try RawStorePOSTerminal(port: master.port)
        let sender = try RawStorePOSTerminal(port: master.port)
        let uuids = (0..<80).map { _ in UUID().uuidString }
        var burst: [UInt8] = []
        for (i, uuid) in uuids.enumerated() {
            let text =
                #"{"operation":0,"orders":[{"uuid":"\#(uuid)","customerName":"guest \#(i)","created":"2016-01-12T21:35:16+0800","tableName":"T\#(i % 9)","tableSize":2}]}"#
            burst += RawStorePOSTerminal.maskedTextFrame(text)
        }
        try sender.send(burst)
        // An operation the receiver saw was broadcast, and the master broadcasts after the
        // commit: acknowledged.
        var acknowledged: Set<String> = []
        let wanted = Set(uuids)
        while acknowledged.count < uuids.count {
            let message = try receiver.nextText(timeoutSeconds: 20)
            guard let object = try? JSONParser.parse(Array(message.utf8)).objectValue, object["operation"]?.intValue == 0,
                object["snapshot"] == nil
            else { continue }
            for order in object["orders"]?.arrayValue ?? [] {
                if let u = order.objectValue?["uuid"]?.stringValue?.uppercased(), wanted.contains(u) { acknowledged.insert(u) }
            }
        }
        let unsynced = FaultVFS.unsyncedBytes(under: directory + "/")
        FaultVFS.setSeed(24)
        FaultVFS.powerCut(under: directory + "/", .tear)
        master.stop()
        XCTAssertEqual(FaultVFS.powerOn(under: directory + "/"), 0, "a handle from before the power cut is still open")
        let cut = FaultVFS.counters

        let again = try startMaster()
        guard case .master(let status) = try again.status() else { return XCTFail("not a master status") }
        again.stop()
        XCTAssertEqual(status.seq, Int64(uuids.count))
        let db = try OrderDatabase.openReadOnly(path: directory + "/" + NodeDefaults.databaseFile)
        defer { db.close() }
        let journal = try db.journal(since: 0, orderUUID: nil, limit: 10_000)
        XCTAssertEqual(journal.map(\.seq), Array(1...Int64(uuids.count)), "one journal entry per operation, gapless")
        let journalled = journal.flatMap(\.orderUUIDs).map { $0.uppercased() }
        XCTAssertEqual(journalled.count, uuids.count, "an operation journalled twice")
        XCTAssertEqual(Set(journalled), acknowledged)
        XCTAssertEqual(Set(try db.allOrders().map { $0.uuid.uppercased() }), acknowledged)
        XCTAssertEqual(cut.powerCuts, 1)
        print(
            "FIGURE powerloss_node acknowledged=\(acknowledged.count) unsynced_bytes_at_cut=\(unsynced) "
                + "dead_calls=\(cut.deadCalls) millis=\(Int(Date().timeIntervalSince(started) * 1000))")
    }
}
