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
    let url: MasterURL
    private let loop: EventLoop
    private let configuration: WebSocketChannelConfiguration
    /// How this link authenticates.
    let credential: MasterCredential
    private let localStatic: NoiseKeyPair
    private let terminalName: String
    private let terminalId: String
    private var transport: WebSocketChannel?
    /// The secure session, from the WebSocket's opening on.
    private var session: SlaveSecureSession?
    private var deadline: TimerHandle?
    /// Why this side ended the link, and the sentence for the log, reported with the end.
    private var localFailure: MasterLinkEnding.LocalFailure?
    private var localReason = ""

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
        let transport = WebSocketChannel.connect(
            host: url.host, port: url.port, path: url.path,
            subprotocols: [credential.subprotocol], loop: loop,
            configuration: configuration)
        self.transport = transport
        let limit = configuration.handshakeDeadline
        deadline = loop.schedule(after: limit) { [weak self] in
            guard let self = self else { return }
            self.deadline = nil
            guard !(self.session?.isSecured ?? false) else { return }
            self.fail(.handshakeTimedOut(limit), "no secure handshake within \(limit.wholeMilliseconds) ms")
        }
        transport.onEvent = { [weak self] event in
            guard let self = self else { return }
            switch event {
            case .opened(let opening):
                self.opened(subprotocol: opening.subprotocol)
            case .binary(let bytes):
                guard var session = self.session else { return }
                let outputs = session.received(bytes)
                self.session = session
                self.carryOut(outputs)
            case .text:
                // Docs/SECURITY.md: "A text message on either subprotocol closes the link (1003)."
                guard var session = self.session, case .failed(let failure) = session.receivedText() else { return }
                self.session = session
                self.fail(.secure(failure), "secure link failed: \(failure.reason)", code: .unsupportedData)
            case .protocolError:
                break
            case .ended(let ending):
                self.cancelDeadline()
                if case .peerSilent(let silence) = ending.cause { self.onDead(silence) }
                let reason = self.localFailure == nil ? "\(ending)" : self.localReason
                self.onEnd(MasterLinkEnding(closeCode: ending.closeCode?.rawValue, reason: reason, localFailure: self.localFailure))
            }
        }
    }

    private func opened(subprotocol: String?) {
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
        self.session = session
        carryOut(outputs)
    }

    /// Does what the session asked, in order; stops once the link is being ended.
    private func carryOut(_ outputs: [SlaveSecureSession.Output]) {
        for output in outputs {
            guard localFailure == nil, let transport, transport.isOpen else { return }
            switch output {
            case .send(let bytes):
                transport.sendBinary(bytes)
            case .paired(let greeting):
                onPaired(greeting)
            case .secured(let greeting):
                cancelDeadline()
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
        guard localFailure == nil else { return }
        localFailure = failure
        localReason = reason
        cancelDeadline()
        if transport?.isOpen ?? false {
            transport?.close(code: code, reason: String(reason.prefix(100)))
        } else {
            transport?.abort(reason: reason)
        }
    }

    private func cancelDeadline() {
        if let d = deadline { loop.cancel(d) }
        deadline = nil
    }

    /// The WebSocket once open; `nil` before.
    /// What the link carried so far (`NodeMetrics`).
    var traffic: TrafficCounts { transport?.traffic ?? TrafficCounts() }

    var link: WebSocketChannel? {
        switch transport?.phase {
        case .open, .closing, .closed, .ended: return transport
        case .resolving, .handshaking, nil: return nil
        }
    }

    /// Seals and sends one sync message (once secured; before, the link fails).
    func send(_ bytes: [UInt8]) {
        guard var session, localFailure == nil else { return }
        let outputs = session.seal(bytes)
        self.session = session
        carryOut(outputs)
    }

    /// Starts the close handshake, or drops a link still connecting.
    func close(code: CloseCode, reason: String) {
        cancelDeadline()
        transport?.close(code: code, reason: reason)
    }

    /// Drops the link at once.
    func abort(reason: String) {
        cancelDeadline()
        transport?.abort(reason: reason)
    }

    /// Whether the link is gone (or never started).
    var isEnded: Bool { transport?.isEnded ?? true }
}
