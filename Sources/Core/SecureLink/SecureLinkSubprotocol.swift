/// The WebSocket subprotocols of the secure link (Docs/SECURITY.md, "WebSocket subprotocols").
/// The slave offers exactly one; its ASCII bytes are also the Noise prologue.
public enum SecureLinkSubprotocol {
    /// Pairing with a pairing code: `Noise_XXpsk3_25519_ChaChaPoly_SHA256`.
    public static let pairing = "ordersync.pair.v1"
    /// Every later connection to a known master: `Noise_IK_25519_ChaChaPoly_SHA256`.
    public static let known = "ordersync.ik.v1"
}
