/// Connections counted per IP address, so one host on the LAN cannot hold every connection
/// slot of the master: at most `maxHandshakesPerAddress` not authenticated yet (in the opening
/// handshake or the secure link's; each is dropped after the handshake timeout anyway) and
/// `maxConnectionsPerAddress` in all.
extension MasterNode {
    /// Why a new connection from `peerAddress` is refused, or nil when it may go on.
    func addressLimitReached(_ peerAddress: String) -> String? {
        let host = Self.host(of: peerAddress)
        var open = 0
        var handshaking = 0
        for session in sessions.values where session.phase != .ended && Self.host(of: session.address) == host {
            open += 1
            if session.isPreAuthentication { handshaking += 1 }
        }
        if handshaking >= configuration.maxHandshakesPerAddress {
            return "\(handshaking) connections from \(host) not authenticated yet (limit \(configuration.maxHandshakesPerAddress))"
        }
        if open >= configuration.maxConnectionsPerAddress {
            return "\(open) connections from \(host) open (limit \(configuration.maxConnectionsPerAddress))"
        }
        return nil
    }

    /// The host part of `ip:port` or `[ip]:port`.
    static func host(of address: String) -> String {
        if address.hasPrefix("["), let end = address.firstIndex(of: "]") {
            return String(address[address.index(after: address.startIndex)..<end])
        }
        guard let colon = address.lastIndex(of: ":"), address.firstIndex(of: ":") == colon else { return address }
        return String(address[..<colon])
    }
}
