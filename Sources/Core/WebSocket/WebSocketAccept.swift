internal import CryptoPrimitives

/// The `Sec-WebSocket-Accept` computation of the opening handshake.
public enum WebSocketAccept {
    /// The GUID every RFC 6455 endpoint appends to the key.
    public static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// The accept value for a client's `Sec-WebSocket-Key`.
    ///
    /// RFC 6455 1.3: "the server has to take the value (as present in the header field, e.g., the
    /// base64-encoded [RFC4648] version minus any leading and trailing whitespace) and
    /// concatenate this with the Globally Unique Identifier (GUID, [RFC4122])
    /// "258EAFA5-E914-47DA-95CA-C5AB0DC85B11" [...]. A SHA-1 hash (160 bits) [FIPS.180-3],
    /// base64-encoded (see Section 4 of [RFC4648]), of this concatenation is then returned in
    /// the server's handshake."
    public static func value(forKey key: String) -> String {
        Base64.encode(Digest.sha1(Array((key + guid).utf8)))
    }
}
