/// A frame opcode (RFC 6455 5.2). The reserved values 3-7 and 11-15 have no case: a frame
/// carrying one fails the connection.
public enum Opcode: UInt8, Sendable, Equatable {
    /// "%x0 denotes a continuation frame"
    case continuation = 0x0
    /// "%x1 denotes a text frame"
    case text = 0x1
    /// "%x2 denotes a binary frame"
    case binary = 0x2
    /// "%x8 denotes a connection close"
    case close = 0x8
    /// "%x9 denotes a ping"
    case ping = 0x9
    /// "%xA denotes a pong"
    case pong = 0xA

    /// RFC 6455 5.5: "Control frames are identified by opcodes where the most significant bit of
    /// the opcode is 1."
    public var isControl: Bool {
        rawValue & 0x8 != 0
    }
}

/// One WebSocket frame with its payload unmasked.
public struct Frame: Equatable, Sendable {
    /// "Indicates that this is the final fragment in a message."
    public var fin: Bool
    /// Reserved bit 1; set only by a negotiated extension (never, here).
    public var rsv1: Bool
    /// Reserved bit 2; set only by a negotiated extension (never, here).
    public var rsv2: Bool
    /// Reserved bit 3; set only by a negotiated extension (never, here).
    public var rsv3: Bool
    /// What the payload is.
    public var opcode: Opcode
    /// The application data, unmasked.
    public var payload: [UInt8]

    /// Creates a frame; reserved bits default to clear and FIN to set.
    public init(
        fin: Bool = true, rsv1: Bool = false, rsv2: Bool = false, rsv3: Bool = false,
        opcode: Opcode, payload: [UInt8] = []
    ) {
        self.fin = fin
        self.rsv1 = rsv1
        self.rsv2 = rsv2
        self.rsv3 = rsv3
        self.opcode = opcode
        self.payload = payload
    }
}

/// The header of a frame whose payload is still arriving, as exposed by `FrameParser`.
public struct FrameHeader: Equatable, Sendable {
    /// FIN bit.
    public var fin: Bool
    /// The opcode.
    public var opcode: Opcode
    /// The declared payload length, already checked against the limits.
    public var payloadLength: Int
    /// The masking key, if the frame is masked.
    public var maskingKey: MaskingKey?
}

/// The four-byte key XORed over a masked frame's payload (RFC 6455 5.3).
public struct MaskingKey: Equatable, Hashable, Sendable {
    /// The key bytes in wire order.
    public var bytes: (UInt8, UInt8, UInt8, UInt8)

    /// Creates a key from its bytes in wire order.
    public init(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8) {
        bytes = (b0, b1, b2, b3)
    }

    /// Creates a key from a 32-bit value, most significant byte first on the wire.
    public init(_ value: UInt32) {
        self.init(
            UInt8(truncatingIfNeeded: value >> 24), UInt8(truncatingIfNeeded: value >> 16),
            UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value))
    }

    /// Compares the key bytes.
    public static func == (lhs: MaskingKey, rhs: MaskingKey) -> Bool {
        lhs.bytes == rhs.bytes
    }

    /// Hashes the key bytes.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(bytes.0)
        hasher.combine(bytes.1)
        hasher.combine(bytes.2)
        hasher.combine(bytes.3)
    }

    /// XORs the key over `buffer` in place, `offset` being the position of `buffer[0]` within
    /// the frame payload.
    ///
    /// RFC 6455 5.3: "Octet i of the transformed data ("transformed-octet-i") is the XOR of
    /// octet i of the original data ("original-octet-i") with octet at index i modulo 4 of the
    /// masking key ("masking-key-octet-j")". Masking and unmasking are the same operation.
    public func apply(to buffer: UnsafeMutableRawBufferPointer, payloadOffset offset: Int) {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
        let count = buffer.count
        var key = bytes
        withUnsafeBytes(of: &key) { keyBytes in
            var phase = offset & 3
            var index = 0
            // A 64-bit pattern of the key rotated to the current phase, for 8 bytes at a time.
            var pattern: UInt64 = 0
            withUnsafeMutableBytes(of: &pattern) { patternBytes in
                for position in 0..<8 {
                    patternBytes[position] = keyBytes[(phase + position) & 3]
                }
            }
            while index + 8 <= count {
                let word = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                base.storeBytes(of: word ^ pattern, toByteOffset: index, as: UInt64.self)
                index += 8
            }
            // 8 is a multiple of 4, so the phase is unchanged after the word loop.
            while index < count {
                let byte = base.load(fromByteOffset: index, as: UInt8.self)
                base.storeBytes(of: byte ^ keyBytes[phase], toByteOffset: index, as: UInt8.self)
                phase = (phase + 1) & 3
                index += 1
            }
        }
    }
}
