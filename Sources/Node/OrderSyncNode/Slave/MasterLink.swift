import EventLoopIO
import Noise
import SecureLink
import SyncCore
import WebSocket
import WebSocketTransport

/// How a link to the master ended.
struct MasterLinkEnding: Equatable {
    /// Why this side ended the link, when it did.
    enum LocalFailure: Equatable {
        /// The master did not choose the offered subprotocol (what it chose).
        case incompatible(String?)
        /// The secure link failed (closed 1008).
        case secure(SlaveSecureSession.Failure)
        /// The opening (WebSocket and Noise handshakes) took longer than the deadline.
        case handshakeTimedOut(Duration)
    }

    /// The close code, from the master's Close frame or our own.
    var closeCode: UInt16?
    /// A sentence for the log and status: the master's close reason, or what failed here.
    var reason: String
    /// Set when this side ended the link; nil when the master closed it or the connection failed.
    var localFailure: LocalFailure?
}

/// A slave's connection to its master: one `WebSocketChannel` offering one secure subprotocol
/// (`ordersync.pair.v1` to pair, `ordersync.ik.v1` after), with a `SlaveSecureSession` inside.
/// One attempt per instance; the slave makes a new one to reconnect.
///
/// The first handshake message goes out when the WebSocket opens; every binary message from
/// the master goes through the session; nothing reaches the slave before ``onSecured``, and
/// everything the slave sends is sealed and sent as binary. The WebSocket and the Noise
/// handshakes together must finish within the configuration's handshake deadline.
final class MasterLink {
    /// Where the link is. Each case holds what exists in it: the deadline only until the link
    /// is secured, the session from the WebSocket's opening on, the failure once this side
    /// ended the link.
    ///
    /// ```
    /// idle --start--> connecting --opened--> handshaking --secured--> secured
    ///                     |                      |                       |
    ///                     +----------------------+-- close/abort --------+--> closing
    ///                     +---- wrong subprotocol, deadline, secure failure ---> failed
    /// any but idle --transport ended--> ended (onEnd, once)
    /// ```
    private enum State {
        /// Made; `start()` not called yet.
        case idle
        /// TCP connect and the WebSocket opening handshake; the deadline runs.
        case connecting(WebSocketChannel, deadline: TimerHandle)
        /// The WebSocket is open and the Noise handshake under way; the deadline still runs.
        case handshaking(WebSocketChannel, SlaveSecureSession, deadline: TimerHandle)
        /// Secured: sync messages flow both ways.
        case secured(WebSocketChannel, SlaveSecureSession)
        /// The slave closed or dropped the link (`close`, `abort`); waiting for the transport to
        /// end.
        case closing(WebSocketChannel, SlaveSecureSession?)
        /// This side ended the link: why, and the sentence for the log, reported with the end.
        case failed(WebSocketChannel, MasterLinkEnding.LocalFailure, reason: String)
        /// The transport ended and `onEnd` was called.
        case ended(WebSocketChannel)

        /// The WebSocket, once started.
        var transport: WebSocketChannel? {
            switch self {
            case .idle: return nil
            case .connecting(let t, _), .handshaking(let t, _, _), .secured(let t, _), .closing(let t, _), .failed(let t, _, _),
                .ended(let t):
                return t
            }
        }

        /// The handshake deadline, while it runs.
        var deadline: TimerHandle? {
            switch self {
            case .connecting(_, let d), .handshaking(_, _, let d): return d
            case .idle, .secured, .closing, .failed, .ended: return nil
            }
        }

        /// The session, in the states that have one and still use it.
        var session: SlaveSecureSession? {
            switch self {
            case .handshaking(_, let s, _), .secured(_, let s): return s
            case .closing(_, let s): return s
            case .idle, .connecting, .failed, .ended: return nil
            }
        }

        /// The same state with `session` in place of its session (after the session handled
        /// an event).
        func with(_ session: SlaveSecureSession) -> State {
            switch self {
            case .handshaking(let t, _, let d): return .handshaking(t, session, deadline: d)
            case .secured(let t, _): return .secured(t, session)
            case .closing(let t, _): return .closing(t, session)
            case .idle, .connecting, .failed, .ended: return self
            }
        }
    }

