import Noise
import XCTest

@testable import SecureLink

final class SecureLinkTransportTests: XCTestCase {
    func testTamperedReplayedReorderedAndDroppedMessagesFail() throws {
        let messages: [[UInt8]] = [[1], [2, 2], [3, 3, 3]]
        func sealed() throws -> (receiver: SecureLink, wire: [[UInt8]]) {
            var (slave, master) = try establishedPair()
            return (master, try messages.flatMap { message throws(SecureLinkError) in try slave.seal(message) })
        }
        var (flipped, wire) = try sealed()
        var tampered = wire[0]
        tampered[3] ^= 0x10
        XCTAssertLinkError(.authenticationFailed, try flipped.receive(tampered))
        XCTAssertEqual(flipped.phase, .failed)
        XCTAssertLinkError(.wrongState, try flipped.receive(wire[0]))

        var (replayed, wire2) = try sealed()
        XCTAssertEqual(try replayed.receive(wire2[0]), [.message([1])])
        XCTAssertLinkError(.authenticationFailed, try replayed.receive(wire2[0]))
        XCTAssertLinkError(.wrongState, try replayed.receive(wire2[1]))

        var (reordered, wire3) = try sealed()
        XCTAssertLinkError(.authenticationFailed, try reordered.receive(wire3[1]))
        XCTAssertLinkError(.wrongState, try reordered.receive(wire3[0]))

        var (dropped, wire4) = try sealed()
        XCTAssertEqual(try dropped.receive(wire4[0]), [.message([1])])
        XCTAssertLinkError(.authenticationFailed, try dropped.receive(wire4[2]))
        XCTAssertEqual(dropped.phase, .failed)
        XCTAssertLinkError(.malformed, try sealed().receiver.receiveCopy(Array(repeating: 0, count: 70_000)))
    }

    func testLargeMessageIsChunkedAndReassembled() throws {
        var (slave, master) = try establishedPair()
        let big = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let wire = try slave.seal(big)
        XCTAssertEqual(wire.count, 4) // 200,000 / 65,518 rounds up to 4
        XCTAssertTrue(wire.allSatisfy { $0.count <= 65_535 })
        XCTAssertEqual(wire[0].count, 65_535)
        XCTAssertEqual(try master.receive(wire[0]), [])
        XCTAssertEqual(try master.receive(wire[1]), [])
        XCTAssertEqual(try master.receive(wire[2]), [])
        XCTAssertEqual(try master.receive(wire[3]), [.message(big)])
        XCTAssertEqual(try deliver(try slave.seal([]), to: &master), [.message([])])
    }

    func testControlAndSyncMessagesAreTold() throws {
        var (slave, master) = try establishedPair()
        let wire = try master.seal([7], control: true) + master.seal([8]) + master.seal([9], control: true)
        XCTAssertEqual(try deliver(wire, to: &slave), [.control([7]), .message([8]), .control([9])])
    }

    func testRekeyEveryThreeMessagesBothWays() throws {
        let options = SecureLinkOptions(rekeyInterval: 3)
        var (slave, master) = try establishedPair(options: options)
        for index in 0..<20 {
            let up = Array("up \(index)".utf8)
            XCTAssertEqual(try deliver(try slave.seal(up), to: &master), [.message(up)])
            let down = Array("down \(index)".utf8)
            XCTAssertEqual(try deliver(try master.seal(down, control: index % 2 == 0), to: &slave).count, 1)
        }
        // Message 21 of the slave is again a multiple of 3: it carries the rekey bit.
        XCTAssertEqual(try header(of: slave.seal([1]), to: &master), SecureLinkTransport.rekeyAfter)
    }

