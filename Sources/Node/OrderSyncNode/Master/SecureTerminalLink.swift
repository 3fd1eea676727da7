import Foundation
import JSON
import OrderStore
import SecureLink
import WebSocketTransport

/// The master's end of one slave's secure link (Docs/SECURITY.md): the pure `SecureLink`
/// responder, which handshake it runs, and the paired terminal once the link proved it.
final class SecureTerminalLink {
    /// Which handshake the slave asked for with its subprotocol.
    enum Mode: Equatable {
        /// `ordersync.pair.v1` against the codes open when the link opened (none when its address
        /// was locked out), padded with random codes.
        case pairing([PairingCode])
        /// `ordersync.ik.v1`: a terminal paired before.
        case known
    }

    let mode: Mode
    private(set) var link: SecureLink
    /// The paired terminal the link proved to be: on `.peerKeyPresented` (known) or when the
    /// pairing completed.
    var terminal: PairedTerminal?
    /// The slave said it reads several sync messages in one transport message (its `features`
    /// control message): its broadcasts are sealed in batches (`sealBatchFrames`).
    private(set) var readsBatches = false

    init(mode: Mode, link: SecureLink) {
        self.mode = mode
        self.link = link
    }

    /// Pairing, once established: the code the slave used.
    var pairingCode: PairingCode? {
        guard case .pairing(let codes) = mode, let index = link.pairingCodeIndex, codes.indices.contains(index) else { return nil }
        return codes[index]
    }

    /// The subprotocol, for logs.
    var subprotocol: String {
        mode == .known ? SecureLinkSubprotocol.known : SecureLinkSubprotocol.pairing
    }

    /// Handles one binary WebSocket message from the slave.
    func receive(_ message: [UInt8]) throws(SecureLinkError) -> [SecureLink.Event] {
        try link.receive(message)
    }

    /// Accepts the key the slave presented (known mode): the master's handshake message follows.
    func accept(payload: [UInt8]) throws(SecureLinkError) -> [SecureLink.Event] {
        try link.accept(payload: payload)
    }

    /// The binary WebSocket messages carrying one sync message.
    func seal(_ bytes: [UInt8]) throws(SecureLinkError) -> [[UInt8]] {
        try link.seal(bytes)
    }

    /// The binary WebSocket frames (headers and all, unmasked: the master's side) carrying one
    /// sync message, each sealed in place inside its frame.
    func sealFrames(_ bytes: [UInt8]) throws(SecureLinkError) -> [[UInt8]] {
        try link.seal(bytes, frameHeader: WebSocketChannel.appendServerBinaryHeader)
    }

    /// The binary WebSocket frames carrying `messages` (sync messages, in order), as few as
    /// they fit in; only for a slave that `readsBatches`.
    func sealBatchFrames(_ messages: [[UInt8]]) throws(SecureLinkError) -> [[UInt8]] {
        try link.sealBatch(messages, frameHeader: WebSocketChannel.appendServerBinaryHeader)
    }

    /// A control message from the slave: `features` says what it reads; anything else (from a
    /// newer slave) is ignored. Returns whether it was understood.
    func control(_ bytes: [UInt8]) -> Bool {
        guard let object = (try? JSONParser.parse(bytes, maxMembersPerObject: 16))?.objectValue,
            object["type"]?.stringValue == "features"
        else { return false }
        if object["batches"] == .bool(true) { readsBatches = true }
        return true
    }

    /// The binary WebSocket messages carrying one control message (`paired`, `masterKey`).
    func sealControl(_ message: JSONObject) throws(SecureLinkError) -> [[UInt8]] {
        try link.seal(JSONValue.object(message).serializedBytes(), control: true)
    }

    /// The payload of the master's handshake message: `{"master":"<node id>","store":"<store>"}`.
    static func masterPayload(nodeId: String, store: String, refused: String? = nil) -> [UInt8] {
        var o = JSONObject([("master", .string(nodeId)), ("store", .string(store))])
        if let refused { o["refused"] = .string(refused) }
        return JSONValue.object(o).serializedBytes()
    }

    /// The name and terminal id a pairing slave sent in its last handshake message
    /// (`{"name":"<terminal name>","terminal":"<terminal id>"}`); nil members when absent or
    /// not strings.
    static func pairingRequest(_ payload: [UInt8]) -> (name: String?, terminal: String?) {
        guard let o = try? JSONParser.parse(payload).objectValue else { return (nil, nil) }
        let name = o["name"]?.stringValue.flatMap { n -> String? in
            let trimmed = n.trimmingCharacters(in: .whitespacesAndNewlines)
            return trimmed.isEmpty ? nil : String(trimmed.prefix(63))
        }
        return (name, o["terminal"]?.stringValue)
    }
}
