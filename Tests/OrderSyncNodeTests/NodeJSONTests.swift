import Foundation
import Glibc
import JSON
import NodePolicy
import XCTest

@testable import OrderSyncNode

/// The node's JSON (status, the trust file, the dashboard tokens) through the project's JSON
/// module: what the previous build (Foundation's `JSONEncoder`) wrote is read back unchanged, and
/// the values are written with the same members, values and escapes, in a fixed order.
///
/// The texts marked "previous build" were written by the daemon built from the commit before the
/// change (a master and a slave paired with it, `ordersync status --json`, the slave's
/// `master.trust`, the master's `dashboard.tokens` metadata). `JSONEncoder` put the members of a
/// status or token object in an order that changed from one process to the next (it is hashed),
/// so nothing could depend on it; the trust file had its keys sorted, and keeps them so byte for
/// byte.
final class NodeJSONTests: XCTestCase {
    /// A master's status, previous build.
    static let previousMasterStatus = #"""
        {"terminals":[{"connected":true,"lastSeen":"2026-11-27T12:09:01+0000","name":"till/2","ackedSeq":0,"\#
        outbox":0,"address":"127.0.0.1:39514","lag":0,"terminalId":"RWJH-756S-IE7T-JO7G-AJQJ-JM2X-WQ7F-RSFF"\#
        }],"orders":0,"uptimeSeconds":2,"pairing":{"name":"RWJH-756S-IE7T-JO7G-AJQJ-JM2X-WQ7F-RSFF","openCod\#
        es":0,"lockedOutAddresses":0,"expiresAtMillis":null,"state":"used"},"state":"degraded","serviceType"\#
        :"_pos._tcp","previousNodeId":null,"avahi":"down","name":"front/é","epoch":"d41e8775-559d-48f3-97f7-\#
        2d0cb1616bae","version":"0.1.0","tombstones":0,"role":"master","peers":[{"messages":2,"rejected":0,"\#
        terminal":"till/2","protocol":"ordersync","ackedSeq":0,"outbox":0,"address":"127.0.0.1:39514","termi\#
        nalId":"RWJH-756S-IE7T-JO7G-AJQJ-JM2X-WQ7F-RSFF","lag":0,"lastSeenMillisAgo":621,"connectedSeconds":\#
        0}],"dataDir":"/tmp/json-cap/old/m","serviceName":null,"lastError":{"at":"2026-11-27T12:08:59.297Z",\#
        "event":"avahi.down","message":"cannot connect to avahi-daemon: Daemon not running; retrying in 1.0 \#
        seconds"},"seq":0,"storeposForeign":0,"commits":{"operations":0,"groups":2,"largestGroup":1,"message\#
        s":2,"failed":0,"lastCommitMicros":436},"ready":{"link":null,"store":"ok","published":"failed"},"sto\#
        re":"shop.1","nodeId":"4CZP-UDAV-R6EM-2GVG-ULOO-D25N-TCPG-H6JF","pairedTerminals":1,"port":47391}
        """#
    /// A slave's status, previous build.
    static let previousSlaveStatus = #"""
        {"masterSeq":0,"avahi":"not used (--master)","orders":0,"state":"ready","version":"0.1.0","store":"s\#
        hop.1","master":{"state":"live","notLiveSeconds":null,"lastError":null,"serviceName":null,"url":"ws:\#
        //127.0.0.1:47391/","lastSeenMillisAgo":898,"sinceSeconds":0},"uptimeSeconds":1,"commits":{"batches"\#
        :1,"failed":0,"messages":2,"largestBatch":2},"lag":0,"pairing":"paired","name":"till/2","masterId":"\#
        4CZP-UDAV-R6EM-2GVG-ULOO-D25N-TCPG-H6JF","dataDir":"/tmp/json-cap/old/s","ready":{"link":"live","sto\#
        re":"ok","published":null},"epoch":"d41e8775-559d-48f3-97f7-2d0cb1616bae","seq":0,"role":"slave","no\#
        deId":"RWJH-756S-IE7T-JO7G-AJQJ-JM2X-WQ7F-RSFF","pendingWrites":0,"lastError":null,"outbox":0,"maste\#
        rsSeen":[],"terminalId":"60daa7f6-223a-4da8-94d2-16425f751d06"}
        """#
    /// The master's status as this build writes it: members in the documented order.
    static let masterStatus = #"""
        {"role":"master","version":"0.1.0","store":"shop.1","name":"front/é","nodeId":"4CZP-UDAV-R6EM-2GVG-U\#
        LOO-D25N-TCPG-H6JF","epoch":"d41e8775-559d-48f3-97f7-2d0cb1616bae","seq":0,"orders":0,"port":47391,"\#
        dataDir":"/tmp/json-cap/old/m","serviceType":"_pos._tcp","serviceName":null,"avahi":"down","uptimeSe\#
        conds":2,"peers":[{"address":"127.0.0.1:39514","protocol":"ordersync","terminal":"till/2","terminalI\#
        d":"RWJH-756S-IE7T-JO7G-AJQJ-JM2X-WQ7F-RSFF","connectedSeconds":0,"lastSeenMillisAgo":621,"ackedSeq"\#
        :0,"lag":0,"outbox":0,"messages":2,"rejected":0,"held":null,"standbyLag":null,"clock":null}],"terminals":[{"termi\#
        nalId":"RWJH-756S-IE7T-JO7G-AJQJ-JM2X-WQ7F-RSFF","name":"till/2","address":"127.0.0.1:39514","connec\#
        ted":true,"ackedSeq":0,"lag":0,"lastSeen":"2026-11-27T12:09:01+0000","outbox":0}],"tombstones":0,"pa\#
        iring":{"state":"used","name":"RWJH-756S-IE7T-JO7G-AJQJ-JM2X-WQ7F-RSFF","expiresAtMillis":null,"open\#
        Codes":0,"lockedOutAddresses":0},"pairedTerminals":1,"previousNodeId":null,"commits":{"groups":2,"me\#
        ssages":2,"operations":0,"largestGroup":1,"failed":0,"lastCommitMicros":436},"storeposForeign":0,"re\#
        ady":{"store":"ok","published":"failed","link":null,"storeFailure":null},"state":"degraded","lastError":{"event":"avahi.\#
        down","message":"cannot connect to avahi-daemon: Daemon not running; retrying in 1.0 seconds","at":"\#
        2026-11-27T12:08:59.297Z"},"term":null,"syncReplicas":null,"voters":null,"autoFailover":null,"away":null,"rivals":null}
        """#
    /// The slave's status as this build writes it.
    static let slaveStatus = #"""
        {"role":"slave","version":"0.1.0","store":"shop.1","name":"till/2","nodeId":"RWJH-756S-IE7T-JO7G-AJQ\#
        J-JM2X-WQ7F-RSFF","terminalId":"60daa7f6-223a-4da8-94d2-16425f751d06","masterId":"4CZP-UDAV-R6EM-2GV\#
        G-ULOO-D25N-TCPG-H6JF","pairing":"paired","seq":0,"masterSeq":0,"lag":0,"epoch":"d41e8775-559d-48f3-\#
        97f7-2d0cb1616bae","orders":0,"dataDir":"/tmp/json-cap/old/s","avahi":"not used (--master)","uptimeS\#
        econds":1,"master":{"state":"live","url":"ws://127.0.0.1:47391/","serviceName":null,"sinceSeconds":0\#
        ,"lastSeenMillisAgo":898,"lastError":null,"notLiveSeconds":null},"pendingWrites":0,"outbox":0,"maste\#
        rsSeen":[],"commits":{"batches":1,"messages":2,"largestBatch":2,"failed":0},"ready":{"store":"ok","p\#
        ublished":null,"link":"live","storeFailure":null},"state":"ready","lastError":null,"term":null,"following":null,"held":n\#
        ull,"autoFailover":null,"clock":null}
        """#
    /// The slave's `master.trust`, previous build (the file ends with a newline).
    static let previousTrustFile = #"""
        {"codeDigest":"6a84b7a38f8f182a44858ad1ede94019391b5937992f902b7b09081c9b1572fe","master":"4CZP-UDAV\#
        -R6EM-2GVG-ULOO-D25N-TCPG-H6JF","pairedAtMillis":1795781341331,"previousKeys":[],"publicKey":"/jVRvk\#
        ske4MtOh8cJSi/0qvgRGXM3EfLJDleTU/pOmw=","store":"shop.1"}
        """# + "\n"
    /// The master's `dashboard.tokens`, previous build.
    static let previousTokens = #"""
        [{"createdAtMillis":1795781341774,"sha256":"0fde7d399e9f76619dfb40e1357bf7673acf67997c23054356c3860b\#
        aa97188f","id":"571ee223","name":"office-é"}]
        """#
    /// The same tokens as this build stores them.
    static let tokens = #"""
        [{"id":"571ee223","name":"office-é","createdAtMillis":1795781341774,"sha256":"0fde7d399e9f76619dfb40\#
        e1357bf7673acf67997c23054356c3860baa97188f"}]
        """#

    /// `value` with the members of every object sorted by key: two texts that differ only in
    /// member order give the same value.
    private func unordered(_ value: JSONValue) -> JSONValue {
        switch value {
        case .array(let a): return .array(a.map(unordered))
        case .object(let o):
            return .object(JSONObject(o.members.sorted { $0.key < $1.key }.map { ($0.key, unordered($0.value)) }))
        default: return value
        }
    }

    /// Members added after the previous build (failover: term, replicas, voters, standby copies,
    /// automatic failover; health: away terminals, rival masters, a failing store; clock sense):
    /// absent from its texts, `null` when this build reads them.
    static let addedMembers: Set<String> = [
        "term", "syncReplicas", "voters", "following", "held", "standbyLag", "autoFailover", "away", "rivals", "storeFailure",
        "clock",
    ]

    /// `value` without the added members that are `null`, at any depth.
    private func withoutAddedMembers(_ value: JSONValue) -> JSONValue {
        switch value {
        case .array(let a): return .array(a.map(withoutAddedMembers))
        case .object(let o):
            return .object(
                JSONObject(
                    o.members.filter { !(Self.addedMembers.contains($0.key) && $0.value == .null) }
                        .map { ($0.key, withoutAddedMembers($0.value)) }))
        default: return value
        }
    }

    private func assertSameJSON(_ a: String, _ b: String, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(unordered(try JSONParser.parse(a)), unordered(try JSONParser.parse(b)), file: file, line: line)
    }

    func testStatusOfThePreviousBuildIsReadAndWrittenWithTheSameMembersInTheDocumentedOrder() throws {
        for (previous, now) in [(Self.previousMasterStatus, Self.masterStatus), (Self.previousSlaveStatus, Self.slaveStatus)] {
            let status = try NodeStatus(jsonBytes: Array(previous.utf8))
            XCTAssertEqual(status.jsonValue.serialized(), now)
            try assertSameJSON(withoutAddedMembers(status.jsonValue).serialized(), previous)
            XCTAssertEqual(try NodeStatus(jsonBytes: Array(now.utf8)), status)
        }
        guard case .master(let master) = try NodeStatus(jsonBytes: Array(Self.previousMasterStatus.utf8)) else {
            return XCTFail("not a master's status")
        }
        XCTAssertEqual(master.name, "front/é")
        XCTAssertEqual(master.peers.first?.terminal, "till/2")
        XCTAssertEqual(master.pairing.state, .used)
        XCTAssertNil(master.serviceName)
        XCTAssertEqual(master.ready, NodeReadiness(store: .ok, published: .failed))
        XCTAssertEqual(master.lastError?.event, "avahi.down")
        guard case .slave(let slave) = try NodeStatus(jsonBytes: Array(Self.previousSlaveStatus.utf8)) else {
            return XCTFail("not a slave's status")
        }
        XCTAssertEqual(slave.master.state, .live)
        XCTAssertEqual(slave.avahi, .notUsedWithFixedMaster)
        XCTAssertEqual(slave.commits.largestBatch, 2)
    }

    func testStringsKeepTheirEscapesAndAbsentValuesAreNull() throws {
        guard case .master(var master) = try NodeStatus(jsonBytes: Array(Self.masterStatus.utf8)) else {
            return XCTFail("not a master's status")
        }
        master.name = "a/b \"q\" \\ \u{1}\n\té😀"
        master.lastError = nil
        master.storeposForeign = nil
        let text = NodeStatus.master(master).jsonValue.serialized()
        XCTAssertTrue(text.contains(#""name":"a/b \"q\" \\ \u0001\n\té😀","#), text)
        XCTAssertTrue(text.contains(#""storeposForeign":null,"#), text)
        let end = #","lastError":null,"term":null,"syncReplicas":null,"voters":null,"autoFailover":null,"away":null,"rivals":null}"#
        XCTAssertTrue(text.hasSuffix(end), text)
        XCTAssertEqual(try NodeStatus(jsonBytes: Array(text.utf8)), .master(master))
    }

    func testAStatusFromAnOlderDaemonWithoutTheNewerMembersIsRead() throws {
        var object = try XCTUnwrap(try JSONParser.parse(Self.masterStatus).objectValue)
        for member in ["storeposForeign", "ready", "state", "lastError"] { object[member] = nil }
        var pairing = try XCTUnwrap(object["pairing"]?.objectValue)
        pairing["openCodes"] = nil
        pairing["lockedOutAddresses"] = nil
        pairing["state"] = .string("exhausted")
        object["pairing"] = .object(pairing)
        guard case .master(let master) = try NodeStatus(json: .object(object)) else { return XCTFail("not a master's status") }
        XCTAssertNil(master.ready)
        XCTAssertNil(master.storeposForeign)
        XCTAssertEqual(master.pairing.state, .closed, "an earlier version's `exhausted`")
        XCTAssertEqual(master.pairing.openCodes, 0)
        XCTAssertEqual(master.pairing.lockedOutAddresses, 0)
    }

    func testAWrongMemberIsNamedWithItsPath() throws {
        func error(_ change: (inout JSONObject) throws -> Void) throws -> String {
            var object = try XCTUnwrap(try JSONParser.parse(Self.masterStatus).objectValue)
            try change(&object)
            do {
                _ = try NodeStatus(json: .object(object))
                return "no error"
            } catch {
                return error.description
            }
        }
        XCTAssertEqual(try error { $0["seq"] = .string("1") }, #""seq": expected an integer, got string"#)
        XCTAssertEqual(try error { $0["name"] = nil }, #""name": missing"#)
        XCTAssertEqual(try error { $0["avahi"] = .string("sideways") }, #""avahi": unknown value "sideways""#)
        XCTAssertEqual(try error { $0["port"] = .int(70000) }, #""port": 70000 is not from 0 to 65535"#)
        XCTAssertEqual(try error { $0["role"] = .string("guest") }, #""role": unknown value "guest""#)
        XCTAssertEqual(
            try error { o in
                var peer = try XCTUnwrap(o["peers"]?.arrayValue?.first?.objectValue)
                peer["address"] = nil
                o["peers"] = .array([.object(peer)])
            }, #""peers[0].address": missing"#)
        XCTAssertEqual(
            try error { o in
                var commits = try XCTUnwrap(o["commits"]?.objectValue)
                commits["groups"] = .null
                o["commits"] = .object(commits)
            }, #""commits.groups": expected Int64, got null"#)
        XCTAssertEqual(try error { $0["terminals"] = .object(JSONObject()) }, #""terminals": expected an array, got object"#)
        XCTAssertThrowsError(try NodeStatus(jsonBytes: Array("[1]".utf8))) { e in
            XCTAssertEqual("\(e)", "expected an object, got array")
        }
        XCTAssertThrowsError(try NodeStatus(jsonBytes: Array("{".utf8))) { e in
            XCTAssertTrue("\(e)".hasPrefix("not JSON: "), "\(e)")
        }
    }

    func testTheTrustFileOfThePreviousBuildIsReadAndWrittenAgainByteForByte() throws {
        let directory = NSTemporaryDirectory() + "ordersync-json-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let previous = directory + "/previous.trust"
        XCTAssertTrue(FileManager.default.createFile(atPath: previous, contents: Data(Self.previousTrustFile.utf8)))
        XCTAssertEqual(chmod(previous, 0o600), 0)
        let trust = try XCTUnwrap(try MasterTrust.load(path: previous))
        XCTAssertEqual(trust.store, "shop.1")
        XCTAssertEqual(trust.master, "4CZP-UDAV-R6EM-2GVG-ULOO-D25N-TCPG-H6JF")
        XCTAssertEqual(trust.pairedAtMillis, 1_795_781_341_331)
        try trust.write(to: directory + "/now.trust")
        XCTAssertEqual(try String(contentsOfFile: directory + "/now.trust", encoding: .utf8), Self.previousTrustFile)

        var handedOver = trust
        XCTAssertTrue(handedOver.handOver(to: Array(repeating: 7, count: 32)))
        XCTAssertEqual(try MasterTrust(jsonBytes: handedOver.jsonValue.serializedBytes()), handedOver)
        let previousKey =
            #"{"master":"4CZP-UDAV-R6EM-2GVG-ULOO-D25N-TCPG-H6JF","publicKey":"/jVRvkske4MtOh8cJSi/0qvgRGXM3EfLJDleTU/pOmw="}"#
        XCTAssertTrue(handedOver.jsonValue.serialized().contains(#""previousKeys":[\#(previousKey)]"#))

        var wrongId = try XCTUnwrap(try JSONParser.parse(Self.previousTrustFile).objectValue)
        wrongId["master"] = .string("AAAA")
        XCTAssertThrowsError(try MasterTrust(json: .object(wrongId))) { e in
            XCTAssertEqual("\(e)", #""master": the id is not the key's"#)
        }
    }

    func testTokensOfThePreviousBuildAreReadAndStoredWithTheSameMembers() throws {
        let tokens = try DashboardTokens(stored: Self.previousTokens)
        XCTAssertEqual(tokens.tokens.map(\.name), ["office-é"])
        XCTAssertEqual(tokens.stored, Self.tokens)
        try assertSameJSON(tokens.stored, Self.previousTokens)
        XCTAssertThrowsError(try DashboardTokens(stored: #"[{"id":"1","name":"x","createdAtMillis":1}]"#)) { e in
            XCTAssertEqual("\(e)", #""[0].sha256": missing"#)
        }
    }
}
