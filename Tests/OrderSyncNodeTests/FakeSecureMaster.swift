import EventLoopIO
import Foundation
import JSON
import Noise
import OrderSyncNode
import SecureLink
import Synchronization
import WebSocket
import WebSocketTransport
import XCTest

/// A master stand-in on loopback: only the WebSocket and `SecureLink` responder ends of the
/// secure link protocol, on a loop thread of its own, recording what each slave sends. It lets
/// the slave's shell (`MasterLink`, the trust file, the failure rules) be tested end to end
/// without the master's engine.
final class FakeSecureMaster: Sendable {
    /// How it answers.
    struct Behaviour: Sendable {
        /// The open pairing window's code; nil: pairing links are closed 1008 `pairing failed`.
        var code: PairingCode?
        /// Its static keys, current first (IK answers with whichever the slave addressed).
        var keys: [NoiseKeyPair]
        /// Known links: close 1008 with this reason instead of answering (an unknown terminal,
        /// as anyone could say it: the refusal proves no key).
        var refuseKnown: String?
        /// Known links: answer with `"refused": reason` in the proven handshake payload, then
        /// close 1008 with it (the real master's refusal of an unknown terminal).
        var refuseKnownProven: String?
        /// Accept the WebSocket, then never answer a handshake message.
        var silent = false
    }

    /// One secure link as the master saw it.
    struct Link: Sendable {
        var subprotocol: String
        /// The slave's static key, once the handshake revealed it.
        var slaveKey: [UInt8]?
        /// Sync messages received, in order.
        var messages: [String] = []
    }

    let port: UInt16
    private let loop: EventLoop
    /// The links seen, shared by the loop thread and the test's.
    final class LinkLog: Sendable {
        let links = Mutex<[Link]>([])
    }

    private let log = LinkLog()
    private let server: LoopBound<Server>
    private let finished = DispatchSemaphore(value: 0)

    /// Starts it; returns once it listens.
    init(_ behaviour: Behaviour) throws {
        let started = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<(EventLoop, LoopBound<Server>, UInt16), any Error>?>(nil)
        let log = self.log
        let finished = self.finished
        let thread = Thread {
            do {
                let loop = try EventLoop()
                let server = try Server(loop: loop, behaviour: behaviour, log: log)
                outcome.withLock { $0 = .success((loop, LoopBound(server, loop: loop), server.port)) }
                started.signal()
                loop.run()
                server.acceptor.close()
            } catch {
                outcome.withLock { $0 = .failure(error) }
                started.signal()
            }
            finished.signal()
        }
        thread.start()
        started.wait()
        let (loop, server, port) = try XCTUnwrap(outcome.withLock { $0 }).get()
        self.loop = loop
        self.server = server
        self.port = port
    }

    /// The links so far, oldest first.
    var seen: [Link] { log.links.withLock { $0 } }

    /// Waits until `condition` holds for the links seen.
    func wait(for what: String, timeout: TimeInterval = 10, _ condition: ([Link]) -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition(seen) {
            if Date() > deadline {
                XCTFail("timed out waiting for \(what): \(seen)")
                throw CancellationError()
            }
            usleep(10_000)
        }
    }

    /// Runs `body` with the server on its loop and waits for it.
    func onLoop(_ body: @escaping @Sendable (Server) -> Void) {
        let done = DispatchSemaphore(value: 0)
        let server = self.server
        loop.execute {
            body(server.value)
            done.signal()
        }
        done.wait()
    }

    /// Stops it and waits until its loop returned.
    func stop() {
        loop.stop()
        XCTAssertEqual(finished.wait(timeout: .now() + 10), .success)
    }

    /// The loop side: accepts connections and answers them.
    final class Server {
        let loop: EventLoop
        let acceptor: Acceptor
        let port: UInt16
        var behaviour: Behaviour
        private let log: LinkLog
        /// The open secure links by index in `links`, with their session.
        private var sessions: [Int: (channel: WebSocketChannel, link: SecureLink)] = [:]

