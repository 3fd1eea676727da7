import EventLoopIO
import WebSocket

extension WebSocketChannel {
    /// What the owner learns about its connection, in order, on the loop thread.
    public enum Event {
        /// The opening handshake succeeded.
        case opened(Opening)
        /// A complete text message (only while open).
        case text(String)
        /// A complete binary message (only while open, and only when binary is accepted).
        case binary([UInt8])
        /// The peer violated the protocol or a limit; our Close frame was sent and `.ended`
        /// follows once TCP is closed.
        case protocolError(WebSocketError)
        /// The connection is gone, TCP included. Always the last event, exactly once.
        case ended(Ending)
    }

    /// The outcome of the opening handshake.
    public struct Opening: Sendable {
        /// The subprotocol in force: the one the server chose (client), or the one we accepted
        /// with (server); `nil` for none.
        public var subprotocol: String?
        /// (Server) the client's request; `nil` on the client side.
        public var request: HandshakeRequest?
    }

    /// The owner's answer to a client's valid opening request (server side).
    public enum HandshakeDecision: Sendable {
        /// Answer `101 Switching Protocols`, selecting `subprotocol` (one the client offered) or
        /// none.
        case accept(subprotocol: String?)
        /// Answer with this HTTP error and close.
        case reject(HTTPRejection)
    }

    /// What the owner did when the peer went quiet for the heartbeat's idle interval.
    public enum IdleResponse: Sendable {
        /// Nothing of its own: the channel pings.
        case ping
        /// It sent a message of its own that the peer answers; no ping is needed.
        case sentHeartbeat
    }

    /// Why a connection ended.
    public struct Ending: Equatable, CustomStringConvertible {
        /// The cause.
        public enum Cause: Equatable {
            /// The closing handshake completed; `code` and `reason` are the peer's.
            case closed(code: CloseCode?, reason: String)
            /// The peer violated the protocol or a limit; we sent `error.closeCode`.
            case failed(WebSocketError)
            /// (Server) the opening request was refused with this HTTP error.
            case rejected(HTTPRejection)
            /// (Client) the server refused or botched the opening handshake.
            case handshakeFailed(WebSocketError)
            /// The opening handshake did not finish within the deadline.
            case handshakeTimedOut(Duration)
            /// A started frame did not complete within the deadline; we sent 1008.
            case frameTimedOut(Duration)
            /// The peer did not answer the Close we sent (with this code) in time.
            case closeTimedOut(CloseCode, reason: String)
            /// Nothing came from the peer for this long: declared dead.
            case peerSilent(Duration)
            /// The owner dropped the connection, for this reason.
            case aborted(String)
            /// (Client) the name lookup or the connect failed at once.
            case unreachable(PosixError)
            /// TCP ended before the WebSocket did (peer vanished, send buffer full, refused).
            case dropped(StreamChannel.CloseReason)
        }

        /// The cause.
        public var cause: Cause

        /// An ending from its cause.
        public init(_ cause: Cause) {
            self.cause = cause
        }

        /// The close code received (closing handshake) or sent (failure, deadline, unanswered
        /// close); `nil` when no Close frame was involved.
        public var closeCode: CloseCode? {
            switch cause {
            case .closed(let code, _): return code
            case .failed(let error): return error.closeCode
            case .frameTimedOut: return .policyViolation
            case .closeTimedOut(let code, _): return code
            case .rejected, .handshakeFailed, .handshakeTimedOut, .peerSilent, .aborted, .unreachable, .dropped:
                return nil
            }
        }

        /// Text for logs.
        public var description: String {
            switch cause {
            case .closed(_, let reason): return reason.isEmpty ? "closed by peer" : reason
            case .failed(let error): return "\(error)"
            case .rejected(let rejection): return "handshake rejected (\(rejection.status))"
            case .handshakeFailed(let error): return "WebSocket handshake refused: \(error)"
            case .handshakeTimedOut(let limit): return "no WebSocket handshake within \(limit.wholeMilliseconds) ms"
            case .frameTimedOut(let limit): return "frame not completed within \(limit.wholeMilliseconds) ms"
            case .closeTimedOut(_, let reason): return reason + " (peer did not answer the close)"
            case .peerSilent(let silence): return "peer silent for \(silence.wholeMilliseconds) ms"
            case .aborted(let reason): return reason
            case .unreachable(let error): return "\(error)"
            case .dropped(let reason): return "\(reason)"
            }
        }
    }
}
