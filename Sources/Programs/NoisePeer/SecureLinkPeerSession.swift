import Noise
import SecureLink

/// The `--secure-link` mode of `ordersync-noise-peer`: one `SecureLink` driven by command lines.
///
/// Commands (hex arguments, an empty argument for empty bytes):
///
/// - `start`: an initiator's first events (its first handshake message).
/// - `receive HEX`: one binary WebSocket message from the peer.
/// - `accept HEX`: IK responder, after `presented`: message 2 with payload HEX.
/// - `seal HEX`, `seal-control HEX`: one application message, as `send` events.
/// - `seal-batch HEX,HEX,...`: sync messages sealed together (`SecureLink.sealBatch`), as `send` events.
/// - `phase`: `ok handshaking|awaitingAcceptance|established|failed`; `key-index`: `ok N` or `ok -`;
///   `hash`: the handshake hash.
///
/// Events answer as `ok` followed by space-separated `send:HEX`, `presented:KEY`,
/// `established:KEY:PAYLOAD`, `message:HEX`, `control:HEX`. Any failure answers
/// `error KIND MESSAGE` (KIND is a `SecureLinkError.Kind`, or `usage`).
struct SecureLinkPeerSession {
    private var link: SecureLink
    private var initialEvents: [SecureLink.Event]

    /// A session around `link`, whose construction produced `initialEvents`.
    init(link: SecureLink, initialEvents: [SecureLink.Event]) {
        self.link = link
        self.initialEvents = initialEvents
    }

    /// The answer to one command line.
    mutating func answer(_ line: String) -> String {
        let parts = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
        let command = parts.first.map(String.init) ?? ""
        let argument = parts.count > 1 ? String(parts[1]) : ""
        if command == "seal-batch" {
            let messages = argument.split(separator: ",", omittingEmptySubsequences: false).map { PeerHex.bytes(String($0)) }
            guard messages.allSatisfy({ $0 != nil }) else { return "error usage not hex: \(argument.prefix(40))" }
            do throws(SecureLinkError) {
                return Self.format(try link.sealBatch(messages.compactMap { $0 }).map(SecureLink.Event.send))
            } catch {
                return "error \(error.kind.rawValue) \(error.message)"
            }
        }
        guard let bytes = PeerHex.bytes(argument) else { return "error usage not hex: \(argument.prefix(40))" }
        do throws(SecureLinkError) {
            switch command {
            case "start":
                defer { initialEvents = [] }
                return Self.format(initialEvents)
            case "receive": return Self.format(try link.receive(bytes))
            case "accept": return Self.format(try link.accept(payload: bytes))
            case "seal": return Self.format(try link.seal(bytes).map(SecureLink.Event.send))
            case "seal-control": return Self.format(try link.seal(bytes, control: true).map(SecureLink.Event.send))
            case "phase": return "ok \(link.phase)"
            case "key-index": return "ok " + (link.responderKeyIndex.map { String($0) } ?? "-")
            case "hash": return "ok " + PeerHex.string(link.handshakeHash ?? [])
            default: return "error usage unknown command \(command)"
            }
        } catch {
            return "error \(error.kind.rawValue) \(error.message)"
        }
    }

    private static func format(_ events: [SecureLink.Event]) -> String {
        (["ok"]
            + events.map { event in
                switch event {
                case .send(let bytes): return "send:" + PeerHex.string(bytes)
                case .peerKeyPresented(let key): return "presented:" + PeerHex.string(key)
                case .established(let key, let payload):
                    return "established:" + PeerHex.string(key) + ":" + PeerHex.string(payload)
                case .message(let bytes): return "message:" + PeerHex.string(bytes)
                case .control(let bytes): return "control:" + PeerHex.string(bytes)
                }
            }).joined(separator: " ")
    }
}
