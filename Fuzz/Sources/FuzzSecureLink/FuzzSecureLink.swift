import Noise
import SecureLink

// Feeds arbitrary bytes to the secure link, as a peer on the LAN could, and checks what must hold
// whatever arrives:
//
// - nothing traps (every problem is a `SecureLinkError`);
// - a failed link stays failed: it refuses the next message with `.wrongState`;
// - a handshake completes only with the fixed honest peer's key (the seeds hold its messages;
//   nothing else can be forged), and a transport receiver only delivers whole messages;
// - honest transport messages with one edit deliver exactly the messages before the edit, and
//   nothing after it.
//
// The first input byte picks a scenario; the rest is a sequence of messages, each a 2-byte
// big-endian length and that many bytes (the last one takes what is left). Keys and randomness
// are fixed so a run is reproducible.

/// libFuzzer's entry point.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    guard let selector = input.first else { return 0 }
    let rest = Array(input.dropFirst())
    switch selector % 6 {
    case 0: feedKnownResponder(messages(rest))
    case 1: feedPairingResponder(messages(rest))
    case 2: feedInitiator(messages(rest), pairing: false)
    case 3: feedInitiator(messages(rest), pairing: true)
    case 4: feedEstablished(messages(rest))
    default: editHonestTransport(rest)
    }
    return 0
}

/// Traps with `message` (libFuzzer records the input as a crash) unless `condition` holds.
private func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() {
        fatalError("fuzz invariant violated: \(message())")
    }
}

/// Splits `bytes` into messages of a 2-byte big-endian length and that many bytes.
private func messages(_ bytes: [UInt8]) -> [[UInt8]] {
    var result: [[UInt8]] = []
    var offset = 0
    while offset + 2 <= bytes.count {
        let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
        let start = offset + 2
        let end = min(start + length, bytes.count)
        result.append(Array(bytes[start..<end]))
        offset = end
    }
    return result
}

private func key(_ byte: UInt8) -> NoiseKeyPair {
    do throws(NoiseError) {
        return try NoiseKeyPair(privateKey: [UInt8](repeating: byte, count: 32))
    } catch {
        fatalError("a 32-byte key was refused: \(error)")
    }
}

/// A fixed "random" source, so every run is reproducible.
private let fixedRandom = NoiseRandomSource { count in (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 73 &+ 5) } }
private let slaveStatic = key(0x11)
private let masterStatic = key(0x22)
private let previousMasterStatic = key(0x33)
private let code: PairingCode = {
    do throws(SecureLinkError) {
        return try PairingCode(bytes: Array(1...10))
    } catch {
        fatalError("a 10-byte code was refused: \(error)")
    }
}()
private let options = SecureLinkOptions(maxMessageBytes: 200_000, rekeyInterval: 2)

/// Checks that a link that just refused a message is failed for good.
private func requireFailed(_ link: inout SecureLink, _ error: SecureLinkError, _ what: String) {
    require(link.phase == .failed, "\(what): a refused message left phase \(link.phase) after \(error)")
    do throws(SecureLinkError) {
        _ = try link.receive([])
        require(false, "\(what): a failed link accepted another message after \(error)")
    } catch {
        require(error.kind == .wrongState, "\(what): a failed link answered \(error), not wrongState")
    }
    do throws(SecureLinkError) {
        _ = try link.seal([1])
        require(false, "\(what): a failed link sealed a message")
    } catch {
        require(error.kind == .wrongState, "\(what): a failed link's seal answered \(error), not wrongState")
    }
}

/// Feeds `messages` to `link` until one fails; answers a presented key with `accept`.
private func feed(_ link: inout SecureLink, _ messages: [[UInt8]], _ what: String) -> [SecureLink.Event] {
    var events: [SecureLink.Event] = []
    for message in messages {
        do throws(SecureLinkError) {
            let new = try link.receive(message)
            events += new
            if new.contains(where: { if case .peerKeyPresented = $0 { true } else { false } }) {
                events += try link.accept(payload: [7])
            }
        } catch {
            requireFailed(&link, error, what)
            return events
        }
    }
    return events
}

private func feedKnownResponder(_ messages: [[UInt8]]) {
    var link = SecureLink.knownResponder(keys: [masterStatic, previousMasterStatic], options: options, random: fixedRandom)
    let events = feed(&link, messages, "known responder")
    requireOnlyPeer(slaveStatic.publicKey, events, "known responder")
}

private func feedPairingResponder(_ messages: [[UInt8]]) {
    var link: SecureLink
    do throws(SecureLinkError) {
        link = try SecureLink.pairingResponder(
            code: code, localStatic: masterStatic, payload: [1], options: options, random: fixedRandom)
    } catch {
        fatalError("setting up a pairing responder failed: \(error)")
    }
    let events = feed(&link, messages, "pairing responder")
    // Message 1 is cleartext, so a forged one is answered; message 3 needs the code.
    requireOnlyPeer(slaveStatic.publicKey, events, "pairing responder")
}

