import JSON

/// The two members by which a master waits for its standbys (Docs/PROTOCOL.md 7, "Standby
/// acknowledgements"): an ack's `held` and a broadcast's `ackNow`.
extension ClientMessage {
    /// The optional `held` sequence of an ack: absent, or an integer of 0 or more.
    static func heldSeq(_ o: JSONObject) -> Result<Int64?, WireError> {
        guard let v = o["held"] else { return .success(nil) }
        guard case .int(let n) = v, n >= 0 else {
            let got = v.typeName == "number" ? v.serialized() : v.typeName
            return .failure(WireError(.invalidMessage, "ack \"held\" must be an integer of 0 or more, got \(got)"))
        }
        return .success(n)
    }
}

/// A broadcast's `"ackNow":true`: the master waits for a standby to hold it (a write through
/// its own local API with `--sync-replicas`), so the slave acks at once after committing it
/// instead of within `SlaveNode`'s ack delay. The master appends the member last to the
/// journalled bytes, for OrderSync slaves only (a StorePOS app's messages keep their shape), and
/// a slave looks for it there: no second parse, and the journal keeps the bytes without it.
public enum AckNow {
    /// The bytes that end a marked broadcast: the member and the object's closing brace.
    static let suffix: [UInt8] = Array(#","ackNow":true}"#.utf8)

    /// `bytes` (a JSON object as the master serialises it) with `"ackNow":true` appended as
    /// its last member; unchanged when already marked or not an object.
    public static func marking(_ bytes: [UInt8]) -> [UInt8] {
        guard !isMarked(bytes), bytes.count > 2, bytes.first == UInt8(ascii: "{"), bytes.last == UInt8(ascii: "}") else {
            return bytes
        }
        return bytes.dropLast() + suffix
    }

    /// Whether a broadcast ends with `"ackNow":true` (as `marking` writes it).
    public static func isMarked(_ bytes: [UInt8]) -> Bool {
        bytes.count >= suffix.count && bytes.suffix(suffix.count).elementsEqual(suffix)
    }
}