        init(loop: EventLoop, behaviour: Behaviour, log: LinkLog) throws {
            self.loop = loop
            self.behaviour = behaviour
            self.log = log
            let listener = try TCPListener.bind(host: "127.0.0.1", port: 0)
            port = listener.localPort
            acceptor = try Acceptor(listener: listener, loop: loop) { _ in }
            acceptor.onAccept = { [unowned self] accepted in
                guard
                    let channel = try? WebSocketChannel.accept(
                        accepted.socket, loop: loop, configuration: WebSocketChannelConfiguration(acceptsBinary: true),
                        decide: { request in
                            let offered = request.requestedSubprotocols
                            let chosen = [SecureLinkSubprotocol.pairing, SecureLinkSubprotocol.known].first { offered.contains($0) }
                            return .accept(subprotocol: chosen)
                        })
                else { return }
                channel.onEvent = { [unowned self, unowned channel] event in self.handle(event, on: channel) }
            }
        }

        private func index(of channel: WebSocketChannel) -> Int? {
            sessions.first { $0.value.channel === channel }?.key
        }

        private func handle(_ event: WebSocketChannel.Event, on channel: WebSocketChannel) {
            switch event {
            case .opened(let opening):
                let subprotocol = opening.subprotocol ?? "-"
                let i = log.links.withLock {
                    $0.append(Link(subprotocol: subprotocol)); return $0.count - 1
                }
                let greeting = JSONValue.object(
                    JSONObject([
                        ("master", .string(NodeIdentity.nodeId(publicKey: behaviour.keys[0].publicKey))), ("store", .string("shop1")),
                    ])
                ).serializedBytes()
                if subprotocol == SecureLinkSubprotocol.pairing {
                    guard let code = behaviour.code,
                        let link = try? SecureLink.pairingResponder(code: code, localStatic: behaviour.keys[0], payload: greeting)
                    else {
                        sessions[i] = (channel, SecureLink.knownResponder(keys: []))
                        return
                    }
                    sessions[i] = (channel, link)
                } else {
                    sessions[i] = (channel, SecureLink.knownResponder(keys: behaviour.keys))
                }
            case .binary(let bytes):
                guard !behaviour.silent, let i = index(of: channel), var link = sessions[i]?.link else { return }
                do {
                    var events = try link.receive(bytes)
                    if case .peerKeyPresented(let key)? = events.first {
                        log.links.withLock { $0[i].slaveKey = key }
                        if let reason = behaviour.refuseKnown {
                            channel.close(code: .policyViolation, reason: reason)
                            return
                        }
                        let index = link.responderKeyIndex ?? 0
                        var greeting = JSONObject([
                            ("master", .string(NodeIdentity.nodeId(publicKey: behaviour.keys[index].publicKey))),
                            ("store", .string("shop1")),
                        ])
                        if let reason = behaviour.refuseKnownProven {
                            greeting["refused"] = .string(reason)
                            for case .send(let out) in try link.accept(payload: JSONValue.object(greeting).serializedBytes()) {
                                channel.sendBinary(out)
                            }
                            channel.close(code: .policyViolation, reason: reason)
                            return
                        }
                        events = try link.accept(payload: JSONValue.object(greeting).serializedBytes())
                    }
                    for event in events {
                        switch event {
                        case .send(let out):
                            channel.sendBinary(out)
                        case .established(let key, _):
                            log.links.withLock { $0[i].slaveKey = key }
                            if link.responderKeyIndex == nil {
                                // Pairing: the first transport message is `paired`.
                                let paired = JSONValue.object(
                                    JSONObject([("type", .string("paired")), ("terminal", .string(NodeIdentity.nodeId(publicKey: key)))])
                                ).serializedBytes()
                                for out in try link.seal(paired, control: true) { channel.sendBinary(out) }
                            }
                        case .message(let text):
                            log.links.withLock { $0[i].messages.append(String(decoding: text, as: UTF8.self)) }
                        case .control, .peerKeyPresented:
                            break
                        }
                    }
                    sessions[i]?.link = link
                } catch {
                    channel.close(code: .policyViolation, reason: "pairing failed")
                }
            case .text, .protocolError:
                break
            case .ended:
                if let i = index(of: channel) { sessions[i] = nil }
            }
        }

        /// Sends a control message on every open link.
        func sendControl(_ message: JSONValue) {
            for (i, session) in sessions {
                var link = session.link
                guard let sealed = try? link.seal(message.serializedBytes(), control: true) else { continue }
                for out in sealed { session.channel.sendBinary(out) }
                sessions[i]?.link = link
            }
        }

        /// Closes every open link with `code`.
        func closeAll(code: CloseCode, reason: String) {
            for session in sessions.values { session.channel.close(code: code, reason: reason) }
        }
    }
}
