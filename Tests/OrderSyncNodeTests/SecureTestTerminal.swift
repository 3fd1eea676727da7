import EventLoopIO
import Foundation
import JSON
import Noise
import SecureLink
import WebSocket
import WebSocketTransport
import XCTest

/// A terminal on a real WebSocket connection to a master, driving a `SecureLink` initiator (or
/// none, for the cleartext subprotocol and StorePOS), on an event loop of its own that runs on
/// the test's thread only while the test waits for something.
final class SecureTestTerminal {
    let loop: EventLoop
    let channel: WebSocketChannel
    private(set) var link: SecureLink?
    /// Sync messages and control messages, in order, after the handshake.
    private(set) var messages: [String] = []
    private(set) var controls: [JSONObject] = []
    /// The master's static key and handshake payload, once established.
    private(set) var masterKey: [UInt8]?
    private(set) var masterPayload: JSONObject?
    private(set) var ending: WebSocketChannel.Ending?
    /// Binary WebSocket messages (transport messages) received once the link was established.
    private(set) var transportMessages = 0
    /// For each of `messages`, the count of transport messages when it arrived: two sync
    /// messages with the same number came in one transport message.
    private(set) var carriedBy: [Int] = []
    private var waitingFor: ((SecureTestTerminal) -> Bool)?

    /// Connects to the master on loopback offering `subprotocol`; `start` makes the initiator
    /// once the WebSocket opened.
    init(
        port: UInt16, path: String = "/", subprotocol: String?,
        start: (() throws -> (SecureLink, [SecureLink.Event]))? = nil
    ) throws {
        loop = try EventLoop()
        var configuration = WebSocketChannelConfiguration(handshakeDeadline: .seconds(5))
        configuration.acceptsBinary = true
        channel = WebSocketChannel.connect(
            host: "127.0.0.1", port: port, path: path, subprotocols: subprotocol.map { [$0] } ?? [], loop: loop,
            configuration: configuration)
        channel.onEvent = { [unowned self] event in
            switch event {
            case .opened:
                if let start {
                    do {
                        let (link, events) = try start()
                        self.link = link
                        handle(events)
                    } catch {
                        XCTFail("initiator: \(error)")
                    }
                }
            case .binary(let bytes):
                guard var link else { return XCTFail("binary without a secure link") }
                if link.phase == .established { transportMessages += 1 }
                do {
                    let events = try link.receive(bytes)
                    self.link = link
                    handle(events)
                } catch {
                    self.link = link
                    XCTFail("the master's message failed: \(error)")
                }
            case .text(let text):
                messages.append(text)
                carriedBy.append(-1)
            case .protocolError:
                break
            case .ended(let e):
                ending = e
            }
            if let condition = waitingFor, condition(self) { loop.stop() }
        }
    }

    private func handle(_ events: [SecureLink.Event]) {
        for event in events {
            switch event {
            case .send(let bytes): channel.sendBinary(bytes)
            case .established(let key, let payload):
                masterKey = key
                masterPayload = try? JSONParser.parse(payload).objectValue
            case .message(let bytes):
                messages.append(String(decoding: bytes, as: UTF8.self))
                carriedBy.append(transportMessages)
            case .control(let bytes): controls.append((try? JSONParser.parse(bytes).objectValue) ?? JSONObject())
            case .peerKeyPresented: XCTFail("an initiator is never asked to accept a key")
            }
        }
    }

    /// Runs the loop until `condition` holds or the link ends; false after `timeout`.
    @discardableResult
    func wait(timeout: Duration = .seconds(5), until condition: @escaping (SecureTestTerminal) -> Bool) -> Bool {
        if condition(self) { return true }
        waitingFor = { $0.ending != nil || condition($0) }
        var timedOut = false
        let watchdog = loop.schedule(after: timeout) { [loop] in
            timedOut = true
            loop.stop()
        }
        loop.run()
        loop.cancel(watchdog)
        waitingFor = nil
        return !timedOut && condition(self)
    }

    /// Runs the loop until the link ended; its close code and reason.
    func waitForEnd(timeout: Duration = .seconds(5)) -> (code: UInt16?, reason: String) {
        wait(timeout: timeout) { $0.ending != nil }
        guard let ending else { return (nil, "still open") }
        if case .closed(let code, let reason) = ending.cause { return (code?.rawValue, reason) }
        return (ending.closeCode?.rawValue, "\(ending)")
    }

    /// Seals one sync message to the master.
    func send(_ text: String) throws {
        guard var link else { throw SecureLinkError(.wrongState, "no secure link") }
        let sealed = try link.seal(Array(text.utf8))
        self.link = link
        for message in sealed { channel.sendBinary(message) }
    }

    /// Seals several sync messages to the master in one transport message (`0x08`).
    func sendBatch(_ texts: [String]) throws {
        guard var link else { throw SecureLinkError(.wrongState, "no secure link") }
        let sealed = try link.sealBatch(texts.map { Array($0.utf8) })
        self.link = link
        for message in sealed { channel.sendBinary(message) }
    }

    /// Seals one control message of the link layer to the master (`SecureLinkFeatures`).
    func sendControl(_ bytes: [UInt8]) throws {
        guard var link else { throw SecureLinkError(.wrongState, "no secure link") }
        let sealed = try link.seal(bytes, control: true)
        self.link = link
        for message in sealed { channel.sendBinary(message) }
    }

    /// The orders in the snapshot received so far (its Creates; a StorePOS terminal's Removes
    /// before them are not counted), and whether `ready` came.
    var snapshot: (orders: Int, ready: Bool) {
        var orders = 0
        var ready = false
        for text in messages {
            guard let o = try? JSONParser.parse(Array(text.utf8)).objectValue else { continue }
            if o["snapshot"] != nil, o["operation"]?.intValue == 0 { orders += o["orders"]?.arrayValue?.count ?? 0 }
            if o["type"]?.stringValue == "ready" { ready = true }
        }
        return (orders, ready)
    }

    /// Closes the link and waits for the end.
    func close() {
        channel.close(code: .normal, reason: "done")
        _ = waitForEnd()
    }
}
