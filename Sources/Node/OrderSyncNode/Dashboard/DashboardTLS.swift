import Foundation
import Glibc
import TLS

/// `--http-tls`: whether the dashboard is served over TLS.
public enum DashboardTLSMode: String, CaseIterable, Sendable {
    /// TLS when the dashboard listens beyond loopback (a wildcard or a LAN address); plain HTTP
    /// on loopback, where nothing crosses the network.
    case auto
    /// Always TLS, loopback included.
    case on
    /// Never TLS: the token, the session cookie and the orders cross the network in clear.
    case off

    /// Whether a dashboard listening on `address` is served over TLS.
    public func usesTLS(listeningOn address: MetricsAddress) -> Bool {
        switch self {
        case .on: return true
        case .off: return false
        case .auto: return !Self.isLoopback(address.host)
        }
    }

    /// `127.0.0.0/8`, `::1` and `localhost`.
    public static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.split(separator: ".").first == "127"
    }
}

/// The dashboard's certificate, kept in the data directory: read when there, else made
/// self-signed (EC P-256, ten years) for the host's names and the listen address, and stored
/// (the key with mode 0600, both written whole before they are moved into place).
enum DashboardCertificate {
    /// The certificate at `certificatePath` with its key at `keyPath`, made there first when
    /// neither exists; a damaged or mismatched pair is an error naming the files (delete both
    /// to make new ones: browsers then show a new fingerprint).
    static func loadOrCreate(certificatePath: String, keyPath: String, listen: MetricsAddress) throws -> (TLSCertificate, made: Bool) {
        let manager = FileManager.default
        let haveCertificate = manager.fileExists(atPath: certificatePath)
        let haveKey = manager.fileExists(atPath: keyPath)
        if haveCertificate || haveKey {
            guard haveCertificate && haveKey else {
                throw NodeStartupError(
                    "\(haveCertificate ? keyPath : certificatePath) is missing (the dashboard's TLS certificate and key go together);"
                        + " delete \(haveCertificate ? certificatePath : keyPath) too to make a new pair", failure: .damagedFile)
            }
            do {
                let certificate = try TLSCertificate(
                    certificatePEM: Array(try Data(contentsOf: URL(fileURLWithPath: certificatePath))),
                    privateKeyPEM: Array(try Data(contentsOf: URL(fileURLWithPath: keyPath))))
                return (certificate, false)
            } catch {
                throw NodeStartupError(
                    "the dashboard's TLS certificate \(certificatePath) or key \(keyPath) is damaged (\(error));"
                        + " delete both to make a new pair", failure: .damagedFile, fix: "delete both files to make a new pair")
            }
        }
        let host = DataDirectory.hostName()
        var dnsNames = [host, "localhost"]
        if !host.hasSuffix(".local") { dnsNames.insert(host + ".local", at: 1) }
        var addresses = ["127.0.0.1", "::1"]
        if listen.host != "0.0.0.0" && listen.host != "::" && !addresses.contains(listen.host) && Self.isAddress(listen.host) {
            addresses.insert(listen.host, at: 0)
        }
        let certificate: TLSCertificate
        do {
            certificate = try TLSCertificate.selfSigned(commonName: host, dnsNames: dnsNames, ipAddresses: addresses)
        } catch {
            throw NodeStartupError("cannot make the dashboard's TLS certificate: \(error)")
        }
        // The key first: a certificate without its key is never left behind alone.
        try PrivateFile.write(certificate.privateKeyPEM, to: keyPath, what: "the dashboard's TLS key")
        try PrivateFile.write(certificate.certificatePEM, to: certificatePath, what: "the dashboard's TLS certificate")
        return (certificate, true)
    }

    /// Whether `host` is a numeric IPv4 or IPv6 address.
    private static func isAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}
