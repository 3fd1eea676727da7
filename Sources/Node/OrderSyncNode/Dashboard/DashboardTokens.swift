import CryptoPrimitives
import JSON
import NodePolicy

/// The dashboard's access tokens (`ordersync dashboard`): each has an id, a label and its
/// creation time; only the SHA-256 of the secret is kept, in the master's database (metadata
/// `dashboard.tokens`) and, sent with the store's settings, in every standby's copy
/// (`standby.settings`). The secret is shown once, when the token is made.
struct DashboardTokens: Equatable {
    struct Token: Equatable {
        var id: String
        var name: String
        var createdAtMillis: Int64
        /// Hex SHA-256 of the secret.
        var sha256: String
    }

    /// The metadata key the list is kept under.
    static let metadataKey = "dashboard.tokens"
    /// The key of the list among the store's settings a master sends its standbys
    /// (`members`, Docs/PROTOCOL.md 7): a promoted standby serves the dashboard to the same tokens.
    static let settingsKey = "dashboardTokens"
    /// Most tokens kept at once.
    static let maxTokens = 100

    private(set) var tokens: [Token] = []

    init(tokens: [Token] = []) {
        self.tokens = tokens
    }

    /// The list stored as `text` (nil: none yet).
    init(stored text: String?) throws(NodeJSONError) {
        guard let text else { return }
        tokens = try [Token](jsonBytes: Array(text.utf8))
    }

    /// The list as stored: an array of objects with `id`, `name`, `createdAtMillis` and
    /// `sha256`.
    var stored: String {
        tokens.jsonValue.serialized()
    }

    enum MakeFailure: Error, Equatable {
        case nameTaken
        case tooMany
    }

    /// A new token labelled `name` (default `dashboard-ID`) and its secret: 32 random bytes
    /// (256 bits) from the system's generator, as 64 hex digits.
    mutating func make(name: String?, nowMillis: Int64) -> Result<(token: Token, secret: String), MakeFailure> {
        guard tokens.count < Self.maxTokens else { return .failure(.tooMany) }
        var generator = SystemRandomNumberGenerator()
        var id = Self.hex((0..<4).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        while tokens.contains(where: { $0.id == id }) {
            id = Self.hex((0..<4).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        }
        let label = name ?? "dashboard-\(id)"
        guard !tokens.contains(where: { $0.name == label || $0.id == label }) else { return .failure(.nameTaken) }
        let secret = Self.hex((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        let token = Token(id: id, name: label, createdAtMillis: nowMillis, sha256: Self.digest(secret))
        tokens.append(token)
        return .success((token, secret))
    }

    /// Removes the token with this id or label; nil when there is none.
    mutating func revoke(_ idOrName: String) -> Token? {
        guard let index = tokens.firstIndex(where: { $0.id == idOrName }) ?? tokens.firstIndex(where: { $0.name == idOrName }) else {
            return nil
        }
        return tokens.remove(at: index)
    }

    /// The token whose secret is `secret`, compared in constant time over the digests.
    func token(matching secret: String) -> Token? {
        guard secret.utf8.count == 64 else { return nil }
        let digest = Array(Self.digest(secret).utf8)
        var found: Token?
        for t in tokens where constantTimeEqual(Array(t.sha256.utf8), digest) { found = t }
        return found
    }

    /// The token as the local API shows it (never the digest).
    static func object(_ t: Token) -> JSONObject {
        JSONObject([("id", .string(t.id)), ("name", .string(t.name)), ("createdAtMillis", .int(t.createdAtMillis))])
    }

    static func digest(_ secret: String) -> String { hex(Digest.sha256(Array(secret.utf8))) }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension DashboardTokens.Token: NodeJSONCodable {
    /// The token as stored (with the digest, never the secret).
    var jsonValue: JSONValue {
        nodeJSONObject(["id": id, "name": name, "createdAtMillis": createdAtMillis, "sha256": sha256])
    }

    /// A stored token.
    init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        self.init(
            id: try f.decode("id"), name: try f.decode("name"), createdAtMillis: try f.decode("createdAtMillis"),
            sha256: try f.decode("sha256"))
    }
}