    func testPeerThatDoesNotRekeyFails() throws {
        var (slave, master) = try establishedPair()
        // A header announcing a rekey the sender then does not do.
        guard var transport = slave.transport else { return XCTFail("not established") }
        let announced = try transport.session.encrypt([SecureLinkTransport.rekeyAfter, 1])
        let next = try transport.session.encrypt([0x00, 2])
        XCTAssertEqual(try master.receive(announced), [.message([1])])
        XCTAssertLinkError(.authenticationFailed, try master.receive(next))
        XCTAssertEqual(master.phase, .failed)
    }

    func testOversizeMessagesAreRefused() throws {
        let options = SecureLinkOptions(maxMessageBytes: 100_000)
        var (slave, master) = try establishedPair(options: options)
        XCTAssertLinkError(.messageTooLarge, try slave.seal(Array(repeating: 1, count: 100_001)))
        XCTAssertEqual(slave.phase, .established)
        XCTAssertEqual(try deliver(try slave.seal([5]), to: &master), [.message([5])])

        // A sender with a higher limit: the receiver refuses on the second chunk, before the last.
        var (bigSlave, smallMaster) = try establishedPairWithLimits(sender: 1 << 20, receiver: 100_000)
        let wire = try bigSlave.seal(Array(repeating: 2, count: 150_000))
        XCTAssertEqual(try smallMaster.receive(wire[0]), [])
        XCTAssertLinkError(.messageTooLarge, try smallMaster.receive(wire[1]))
        XCTAssertEqual(smallMaster.phase, .failed)
    }

    func testUnknownHeaderBitAndMixedControlBitsAreRefused() throws {
        for badHeader: UInt8 in [0x10, 0x80, 0x20 | 0x01] {
            var (slave, master) = try establishedPair()
            guard var transport = slave.transport else { return XCTFail("not established") }
            XCTAssertLinkError(.malformed, try master.receive(transport.session.encrypt([badHeader, 1])))
            XCTAssertEqual(master.phase, .failed)
        }
        var (slave, master) = try establishedPair()
        guard var transport = slave.transport else { return XCTFail("not established") }
        XCTAssertEqual(try master.receive(transport.session.encrypt([0x05, 1])), [])
        XCTAssertLinkError(.malformed, try master.receive(transport.session.encrypt([0x00, 2])))
        var (slave2, master2) = try establishedPair()
        guard var transport2 = slave2.transport else { return XCTFail("not established") }
        XCTAssertLinkError(.malformed, try master2.receive(transport2.session.encrypt([])))
    }

    func testABatchCarriesWholeMessagesInOrderAndOnlyAsManyAsFit() throws {
        var (slave, master) = try establishedPair(options: SecureLinkOptions(rekeyInterval: 2))
        // Small messages share transport messages; one too large to share goes alone, in chunks;
        // the last one alone is sealed as `seal` seals it (no batch of one).
        let small = (0..<40).map { k in Array("{\"seq\":\(k),\"pad\":\"\(String(repeating: "x", count: 3_000))\"}".utf8) }
        let large = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let messages = Array(small[0..<30]) + [large] + Array(small[30..<39]) + [[]] + [small[39]]
        let wire = try master.sealBatch(messages)
        // 30 of about 3,020 B in two (21 fit in 65,518 B), the large one in two chunks, then 11.
        XCTAssertEqual(wire.count, 5)
        XCTAssertTrue(wire.allSatisfy { $0.count <= 65_535 })
        // Their header bytes, read with a copy of the receiving end.
        guard var peek = slave.transport else { return XCTFail("not established") }
        var headers: [UInt8] = []
        for message in wire {
            let header = try peek.session.decrypt(message)[0]
            if header & SecureLinkTransport.rekeyAfter != 0 { try peek.session.rekeyReceiving() }
            headers.append(header)
        }
        XCTAssertEqual(headers.map { $0 & ~SecureLinkTransport.rekeyAfter }, [0x08, 0x08, 0x01, 0x00, 0x08])
        XCTAssertEqual(try deliver(wire, to: &slave), messages.map { .message($0) })
        // The rekey bit every second message went with the batches: the link still works.
        XCTAssertEqual(try deliver(try master.sealBatch([[1], [2]]), to: &slave), [.message([1]), .message([2])])
        XCTAssertEqual(try deliver(try master.sealBatch([[3]]), to: &slave), [.message([3])])
        XCTAssertEqual(try deliver(try master.sealBatch([]), to: &slave), [])
    }

