/// What one end of a secure link tells the other it can read, in a control message of the link
/// layer (Docs/SECURITY.md, "Transport messages"). A peer that never says so is sent nothing it
/// might not read: an older slave gets every sync message in transport messages of its own.
public enum SecureLinkFeatures {
    /// A slave's `features` control message, sent once its link is secured: it reads transport
    /// messages that carry several sync messages (header bit `0x08`, `SecureLink.sealBatch`).
    public static let readsBatches: [UInt8] = Array(#"{"type":"features","batches":true}"#.utf8)
}
