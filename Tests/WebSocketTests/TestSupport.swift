import XCTest

@testable import WebSocket

/// A deterministic generator so randomized tests reproduce from their seed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The ways a byte stream is fed to a parser: frame by frame as given, all in one buffer, one
/// byte at a time, and in seeded random chunks.
func chunkings(of pieces: [[UInt8]], seed: UInt64 = 1) -> [(name: String, chunks: [[UInt8]])] {
    let all = pieces.flatMap { $0 }
    var generator = SplitMix64(seed: seed)
    var random: [[UInt8]] = []
    var index = 0
    while index < all.count {
        let size = Int.random(in: 1...17, using: &generator)
        random.append(Array(all[index..<min(all.count, index + size)]))
        index += size
    }
    return [
        ("whole frames", pieces),
        ("one buffer", [all]),
        ("one byte at a time", all.map { [$0] }),
        ("random chunks", random),
    ]
}

/// Feeds `chunks` to a fresh parser and collects every frame, or the first error.
func parseFrames(
    _ chunks: [[UInt8]], role: WebSocketRole,
    configuration: WebSocketConfiguration = WebSocketConfiguration()
) -> (frames: [Frame], error: WebSocketError?) {
    var parser = FrameParser(role: role, configuration: configuration)
    var frames: [Frame] = []
    for chunk in chunks {
        parser.append(chunk)
        do {
            while let frame = try parser.next() {
                frames.append(frame)
            }
        } catch let error as WebSocketError {
            return (frames, error)
        } catch {
            XCTFail("unexpected error type \(error)")
        }
    }
    return (frames, nil)
}

/// Feeds `chunks` to `connection` and concatenates the events.
func feed(_ connection: inout WebSocketConnection, _ chunks: [[UInt8]]) -> [WebSocketEvent] {
    chunks.flatMap { connection.receive($0) }
}

/// A frame as a client sends it (masked with a fixed key).
func clientFrame(_ opcode: Opcode, _ payload: [UInt8], fin: Bool = true) -> [UInt8] {
    FrameEncoder.encode(
        Frame(fin: fin, opcode: opcode, payload: payload),
        maskingKey: MaskingKey(0x37, 0xFA, 0x21, 0x3D))
}

/// A frame as a server sends it (unmasked).
func serverFrame(_ opcode: Opcode, _ payload: [UInt8], fin: Bool = true) -> [UInt8] {
    FrameEncoder.encode(Frame(fin: fin, opcode: opcode, payload: payload), maskingKey: nil)
}

/// The payload of a Close frame with `code` and `reason`.
func closePayload(_ code: UInt16, _ reason: String = "") -> [UInt8] {
    [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason.utf8)
}

/// The unmasked wire bytes of a server Close frame with `code`, for comparing with `.send`.
func serverClose(_ code: UInt16, _ reason: String = "") -> [UInt8] {
    serverFrame(.close, closePayload(code, reason))
}

/// The close code of the Close frame in `bytes`, parsed as the peer of `sender` would.
func closeCode(in bytes: [UInt8], sentBy sender: WebSocketRole) -> UInt16? {
    let result = parseFrames([bytes], role: sender == .server ? .client : .server)
    guard let frame = result.frames.first, frame.opcode == .close, frame.payload.count >= 2 else {
        return nil
    }
    return UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1])
}

extension WebSocketEvent {
    /// The error of a `.failed` event.
    var failure: WebSocketError? {
        if case .failed(let error) = self { return error }
        return nil
    }

    /// The bytes of a `.send` event.
    var sentBytes: [UInt8]? {
        if case .send(let bytes) = self { return bytes }
        return nil
    }
}
