internal import CAvahi

/// Conversions between Swift values and Avahi's C strings, string lists and addresses.
enum AvahiText {
    /// Builds an `AvahiStringList` holding `entries` in order (caller frees it with
    /// `avahi_string_list_free`). `avahi_string_list_add_arbitrary` prepends, so the list is
    /// built from the last entry to the first.
    static func makeList(_ entries: [[UInt8]]) -> UnsafeMutablePointer<AvahiStringList>? {
        var list: UnsafeMutablePointer<AvahiStringList>?
        for entry in entries.reversed() {
            list = entry.withUnsafeBufferPointer { bytes in
                avahi_string_list_add_arbitrary(list, bytes.baseAddress, bytes.count)
            }
        }
        return list
    }

    /// Copies the byte strings of `list`, in list order.
    static func entries(of list: UnsafeMutablePointer<AvahiStringList>?) -> [[UInt8]] {
        var entries: [[UInt8]] = []
        var node = list
        while let current = node {
            let size = avahi_string_list_get_size(current)
            if let text = avahi_string_list_get_text(current) {
                entries.append(Array(UnsafeBufferPointer(start: text, count: size)))
            } else {
                entries.append([])
            }
            node = avahi_string_list_get_next(current)
        }
        return entries
    }

    /// The numeric form of `address` ("10.231.7.1", "fe80::1").
    static func numericAddress(_ address: UnsafePointer<AvahiAddress>) -> String {
        // AVAHI_ADDRESS_STR_MAX: "The maximum length of a string representation of an address".
        var buffer = [CChar](repeating: 0, count: 64)
        return buffer.withUnsafeMutableBufferPointer { out in
            guard let written = avahi_address_snprint(out.baseAddress, out.count, address) else {
                return ""
            }
            return String(cString: written)
        }
    }
}

/// Avahi's message for an `AVAHI_ERR_*` code.
func avahiErrorText(_ error: Int32) -> String {
    guard let text = avahi_strerror(error) else {
        return "avahi error \(error)"
    }
    return String(cString: text)
}
