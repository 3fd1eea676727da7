import Noise
import SecureLink

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// ordersync-noise-peer: the Noise module as a line-driven test peer, for interop tests against
// an independent implementation (Tests/noise drives it against Python's `noiseprotocol`).
//
//   ordersync-noise-peer --protocol NAME --role initiator|responder [--prologue HEX]
//                        [--static PRIVATE-HEX] [--remote-static PUBLIC-HEX] [--psk HEX]...
//
//   ordersync-noise-peer --secure-link pairing-initiator|pairing-responder|known-initiator|known-responder
//                        --static PRIVATE-HEX [--previous-static PRIVATE-HEX] [--code CODE]
//                        [--master-key PUBLIC-HEX] [--payload HEX] [--max-message-bytes N]
//                        [--rekey-interval N]
//
// It prints `ready PUBLIC-STATIC-HEX` (or `ready -`), then answers each command line on stdin
// with one line on stdout (see NoisePeerSession, or SecureLinkPeerSession with --secure-link);
// it exits at end of input.

func fail(_ message: String) -> Never {
    FileHandleLine.standardError("ordersync-noise-peer: \(message)")
    exit(2)
}

var protocolName: String?
var role: NoiseRole?
var prologue: [UInt8] = []
var localStatic: NoiseKeyPair?
var remoteStatic: [UInt8]?
var preSharedKeys: [[UInt8]] = []
var secureLinkMode: String?
var previousStatic: NoiseKeyPair?
var pairingCode: PairingCode?
var payload: [UInt8] = []
var linkOptions = SecureLinkOptions()

var arguments = CommandLine.arguments.dropFirst()
while let option = arguments.popFirst() {
    guard let value = arguments.popFirst() else { fail("\(option) needs a value") }
    func hex() -> [UInt8] {
        guard let bytes = PeerHex.bytes(value) else { fail("\(option): not hex") }
        return bytes
    }
    switch option {
    case "--protocol": protocolName = value
    case "--role":
        guard let parsed = NoiseRole(rawValue: value) else { fail("--role is initiator or responder") }
        role = parsed
    case "--prologue": prologue = hex()
    case "--static":
        do { localStatic = try NoiseKeyPair(privateKey: hex()) } catch { fail("--static: \(error)") }
    case "--remote-static": remoteStatic = hex()
    case "--psk": preSharedKeys.append(hex())
    case "--secure-link": secureLinkMode = value
    case "--previous-static":
        do { previousStatic = try NoiseKeyPair(privateKey: hex()) } catch { fail("--previous-static: \(error)") }
    case "--code":
        do { pairingCode = try PairingCode(parsing: value) } catch { fail("--code: \(error)") }
    case "--master-key": remoteStatic = hex()
    case "--payload": payload = hex()
    case "--max-message-bytes":
        guard let number = Int(value) else { fail("--max-message-bytes: not a number") }
        linkOptions.maxMessageBytes = number
    case "--rekey-interval":
        guard let number = UInt64(value) else { fail("--rekey-interval: not a number") }
        linkOptions.rekeyInterval = number
    default: fail("unknown option \(option)")
    }
}
if let secureLinkMode {
    var session = makeSecureLinkSession(mode: secureLinkMode)
    FileHandleLine.standardOutput("ready " + (localStatic.map { PeerHex.string($0.publicKey) } ?? "-"))
    while let line = readLine(strippingNewline: true) {
        FileHandleLine.standardOutput(session.answer(line))
    }
    exit(0)
}

/// The `--secure-link` session the options describe.
@MainActor func makeSecureLinkSession(mode: String) -> SecureLinkPeerSession {
    guard let localStatic else { fail("--secure-link needs --static") }
    do {
        switch mode {
        case "pairing-initiator", "pairing-responder":
            guard let pairingCode else { fail("\(mode) needs --code") }
            if mode == "pairing-responder" {
                let link = try SecureLink.pairingResponder(
                    code: pairingCode, localStatic: localStatic, payload: payload, options: linkOptions)
                return SecureLinkPeerSession(link: link, initialEvents: [])
            }
            let (link, events) = try SecureLink.pairingInitiator(
                code: pairingCode, localStatic: localStatic, payload: payload, options: linkOptions)
            return SecureLinkPeerSession(link: link, initialEvents: events)
        case "known-initiator":
            guard let remoteStatic else { fail("known-initiator needs --master-key") }
            let (link, events) = try SecureLink.knownInitiator(
                masterKey: remoteStatic, localStatic: localStatic, options: linkOptions)
            return SecureLinkPeerSession(link: link, initialEvents: events)
        case "known-responder":
            let link = SecureLink.knownResponder(keys: [localStatic] + (previousStatic.map { [$0] } ?? []), options: linkOptions)
            return SecureLinkPeerSession(link: link, initialEvents: [])
        default:
            fail("--secure-link is pairing-initiator, pairing-responder, known-initiator or known-responder")
        }
    } catch {
        fail("\(error)")
    }
}

guard let protocolName, let role else { fail("--protocol and --role are required") }

var session: NoisePeerSession
do {
    let handshake = try NoiseHandshakeState(
        protocol: NoiseProtocol(name: protocolName), role: role, prologue: prologue,
        localStaticKey: localStatic, remoteStaticKey: remoteStatic, preSharedKeys: preSharedKeys)
    session = NoisePeerSession(handshake: handshake)
} catch {
    fail("\(error)")
}

FileHandleLine.standardOutput("ready " + (localStatic.map { PeerHex.string($0.publicKey) } ?? "-"))
while let line = readLine(strippingNewline: true) {
    FileHandleLine.standardOutput(session.answer(line))
}
