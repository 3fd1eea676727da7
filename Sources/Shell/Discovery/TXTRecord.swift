/// Encoding and decoding of DNS-SD TXT record entries (RFC 6763 section 6), independent of
/// Avahi: the Avahi wrapper only moves the byte strings in and out of `AvahiStringList`.
enum TXTRecord {
    /// RFC 6763 6.1: "each constituent string of a DNS TXT record is limited to 255 bytes".
    static let maximumEntryLength = 255

    /// RFC 6763 6.2: "The total size of a typical DNS-SD TXT record is intended to be small --
    /// 200 bytes or less. ... Using TXT records larger than 1300 bytes is NOT RECOMMENDED".
    static let maximumTotalLength = 1300

    /// Turns key/value pairs into `key=value` byte strings, in order. Throws
    /// `DiscoveryError(.invalidAnnouncement)` for a key or entry the RFC forbids.
    static func encode(_ pairs: [(String, String)]) throws -> [[UInt8]] {
        var seen = Set<String>()
        var total = 0
        var entries: [[UInt8]] = []
        for (key, value) in pairs {
            // RFC 6763 6.4: "The key MUST be at least one character. ... The characters of a
            // key MUST be printable US-ASCII values (0x20-0x7E) [RFC20], excluding '=' (0x3D)."
            guard !key.isEmpty else {
                throw invalid("a TXT key is empty", context: "txt")
            }
            guard key.utf8.allSatisfy({ (0x20...0x7E).contains($0) && $0 != UInt8(ascii: "=") }) else {
                throw invalid("TXT key \"\(key)\" must be printable US-ASCII without '='", context: "txt")
            }
            // RFC 6763 6.4: "A given key SHOULD NOT appear more than once in a TXT record."
            guard seen.insert(key.lowercased()).inserted else {
                throw invalid("TXT key \"\(key)\" appears more than once", context: "txt")
            }
            // Values travel through C strings.
            guard !value.utf8.contains(0) else {
                throw invalid("the value of TXT key \"\(key)\" contains a NUL byte", context: "txt")
            }
            let entry = Array(key.utf8) + [UInt8(ascii: "=")] + Array(value.utf8)
            guard entry.count <= maximumEntryLength else {
                throw invalid(
                    "TXT entry \"\(key)=...\" is \(entry.count) bytes; at most 255 are allowed",
                    context: "txt")
            }
            total += entry.count + 1
            entries.append(entry)
        }
        guard total <= maximumTotalLength else {
            throw invalid("the TXT record is \(total) bytes; keep it under 1300", context: "txt")
        }
        return entries
    }

    /// Turns received TXT byte strings into a dictionary.
    ///
    /// RFC 6763 6.4: "If there is no '=' in a DNS-SD TXT record string, then it is a boolean
    /// attribute, simply identified as being present, with no value." (mapped to "").
    /// "If a client receives a TXT record containing the same key more than once, then the
    /// client MUST silently ignore all but the first occurrence of that attribute."
    /// "Strings beginning with an '=' character (i.e., the key is missing) MUST be silently
    /// ignored." Values that are not UTF-8 are decoded with replacement characters.
    static func decode(_ entries: [[UInt8]]) -> [String: String] {
        var result: [String: String] = [:]
        var seen = Set<String>()
        for entry in entries where !entry.isEmpty {
            let separator = entry.firstIndex(of: UInt8(ascii: "=")) ?? entry.endIndex
            if separator == entry.startIndex {
                continue
            }
            let key = String(decoding: entry[..<separator], as: UTF8.self)
            guard seen.insert(key.lowercased()).inserted else {
                continue
            }
            let value = separator == entry.endIndex ? [] : entry[(separator + 1)...]
            result[key] = String(decoding: value, as: UTF8.self)
        }
        return result
    }
}