    let url: MasterURL
    private let loop: EventLoop
    private let configuration: WebSocketChannelConfiguration
    /// How this link authenticates.
    let credential: MasterCredential
    private let localStatic: NoiseKeyPair
    private let terminalName: String
    private let terminalId: String
    private var state = State.idle
    /// When the master was last heard (any frame, a ping's answer included); nil before the
    /// transport started.
    var lastHeard: MonotonicInstant? { state.transport?.lastHeard }

    /// Pairing only, just before ``onSecured``: the master proved it held the code.
    var onPaired: (MasterGreeting) -> Void = { _ in }
    /// The link is secured: the slave may say hello.
    var onSecured: (MasterGreeting) -> Void = { _ in }
    /// A sync message from the master (UTF-8 JSON bytes).
    var onMessage: ([UInt8]) -> Void = { _ in }
    /// The master handed its trust over to a new key (32 bytes).
    var onMasterKey: (_ masterId: String, _ publicKey: [UInt8]) -> Void = { _, _ in }
    /// The master went silent past the dead-peer limit; `onEnd` follows.
    var onDead: (_ silence: Duration) -> Void = { _ in }
    /// The attempt failed or the link ended. Once.
    var onEnd: (MasterLinkEnding) -> Void = { _ in }

    init(
        url: MasterURL, loop: EventLoop, configuration: WebSocketChannelConfiguration, credential: MasterCredential,
        localStatic: NoiseKeyPair, terminalName: String, terminalId: String
    ) {
        self.url = url
        self.loop = loop
        // The secure subprotocols carry binary messages only.
        var configuration = configuration
        configuration.acceptsBinary = true
        self.configuration = configuration
        self.credential = credential
        self.localStatic = localStatic
        self.terminalName = terminalName
        self.terminalId = terminalId
    }

    /// Starts connecting; the WebSocket and Noise handshakes must finish within the
    /// configuration's deadline.
    func start() {
        guard case .idle = state else { preconditionFailure("MasterLink.start() called twice") }
        let transport = WebSocketChannel.connect(
            host: url.host, port: url.port, path: url.path,
            subprotocols: [credential.subprotocol], loop: loop,
            configuration: configuration)
        let limit = configuration.handshakeDeadline
        let deadline = loop.schedule(after: limit) { [weak self] in
            self?.deadlinePassed(limit)
        }
        state = .connecting(transport, deadline: deadline)
        transport.onEvent = { [weak self] event in
            guard let self = self else { return }
            switch event {
            case .opened(let opening):
                self.opened(subprotocol: opening.subprotocol)
            case .binary(let bytes):
                guard var session = self.state.session else { return }
                let outputs = session.received(bytes)
                self.state = self.state.with(session)
                self.carryOut(outputs)
            case .text:
                // Docs/SECURITY.md: "A text message on either subprotocol closes the link (1003)."
                guard var session = self.state.session, case .failed(let failure) = session.receivedText() else { return }
                self.state = self.state.with(session)
                self.fail(.secure(failure), "secure link failed: \(failure.reason)", code: .unsupportedData)
            case .protocolError:
                break
            case .ended(let ending):
                self.transportEnded(ending)
            }
        }
    }

    /// The handshake deadline passed before the link was secured.
    private func deadlinePassed(_ limit: Duration) {
        switch state {
        case .connecting(let t, _):
            state = .closing(t, nil)
        case .handshaking(let t, let s, _):
            // Secured, with the news not carried out yet (the transport closed under it).
            guard !s.isSecured else { return }
            state = .closing(t, s)
        case .idle, .secured, .closing, .failed, .ended:
            return
        }
        // The timer fired: the state lets go of it without cancelling it.
        fail(.handshakeTimedOut(limit), "no secure handshake within \(limit.wholeMilliseconds) ms")
    }

    private func opened(subprotocol: String?) {
        guard case .connecting(let transport, let deadline) = state else { return }
        guard subprotocol == credential.subprotocol else {
            fail(
                .incompatible(subprotocol),
                "the master did not accept subprotocol \(credential.subprotocol) (chose \(subprotocol ?? "none"))")
            return
        }
        let (session, outputs) = SlaveSecureSession.start(
            credential: credential, localStatic: localStatic, terminalName: terminalName, terminalId: terminalId,
            options: SecureLinkOptions(
                maxMessageBytes: max(configuration.limits.maxMessageSize, NodeDefaults.largestSnapshotPartBytes),
                maxSealedMessageBytes: configuration.limits.maxMessageSize))
        state = .handshaking(transport, session, deadline: deadline)
        carryOut(outputs)
    }

