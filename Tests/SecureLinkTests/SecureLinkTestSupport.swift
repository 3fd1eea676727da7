import Noise
import SecureLink
import Synchronization
import XCTest

/// Lowercase hex of `bytes`.
func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef")
    return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0F)]] })
}

/// A deterministic random source: successive bytes of a counter started at `seed`.
func counterRandom(seed: UInt8) -> NoiseRandomSource {
    let counter = Counter(seed)
    return NoiseRandomSource { count in counter.next(count) }
}

/// The shared state of `counterRandom`.
final class Counter: Sendable {
    private let state: Mutex<UInt8>
    init(_ seed: UInt8) { state = Mutex(seed) }
    func next(_ count: Int) -> [UInt8] {
        state.withLock { value in
            (0..<count).map { _ in
                value &+= 1
                return value &* 37 &+ 11
            }
        }
    }
}

/// A fixed key pair of 32 equal bytes.
func fixedKey(_ byte: UInt8) -> NoiseKeyPair {
    do {
        return try NoiseKeyPair(privateKey: Array(repeating: byte, count: 32))
    } catch {
        preconditionFailure("\(error)")
    }
}

/// The bytes of every `.send` event, in order.
func sent(_ events: [SecureLink.Event]) -> [[UInt8]] {
    events.compactMap { event in
        if case .send(let bytes) = event { return bytes }
        return nil
    }
}

/// Asserts that `body` throws a `SecureLinkError` of `kind`.
func XCTAssertLinkError<T>(
    _ kind: SecureLinkError.Kind, _ body: @autoclosure () throws -> T, _ message: String = "",
    file: StaticString = #filePath, line: UInt = #line
) {
    XCTAssertThrowsError(try body(), message, file: file, line: line) { error in
        XCTAssertEqual((error as? SecureLinkError)?.kind, kind, "\(error) \(message)", file: file, line: line)
    }
}

let slaveKey = fixedKey(0x11)
let masterKey = fixedKey(0x22)
let previousMasterKey = fixedKey(0x33)
let strangerKey = fixedKey(0x44)
let masterPayload = Array(#"{"master":"M","store":"S"}"#.utf8)
let slavePayload = Array(#"{"name":"till 1","terminal":"T"}"#.utf8)

/// A slave and master linked by IK, established, with `options` on both sides.
func establishedPair(options: SecureLinkOptions = .init()) throws -> (slave: SecureLink, master: SecureLink) {
    var (slave, first) = try SecureLink.knownInitiator(
        masterKey: masterKey.publicKey, localStatic: slaveKey, options: options)
    var master = SecureLink.knownResponder(keys: [masterKey], options: options)
    _ = try master.receive(sent(first)[0])
    let second = try master.accept(payload: masterPayload)
    _ = try slave.receive(sent(second)[0])
    return (slave, master)
}

/// Delivers every message of `messages` to `link`, collecting the events.
func deliver(_ messages: [[UInt8]], to link: inout SecureLink) throws -> [SecureLink.Event] {
    var events: [SecureLink.Event] = []
    for message in messages { events += try link.receive(message) }
    return events
}
