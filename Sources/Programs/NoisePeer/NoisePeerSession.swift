import Noise

/// The pure half of `ordersync-noise-peer`: one command line in, one answer line out.
///
/// Commands (hex arguments, an empty argument for empty bytes):
///
/// - `write HEX`: the next handshake message carrying payload HEX, or after the handshake a
///   transport message; answers `ok HEX`.
/// - `read HEX`: reads a handshake or transport message; answers `ok PAYLOAD-HEX`.
/// - `rekey-send`, `rekey-receive`: `Rekey()` on one direction; answers `ok`.
/// - `hash`: the handshake hash; `remote-static`: the peer's static key (`ok -` if none).
///
/// Any failure answers `error CODE MESSAGE` (CODE is a `NoiseError.Code`, or `usage`).
struct NoisePeerSession {
    private enum Phase {
        case handshaking(NoiseHandshakeState)
        case transport(NoiseTransportSession)
    }

    private var phase: Phase

    /// A session running `handshake`.
    init(handshake: NoiseHandshakeState) {
        phase = .handshaking(handshake)
    }

    /// The answer to one command line.
    mutating func answer(_ line: String) -> String {
        let parts = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
        let command = parts.first.map(String.init) ?? ""
        let argument = parts.count > 1 ? String(parts[1]) : ""
        do {
            switch command {
            case "write":
                return "ok " + PeerHex.string(try write(try bytes(argument)))
            case "read":
                return "ok " + PeerHex.string(try read(try bytes(argument)))
            case "rekey-send":
                try rekey(sending: true)
                return "ok"
            case "rekey-receive":
                try rekey(sending: false)
                return "ok"
            case "hash":
                switch phase {
                case .handshaking(let handshake): return "ok " + PeerHex.string(handshake.handshakeHash ?? [])
                case .transport(let session): return "ok " + PeerHex.string(session.handshakeHash)
                }
            case "remote-static":
                let key: [UInt8]?
                switch phase {
                case .handshaking(let handshake): key = handshake.remoteStaticKey
                case .transport(let session): key = session.remoteStaticKey
                }
                return "ok " + (key.map(PeerHex.string) ?? "-")
            default:
                return "error usage unknown command \(command)"
            }
        } catch let error as NoiseError {
            return "error \(error.code.rawValue) \(error.message)"
        } catch {
            return "error usage \(error)"
        }
    }

    private func bytes(_ hex: String) throws(PeerUsageError) -> [UInt8] {
        guard let bytes = PeerHex.bytes(hex) else { throw PeerUsageError(message: "not hex: \(hex.prefix(40))") }
        return bytes
    }

    private mutating func write(_ payload: [UInt8]) throws(NoiseError) -> [UInt8] {
        switch phase {
        case .handshaking(var handshake):
            do throws(NoiseError) {
                let message = try handshake.writeMessage(payload: payload)
                try advance(handshake)
                return message
            } catch {
                phase = .handshaking(handshake)
                throw error
            }
        case .transport(var session):
            defer { phase = .transport(session) }
            return try session.encrypt(payload)
        }
    }

    private mutating func read(_ message: [UInt8]) throws(NoiseError) -> [UInt8] {
        switch phase {
        case .handshaking(var handshake):
            do throws(NoiseError) {
                let payload = try handshake.readMessage(message)
                try advance(handshake)
                return payload
            } catch {
                phase = .handshaking(handshake)
                throw error
            }
        case .transport(var session):
            defer { phase = .transport(session) }
            return try session.decrypt(message)
        }
    }

    /// Keeps the handshake, or moves to the transport phase after its last message.
    private mutating func advance(_ handshake: NoiseHandshakeState) throws(NoiseError) {
        var handshake = handshake
        phase = handshake.isComplete ? .transport(try handshake.takeTransportSession()) : .handshaking(handshake)
    }

    private mutating func rekey(sending: Bool) throws(NoiseError) {
        guard case .transport(var session) = phase else {
            throw NoiseError(.wrongState, "the handshake is not complete")
        }
        defer { phase = .transport(session) }
        if sending {
            try session.rekeySending()
        } else {
            try session.rekeyReceiving()
        }
    }
}

/// A command line that is not understood.
struct PeerUsageError: Error {
    var message: String
}
