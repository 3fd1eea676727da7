import EventLoopIO
import WebSocket
import WebSocketTransport

/// One terminal connected to the master: the node's view of it over its WebSocket transport.
final class TerminalSession {
    /// Where the terminal is, as far as the node and its engine are concerned.
    enum Phase: Equatable {
        /// In the opening handshake; the engine does not know it yet.
        case handshaking
        /// The WebSocket is open and the secure link's handshake is going on; the engine does
        /// not know it yet and nothing of it is applied.
        case authenticating
        /// The WebSocket is open (and for a slave, authenticated) and the engine knows the
        /// terminal (the sync state is the engine's).
        case open
        /// Gone, and the engine told.
        case ended
    }

    /// How its messages travel, once the WebSocket opened.
    enum Framing {
        /// Not decided yet (the opening handshake), or refused.
        case none
        /// A StorePOS terminal: text messages in the clear (`--insecure-storepos`).
        case storePOS
        /// An OrderSync slave: binary messages of a secure link.
        case secure(SecureTerminalLink)
    }

    let id: Int
    let transport: WebSocketChannel
    let address: String
    /// The host part of `address` (the source the per-address limits count).
    let host: String
    /// When the connection was accepted, on the loop's clock.
    let connectedAt: MonotonicInstant
    var phase: Phase = .handshaking
    var framing = Framing.none
    /// The deadline of the secure link's handshake, while authenticating.
    var authenticationTimer: TimerHandle?
    /// A StorePOS app's connect sequence waits at a fence: the timer that ends the wait, and
    /// whether the settle time has passed (the wait ends once the link has written everything).
    var settleTimer: TimerHandle?
    var settleTimePassed = false
    /// The master asked for the close (its own reasons, not the terminal's goodbye).
    private(set) var closedByMaster = false
    /// A StorePOS link open when the master withdrew its service to call lost apps back: its
    /// app reconnects too when the service returns, without closing this link, so a new
    /// StorePOS link from the same address replaces it.
    var supersededOnReconnect = false
    /// A StorePOS terminal's link closed because the same address opened a new one (the app
    /// reconnected without closing its old socket).
    var replaced = false
    /// A secure handshake was admitted (a token taken) and its outcome is not counted yet:
    /// ending before authentication counts it as failed or abandoned.
    var handshakePending = false
    /// Closed to free its slot for a newer connection (before authentication); on its way out,
    /// it no longer counts against any limit.
    var evicted = false

    init(id: Int, transport: WebSocketChannel, address: String, host: String, now: MonotonicInstant) {
        self.id = id
        self.transport = transport
        self.address = address
        self.host = host
        self.connectedAt = now
    }

    /// True for an OrderSync slave on a secure link.
    var speaksOrderSync: Bool {
        if case .secure = framing { return true }
        return false
    }

    /// The secure link of a slave.
    var secure: SecureTerminalLink? {
        if case .secure(let link) = framing { return link }
        return nil
    }

    /// Still before authentication (counted against the per-address handshake limit and the
    /// pre-authentication budget); an evicted one is not.
    var isPreAuthentication: Bool { !evicted && (phase == .handshaking || phase == .authenticating) }

    /// The WebSocket once open; `nil` during the handshake and after the end.
    var link: WebSocketChannel? { phase == .open ? transport : nil }

    /// Starts the closing handshake, or drops a terminal still in the opening handshake.
    func close(code: CloseCode, reason: String) {
        if phase != .ended { closedByMaster = true }
        transport.close(code: code, reason: reason)
    }
}
