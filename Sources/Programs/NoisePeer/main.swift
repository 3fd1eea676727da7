import Noise

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
// It prints `ready PUBLIC-STATIC-HEX` (or `ready -`), then answers each command line on stdin
// with one line on stdout (see NoisePeerSession); it exits at end of input.

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
    default: fail("unknown option \(option)")
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