    /// The transport reported its end: the link's end goes to the slave, once.
    private func transportEnded(_ ending: WebSocketChannel.Ending) {
        guard let transport = state.transport else { return }
        if case .ended = state { return }
        let failure: (MasterLinkEnding.LocalFailure, String)?
        if case .failed(_, let f, let reason) = state { failure = (f, reason) } else { failure = nil }
        if let d = state.deadline { loop.cancel(d) }
        state = .ended(transport)
        if case .peerSilent(let silence) = ending.cause { onDead(silence) }
        onEnd(MasterLinkEnding(closeCode: ending.closeCode?.rawValue, reason: failure?.1 ?? "\(ending)", localFailure: failure?.0))
    }

    /// Does what the session asked, in order; stops once the link is being ended.
    private func carryOut(_ outputs: [SlaveSecureSession.Output]) {
        for output in outputs {
            guard let transport = state.transport, transport.isOpen else { return }
            if case .failed = state { return }
            switch output {
            case .send(let bytes):
                transport.sendBinary(bytes)
            case .paired(let greeting):
                onPaired(greeting)
            case .secured(let greeting):
                if case .handshaking(let t, let s, let d) = state {
                    loop.cancel(d)
                    state = .secured(t, s)
                }
                onSecured(greeting)
            case .message(let bytes):
                onMessage(bytes)
            case .masterKeyHandover(let id, let key):
                onMasterKey(id, key)
            case .failed(let failure):
                fail(.secure(failure), "secure link failed: \(failure.reason)")
            }
        }
    }

    /// Ends the link from this side with `code` (1008 unless told), for `reason`.
    private func fail(_ failure: MasterLinkEnding.LocalFailure, _ reason: String, code: CloseCode = .policyViolation) {
        switch state {
        case .idle, .failed, .ended:
            return
        case .connecting, .handshaking, .secured, .closing:
            break
        }
        guard let transport = state.transport else { return }
        if let d = state.deadline { loop.cancel(d) }
        state = .failed(transport, failure, reason: reason)
        if transport.isOpen {
            transport.close(code: code, reason: String(reason.prefix(100)))
        } else {
            transport.abort(reason: reason)
        }
    }

    /// Leaves the handshake states for `closing` (the deadline no longer runs); other states
    /// stay as they are.
    private func closingFromHere() {
        switch state {
        case .connecting(let t, let d):
            loop.cancel(d)
            state = .closing(t, nil)
        case .handshaking(let t, let s, let d):
            loop.cancel(d)
            state = .closing(t, s)
        case .secured(let t, let s):
            state = .closing(t, s)
        case .idle, .closing, .failed, .ended:
            break
        }
    }

    /// What the link carried so far (`NodeMetrics`).
    var traffic: TrafficCounts { state.transport?.traffic ?? TrafficCounts() }

    /// The WebSocket once open; `nil` before.
    var link: WebSocketChannel? {
        let transport = state.transport
        switch transport?.phase {
        case .open, .closing, .closed, .ended: return transport
        case .resolving, .handshaking, nil: return nil
        }
    }

    /// Seals and sends one sync message (once secured; before, the link fails).
    func send(_ bytes: [UInt8]) {
        switch state {
        case .handshaking(_, var session, _), .secured(_, var session):
            let outputs = session.seal(bytes)
            state = state.with(session)
            carryOut(outputs)
        case .idle, .connecting, .closing, .failed, .ended:
            return
        }
    }

    /// Starts the close handshake, or drops a link still connecting.
    func close(code: CloseCode, reason: String) {
        closingFromHere()
        state.transport?.close(code: code, reason: reason)
    }

    /// Drops the link at once.
    func abort(reason: String) {
        closingFromHere()
        state.transport?.abort(reason: reason)
    }

    /// Whether the link is gone (or never started).
    var isEnded: Bool { state.transport?.isEnded ?? true }
}
