/// ChaCha20-Poly1305 written from RFC 8439 in plain Swift, slow and independent of OpenSSL: the
/// reference `NoiseChaChaPoly` (OpenSSL's EVP) is checked against. Checked itself against the
/// RFC's own vectors (`ChaChaPolyReferenceTests`).
enum ChaChaPolyReference {
    /// RFC 8439 2.3: the 64-byte block of `key`, `counter` and the 12-byte `nonce`.
    static func block(key: [UInt8], counter: UInt32, nonce: [UInt8]) -> [UInt8] {
        precondition(key.count == 32 && nonce.count == 12, "a 256-bit key and a 96-bit nonce")
        var state: [UInt32] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574]
        state += (0..<8).map { word(key, 4 * $0) }
        state.append(counter)
        state += (0..<3).map { word(nonce, 4 * $0) }
        var working = state
        for _ in 0..<10 {
            quarterRound(&working, 0, 4, 8, 12)
            quarterRound(&working, 1, 5, 9, 13)
            quarterRound(&working, 2, 6, 10, 14)
            quarterRound(&working, 3, 7, 11, 15)
            quarterRound(&working, 0, 5, 10, 15)
            quarterRound(&working, 1, 6, 11, 12)
            quarterRound(&working, 2, 7, 8, 13)
            quarterRound(&working, 3, 4, 9, 14)
        }
        var out: [UInt8] = []
        for index in 0..<16 { out += littleEndian(UInt64(working[index] &+ state[index]), count: 4) }
        return out
    }

    /// RFC 8439 2.4: `text` XORed with the key stream from block `counter` on.
    static func chacha20(key: [UInt8], counter: UInt32, nonce: [UInt8], text: [UInt8]) -> [UInt8] {
        var out = text
        var offset = 0
        var blockCounter = counter
        while offset < text.count {
            let stream = block(key: key, counter: blockCounter, nonce: nonce)
            for index in offset..<min(offset + 64, text.count) { out[index] ^= stream[index - offset] }
            offset += 64
            blockCounter &+= 1
        }
        return out
    }

    /// RFC 8439 2.5: Poly1305 of `message` under the 32-byte one-time key (r, then s), in
    /// 26-bit limbs modulo 2^130 - 5.
    static func poly1305(message: [UInt8], key: [UInt8]) -> [UInt8] {
        precondition(key.count == 32, "a 32-byte one-time key")
        let mask: UInt64 = 0x3ff_ffff
        // r clamped ("r &= 0x0ffffffc0ffffffc0ffffffc0fffffff"), then cut into five limbs.
        var rBytes = Array(key[0..<16])
        for index in [3, 7, 11, 15] { rBytes[index] &= 0x0f }
        for index in [4, 8, 12] { rBytes[index] &= 0xfc }
        let r = limbs(rBytes + [0])
        let s5 = r.map { $0 * 5 }
        var h: [UInt64] = [0, 0, 0, 0, 0]
        var offset = 0
        while offset < message.count {
            // The block with a 0x01 byte after it (2^(8 * length) added), padded with zeros.
            let chunk = Array(message[offset..<min(offset + 16, message.count)])
            let padded = chunk + [1] + [UInt8](repeating: 0, count: 16 - chunk.count)
            let m = limbs(padded)
            for index in 0..<5 { h[index] += m[index] }
            var d = [UInt64](repeating: 0, count: 5)
            for i in 0..<5 {
                for j in 0..<5 { d[i] += h[j] * (j <= i ? r[i - j] : s5[i - j + 5]) }
            }
            var carry: UInt64 = 0
            for index in 0..<5 {
                d[index] += carry
                carry = d[index] >> 26
                h[index] = d[index] & mask
            }
            h[0] += carry * 5
            h[1] += h[0] >> 26
            h[0] &= mask
            offset += 16
        }
        // Fully carried, then reduced: h - p when h >= p = 2^130 - 5.
        var carry: UInt64 = 0
        for _ in 0..<2 {
            for index in 1..<5 {
                h[index] += h[index - 1] >> 26
                h[index - 1] &= mask
            }
            carry = h[4] >> 26
            h[4] &= mask
            h[0] += carry * 5
        }
        var g = h
        g[0] += 5
        for index in 1..<5 {
            g[index] += g[index - 1] >> 26
            g[index - 1] &= mask
        }
        if g[4] >= 1 << 26 {
            g[4] -= 1 << 26
            h = g
        }
        // (h + s) mod 2^128, little-endian.
        let low = h[0] | h[1] << 26 | h[2] << 52
        let high = h[2] >> 12 | h[3] << 14 | h[4] << 40
        let sLow = UInt64(word(key, 16)) | UInt64(word(key, 20)) << 32
        let sHigh = UInt64(word(key, 24)) | UInt64(word(key, 28)) << 32
        let (sumLow, overflow) = low.addingReportingOverflow(sLow)
        let sumHigh = high &+ sHigh &+ (overflow ? 1 : 0)
        return littleEndian(sumLow, count: 8) + littleEndian(sumHigh, count: 8)
    }

    /// RFC 8439 2.8: ciphertext followed by the 16-byte tag.
    static func seal(key: [UInt8], nonce: [UInt8], ad: [UInt8], plaintext: [UInt8]) -> [UInt8] {
        let ciphertext = chacha20(key: key, counter: 1, nonce: nonce, text: plaintext)
        return ciphertext + tag(key: key, nonce: nonce, ad: ad, ciphertext: ciphertext)
    }

    /// The plaintext of `sealed`, or nil when its tag is not the one computed.
    static func open(key: [UInt8], nonce: [UInt8], ad: [UInt8], sealed: [UInt8]) -> [UInt8]? {
        guard sealed.count >= 16 else { return nil }
        let ciphertext = Array(sealed[..<(sealed.count - 16)])
        guard tag(key: key, nonce: nonce, ad: ad, ciphertext: ciphertext) == Array(sealed[(sealed.count - 16)...]) else {
            return nil
        }
        return chacha20(key: key, counter: 1, nonce: nonce, text: ciphertext)
    }

    /// RFC 8439 2.8: Poly1305 under the first 32 bytes of block 0, over
    /// ad | pad16 | ciphertext | pad16 | le64(ad length) | le64(ciphertext length).
    private static func tag(key: [UInt8], nonce: [UInt8], ad: [UInt8], ciphertext: [UInt8]) -> [UInt8] {
        let oneTimeKey = Array(block(key: key, counter: 0, nonce: nonce)[0..<32])
        func pad16(_ bytes: [UInt8]) -> [UInt8] { [UInt8](repeating: 0, count: (16 - bytes.count % 16) % 16) }
        let macData =
            ad + pad16(ad) + ciphertext + pad16(ciphertext) + littleEndian(UInt64(ad.count), count: 8)
            + littleEndian(UInt64(ciphertext.count), count: 8)
        return poly1305(message: macData, key: oneTimeKey)
    }

    private static func quarterRound(_ x: inout [UInt32], _ a: Int, _ b: Int, _ c: Int, _ d: Int) {
        x[a] &+= x[b]
        x[d] ^= x[a]
        x[d] = x[d] << 16 | x[d] >> 16
        x[c] &+= x[d]
        x[b] ^= x[c]
        x[b] = x[b] << 12 | x[b] >> 20
        x[a] &+= x[b]
        x[d] ^= x[a]
        x[d] = x[d] << 8 | x[d] >> 24
        x[c] &+= x[d]
        x[b] ^= x[c]
        x[b] = x[b] << 7 | x[b] >> 25
    }

    /// The little-endian 32-bit word at `offset`.
    private static func word(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 | UInt32(bytes[offset + $1]) << (8 * UInt32($1)) }
    }

    /// 17 little-endian bytes (at most 131 bits) as five 26-bit limbs.
    private static func limbs(_ bytes: [UInt8]) -> [UInt64] {
        precondition(bytes.count == 17, "16 bytes and the one above")
        var low: UInt64 = 0
        var high: UInt64 = 0
        for index in 0..<8 { low |= UInt64(bytes[index]) << (8 * UInt64(index)) }
        for index in 8..<16 { high |= UInt64(bytes[index]) << (8 * UInt64(index - 8)) }
        let top = UInt64(bytes[16])
        let mask: UInt64 = 0x3ff_ffff
        return [
            low & mask, (low >> 26) & mask, (low >> 52 | high << 12) & mask, (high >> 14) & mask,
            (high >> 40 | top << 24) & mask,
        ]
    }

    private static func littleEndian(_ value: UInt64, count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }
}
