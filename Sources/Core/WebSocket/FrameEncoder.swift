/// Serializes frames (RFC 6455 5.2), masking the payload when a key is given.
public enum FrameEncoder {
    /// The wire bytes of `frame`, masked with `maskingKey` when it is not `nil`.
    ///
    /// A client passes a fresh key for every frame (5.3: "The masking key is a 32-bit value
    /// chosen at random by the client"); a server passes `nil`.
    public static func encode(_ frame: Frame, maskingKey: MaskingKey?) -> [UInt8] {
        var output: [UInt8] = []
        frame.payload.withUnsafeBytes { payload in
            append(
                fin: frame.fin,
                reservedBits: (frame.rsv1 ? 0x40 : 0) | (frame.rsv2 ? 0x20 : 0) | (frame.rsv3 ? 0x10 : 0),
                opcode: frame.opcode, payload: payload, maskingKey: maskingKey, to: &output)
        }
        return output
    }

    /// The size of a frame header for `payloadLength` bytes, masked or not.
    public static func headerSize(payloadLength: Int, masked: Bool) -> Int {
        let lengthBytes = payloadLength < 126 ? 0 : (payloadLength <= 0xFFFF ? 2 : 8)
        return 2 + lengthBytes + (masked ? 4 : 0)
    }

    /// Appends one frame to `output` without an intermediate payload copy.
    ///
    /// - Parameter reservedBits: the RSV bits already in place (`0x40`, `0x20`, `0x10`); zero
    ///   unless testing how a peer handles them.
    public static func append(
        fin: Bool = true, reservedBits: UInt8 = 0, opcode: Opcode, payload: UnsafeRawBufferPointer,
        maskingKey: MaskingKey?, to output: inout [UInt8]
    ) {
        let length = payload.count
        output.reserveCapacity(output.count + headerSize(payloadLength: length, masked: maskingKey != nil) + length)
        appendHeader(
            fin: fin, reservedBits: reservedBits, opcode: opcode, payloadLength: length, masked: maskingKey != nil,
            to: &output)
        guard let key = maskingKey else {
            output.append(contentsOf: payload)
            return
        }
        output.append(key.bytes.0)
        output.append(key.bytes.1)
        output.append(key.bytes.2)
        output.append(key.bytes.3)
        let start = output.count
        output.append(contentsOf: payload)
        output.withUnsafeMutableBytes { all in
            key.apply(to: UnsafeMutableRawBufferPointer(rebasing: all[start...]), payloadOffset: 0)
        }
    }

    /// Appends the header of one frame of `payloadLength` bytes, up to the masking key (which a
    /// masked frame's caller appends): for a payload written in place after it, as a server's
    /// sealed message is (`WebSocketChannel.appendServerBinaryHeader`).
    public static func appendHeader(
        fin: Bool = true, reservedBits: UInt8 = 0, opcode: Opcode, payloadLength length: Int, masked: Bool = false,
        to output: inout [UInt8]
    ) {
        precondition(reservedBits & ~0x70 == 0, "reserved bits are 0x70 at most")
        output.append((fin ? 0x80 : 0) | reservedBits | opcode.rawValue)
        let maskBit: UInt8 = masked ? 0x80 : 0
        // 5.2: "Payload length: 7 bits, 7+16 bits, or 7+64 bits [...] the minimal number of
        // bytes MUST be used to encode the length".
        if length < 126 {
            output.append(maskBit | UInt8(length))
        } else if length <= 0xFFFF {
            output.append(maskBit | 126)
            output.append(UInt8(truncatingIfNeeded: length >> 8))
            output.append(UInt8(truncatingIfNeeded: length))
        } else {
            output.append(maskBit | 127)
            let value = UInt64(length)
            for shift in stride(from: 56, through: 0, by: -8) {
                output.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
            }
        }
    }
}