private func feedInitiator(_ messages: [[UInt8]], pairing: Bool) {
    var link: SecureLink
    do throws(SecureLinkError) {
        link =
            pairing
            ? try SecureLink.pairingInitiator(
                code: code, localStatic: slaveStatic, payload: [2], options: options, random: fixedRandom
            ).0
            : try SecureLink.knownInitiator(
                masterKey: masterStatic.publicKey, localStatic: slaveStatic, options: options, random: fixedRandom
            ).0
    } catch {
        fatalError("setting up an initiator failed: \(error)")
    }
    let events = feed(&link, messages, pairing ? "pairing initiator" : "known initiator")
    if !pairing {
        requireOnlyPeer(masterStatic.publicKey, events, "known initiator")
    }
}

/// A slave and master, established once (the handshake is deterministic) and copied per input.
private let establishedPair: (slave: SecureLink, master: SecureLink) = {
    do throws(SecureLinkError) {
        var (slave, first) = try SecureLink.knownInitiator(
            masterKey: masterStatic.publicKey, localStatic: slaveStatic, options: options, random: fixedRandom)
        var master = SecureLink.knownResponder(keys: [masterStatic], options: options, random: fixedRandom)
        guard case .send(let message1) = first[0] else { fatalError("no first message") }
        _ = try master.receive(message1)
        guard case .send(let message2) = try master.accept(payload: [])[0] else { fatalError("no second message") }
        _ = try slave.receive(message2)
        return (slave, master)
    } catch {
        fatalError("establishing a link failed: \(error)")
    }
}()

private func feedEstablished(_ messages: [[UInt8]]) {
    var master = establishedPair.master
    let events = feed(&master, messages, "established receiver")
    for event in events {
        switch event {
        case .message, .control: continue
        default: require(false, "an established link produced \(event)")
        }
    }
}

/// Checks that every key presented or established in `events` is `peer`'s.
private func requireOnlyPeer(_ peer: [UInt8], _ events: [SecureLink.Event], _ what: String) {
    for event in events {
        switch event {
        case .peerKeyPresented(let key), .established(let key, _):
            require(key == peer, "\(what) accepted a key that is not the honest peer's: \(event)")
        case .send, .message, .control: continue
        }
    }
}

/// Seals messages whose sizes and kinds the input gives, applies one edit (truncate, flip,
/// drop, duplicate or swap) and checks the receiver delivers exactly the messages before it.
private func editHonestTransport(_ input: [UInt8]) {
    guard input.count >= 4 else { return }
    var (slave, master) = establishedPair
    var plain: [[UInt8]] = []
    var wire: [[UInt8]] = []
    var owner: [Int] = [] // which plain message each wire message belongs to
    for (index, byte) in input.dropFirst(4).prefix(4).enumerated() {
        // Sizes up to two chunks (255 * 300 bytes), from the byte.
        let size = Int(byte) * 300
        let message = (0..<size).map { UInt8(truncatingIfNeeded: $0 &+ index) }
        do throws(SecureLinkError) {
            let sealed = try slave.seal(message, control: byte & 1 == 1)
            plain.append(message)
            wire += sealed
            owner += Array(repeating: plain.count - 1, count: sealed.count)
        } catch {
            fatalError("sealing \(size) bytes failed: \(error)")
        }
    }
    guard !wire.isEmpty else { return }
    let target = Int(input[1]) % wire.count
    var edited = wire
    switch input[0] % 5 {
    case 0: edited[target] = Array(edited[target].prefix(Int(input[2])))
    case 1: edited[target][Int(input[2]) % edited[target].count] ^= input[3] | 1
    case 2:
        // Dropping the very last message is invisible until the next one: nothing to check.
        guard target + 1 < edited.count else { return }
        edited.remove(at: target)
    case 3: edited.insert(edited[target], at: target)
    default:
        guard target + 1 < edited.count else { return }
        edited.swapAt(target, target + 1)
    }
    let events = feed(&master, edited, "edited transport")
    if edited == wire {
        // A truncation past the end changes nothing: everything arrives.
        require(
            events
                == plain.indices.map { index in
                    input[4 + index] & 1 == 1 ? .control(plain[index]) : .message(plain[index])
                }, "the unedited stream delivered \(events.count) of \(plain.count) messages")
        require(master.phase == .established, "the unedited stream left the receiver \(master.phase)")
        return
    }
    let messagesBefore = owner[target]
    // A message whose chunks all came before the edit may arrive; nothing from the edit on.
    let delivered = events.map { event -> [UInt8] in
        switch event {
        case .message(let bytes), .control(let bytes): return bytes
        default: fatalError("a transport receiver produced \(event)")
        }
    }
    require(
        delivered == Array(plain.prefix(delivered.count)) && delivered.count <= messagesBefore + (input[0] % 5 == 3 ? 1 : 0),
        "edit \(input[0] % 5) at \(target) delivered \(delivered.count) messages, \(messagesBefore) came before it")
    require(master.phase == .failed, "an edited stream left the receiver \(master.phase)")
}
