import EventLoopIO
import Foundation
import SyncCore
import XCTest

@testable import OrderSyncNode

/// A slave's master messages decoded off the loop (`MasterMessageDecoder`): large ones go to the
/// decoder's thread, and every message reaches the engine in the order it came, whether it was
/// decoded there or on the loop; what ends a link waits for the messages before it.
final class MasterMessageDecoderTests: XCTestCase {
    private var loop: EventLoop!
    private var delivered: [String] = []
    private var decoder: MasterMessageDecoder!

    override func setUpWithError() throws {
        loop = try EventLoop()
        delivered = []
        decoder = MasterMessageDecoder(loop: loop) { [unowned self] message in delivered.append(name(of: message.bytes)) }
    }

    /// The `name` member of a test message.
    private func name(of bytes: [UInt8]) -> String {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let start = text.range(of: #""name":""#), let end = text[start.upperBound...].firstIndex(of: "\"") else { return "?" }
        return String(text[start.upperBound..<end])
    }

    /// A heartbeat named `name`, more than `bytes` bytes long.
    private func message(_ name: String, bytes: Int = 0) -> [UInt8] {
        let pad = String(repeating: "x", count: bytes)
        return Array(#"{"type":"heartbeat","seq":1,"name":"\#(name)","pad":"\#(pad)"}"#.utf8)
    }

    func testLargeMessagesAreDecodedOffTheLoopAndEveryMessageArrivesInOrder() {
        let large = MasterMessageDecoder.offLoopBytes
        decoder.received(message("small 1"))
        XCTAssertEqual(delivered, ["small 1"], "a small message with nothing waiting is applied at once")
        decoder.received(message("part 1", bytes: large))
        decoder.received(message("small 2"))
        decoder.received(message("part 2", bytes: 4 * large))
        decoder.received(message("small 3"))
        XCTAssertEqual(delivered, ["small 1"], "the small messages wait behind the parts being decoded")
        XCTAssertEqual(decoder.pending, 4)
        runUntil(loop) { self.decoder.pending == 0 }
        XCTAssertEqual(delivered, ["small 1", "part 1", "small 2", "part 2", "small 3"])
        XCTAssertEqual(decoder.decodedOffLoop, 4)
        decoder.received(message("small 4"))
        XCTAssertEqual(delivered.last, "small 4", "nothing waits any more: on the loop again")
    }

    func testWhatEndsALinkComesAfterTheMessagesBeforeIt() {
        var order: [String] = []
        decoder.afterPending { order.append("end at once") }
        XCTAssertEqual(order, ["end at once"], "nothing waits: at once")
        decoder.received(message("part", bytes: MasterMessageDecoder.offLoopBytes))
        decoder.afterPending { order.append("end, after \(self.delivered)") }
        XCTAssertEqual(order.count, 1)
        runUntil(loop) { order.count == 2 }
        XCTAssertEqual(order.last, #"end, after ["part"]"#)
    }

    func testManyLargeMessagesKeepTheirOrderPastTheBoundOnWaitingBytes() {
        // More than `maxPendingBytes` at once: the loop waits for the decoder, nothing is lost or
        // reordered.
        let size = 512 << 10
        let count = MasterMessageDecoder.maxPendingBytes / size + 8
        for i in 0..<count { decoder.received(message("part \(i)", bytes: size)) }
        runUntil(loop) { self.decoder.pending == 0 }
        XCTAssertEqual(delivered, (0..<count).map { "part \($0)" })
    }
}
