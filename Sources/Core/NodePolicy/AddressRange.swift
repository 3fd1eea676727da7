import Glibc

/// An IPv4 or IPv6 address range in CIDR notation (`192.168.1.0/24`, `fd00::/8`; a bare
/// address is a range of one), for `--storepos-allow`.
public struct AddressRange: Equatable, Sendable, CustomStringConvertible {
    /// The network address's bytes (4 or 16), with the bits past the prefix cleared.
    let network: [UInt8]
    /// The prefix length in bits.
    let prefixLength: Int

    /// Parses `ADDRESS[/PREFIX]`; nil when it is not an IPv4 or IPv6 range.
    public init?(parsing text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let bytes = Self.addressBytes(String(parts[0])) else { return nil }
        let bits = bytes.count * 8
        var length = bits
        if parts.count == 2 {
            guard let n = Int(parts[1]), (0...bits).contains(n), !parts[1].hasPrefix("+") else { return nil }
            length = n
        }
        prefixLength = length
        network = Self.masked(bytes, prefixLength: length)
    }

    /// Whether `host` (an IPv4 or IPv6 address, as in a peer address without its port) lies in
    /// the range. An IPv4-mapped IPv6 address (`::ffff:10.0.0.3`) counts as its IPv4 address.
    public func contains(host: String) -> Bool {
        guard var bytes = Self.addressBytes(host) else { return false }
        if network.count == 4, bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            bytes = Array(bytes[12...])
        }
        guard bytes.count == network.count else { return false }
        return Self.masked(bytes, prefixLength: prefixLength) == network
    }

    /// `ADDRESS/PREFIX`, the network address as inet_ntop(3) writes it.
    public var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = network.count == 4 ? AF_INET : AF_INET6
        _ = network.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &text, socklen_t(text.count)) }
        let address = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return "\(address)/\(prefixLength)"
    }

    /// The 4 or 16 bytes of an IPv4 or IPv6 address (inet_pton(3)); nil for anything else.
    static func addressBytes(_ text: String) -> [UInt8]? {
        var four = [UInt8](repeating: 0, count: 4)
        if inet_pton(AF_INET, text, &four) == 1 { return four }
        var sixteen = [UInt8](repeating: 0, count: 16)
        if inet_pton(AF_INET6, text, &sixteen) == 1 { return sixteen }
        return nil
    }

    private static func masked(_ bytes: [UInt8], prefixLength: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let kept = min(max(prefixLength - index * 8, 0), 8)
            return kept == 8 ? byte : byte & ~(0xFF >> UInt8(kept))
        }
    }
}