    func testABatchWithAMessageOverTheLimitSealsNothingAndKeepsTheLink() throws {
        var (slave, master) = try establishedPair(options: SecureLinkOptions(maxMessageBytes: 1_000))
        XCTAssertLinkError(.messageTooLarge, try master.sealBatch([[1], Array(repeating: 2, count: 1_001)]))
        XCTAssertEqual(master.phase, .established)
        // No nonce was spent: the next batch decrypts.
        XCTAssertEqual(try deliver(try master.sealBatch([[4], [5]]), to: &slave), [.message([4]), .message([5])])
    }

    func testMalformedBatchesFailTheLink() throws {
        let cases: [(String, [UInt8], SecureLinkError.Kind)] = [
            ("a length past the end", [0x08, 0, 0, 0, 5, 1, 2], .malformed),
            ("a length cut short", [0x08, 0, 0, 0, 1, 9, 0, 0], .malformed),
            ("no message at all", [0x08], .malformed),
            ("with more-follows", [0x08 | 0x01, 0, 0, 0, 1, 9], .malformed),
            ("as a control message", [0x08 | 0x04, 0, 0, 0, 1, 9], .malformed),
            ("a message over the receiver's limit", [0x08, 0, 0, 0, 3, 1, 2, 3], .messageTooLarge),
        ]
        for (what, plaintext, kind) in cases {
            var (slave, master) = try establishedPair(options: SecureLinkOptions(maxMessageBytes: 2))
            guard var transport = slave.transport else { return XCTFail("not established") }
            XCTAssertLinkError(kind, try master.receive(transport.session.encrypt(plaintext)), what)
            XCTAssertEqual(master.phase, .failed, what)
        }
        // Inside a chunked message: its first chunk, then a batch.
        var (slave, master) = try establishedPair()
        guard var transport = slave.transport else { return XCTFail("not established") }
        XCTAssertEqual(try master.receive(transport.session.encrypt([0x01, 7])), [])
        XCTAssertLinkError(.malformed, try master.receive(transport.session.encrypt([0x08, 0, 0, 0, 1, 9])))
        // Zero-length members are whole messages too.
        var (slave2, master2) = try establishedPair()
        guard var transport2 = slave2.transport else { return XCTFail("not established") }
        XCTAssertEqual(try master2.receive(transport2.session.encrypt([0x08, 0, 0, 0, 0, 0, 0, 0, 1, 6])), [.message([]), .message([6])])
    }

    /// The header byte of the last transport message of `wire`, as `link` decrypts it.
    private func header(of wire: [[UInt8]], to link: inout SecureLink) throws -> UInt8 {
        guard var transport = link.transport else { throw SecureLinkError(.wrongState, "") }
        var last: [UInt8] = []
        for message in wire { last = try transport.session.decrypt(message) }
        return last[0]
    }

    private func establishedPairWithLimits(sender: Int, receiver: Int) throws -> (SecureLink, SecureLink) {
        var (slave, first) = try SecureLink.knownInitiator(
            masterKey: masterKey.publicKey, localStatic: slaveKey, options: .init(maxMessageBytes: sender))
        var master = SecureLink.knownResponder(keys: [masterKey], options: .init(maxMessageBytes: receiver))
        _ = try master.receive(sent(first)[0])
        _ = try slave.receive(sent(try master.accept(payload: []))[0])
        return (slave, master)
    }
}

extension SecureLink {
    /// `receive` on a copy, for a one-off check.
    fileprivate func receiveCopy(_ message: [UInt8]) throws -> [Event] {
        var copy = self
        return try copy.receive(message)
    }
}
