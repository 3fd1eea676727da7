/// A terminal the master paired with (Docs/SECURITY.md, "Pairing"): its static public key, the
/// node id derived from it and the name it is shown under.
public struct PairedTerminal: Equatable, Sendable {
    /// The node id of `publicKey` (`ABCD-EFGH-...`).
    public var nodeId: String
    /// The terminal's 32-byte static X25519 public key.
    public var publicKey: [UInt8]
    /// The name it is shown and logged under; unique among the terminals not revoked.
    public var name: String
    /// When it paired, wall-clock milliseconds since 1970.
    public var pairedAtMillis: Int64
    /// When it was revoked, or nil while it may connect.
    public var revokedAtMillis: Int64?

    /// A paired terminal from its fields.
    public init(nodeId: String, publicKey: [UInt8], name: String, pairedAtMillis: Int64, revokedAtMillis: Int64? = nil) {
        self.nodeId = nodeId
        self.publicKey = publicKey
        self.name = name
        self.pairedAtMillis = pairedAtMillis
        self.revokedAtMillis = revokedAtMillis
    }

    /// True while the terminal may connect.
    public var isActive: Bool { revokedAtMillis == nil }
}

/// Which paired terminal an operator's `ID|NAME` names.
public enum PairedTerminalMatch: Equatable, Sendable {
    /// Exactly this one.
    case found(PairedTerminal)
    /// None: no node id and no terminal's name is that.
    case notFound
    /// Several terminals are called that (their node ids tell them apart).
    case ambiguous([PairedTerminal])
}

/// The master's paired terminals: only these may connect (`ordersync.ik.v1`).
extension OrderDatabase {
    /// Records a paired terminal with its member number (`TermBallot`: the next one, or the one
    /// it had). Pairing again with a key paired before (revoked or not) makes it active again
    /// under the new name and its number. Throws when no number is left.
    public func addPairedTerminal(_ t: PairedTerminal) throws {
        try requireWritable()
        _ = try transaction {
            try connection.execute(
                """
                INSERT INTO paired_terminals (node_id, public_key, name, paired_ms, revoked_ms, number) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (node_id) DO UPDATE SET name = excluded.name, paired_ms = excluded.paired_ms,
                    revoked_ms = excluded.revoked_ms, number = excluded.number
                """,
                [
                    .text(t.nodeId), .text(Self.hex(t.publicKey)), .text(t.name), .integer(t.pairedAtMillis),
                    .integer(t.revokedAtMillis), .integer(try pairingNumber(nodeId: t.nodeId)),
                ])
        }
    }

    /// Every paired terminal (the revoked ones too when `includingRevoked`), by name.
    public func pairedTerminals(includingRevoked: Bool = false) throws -> [PairedTerminal] {
        let filter = includingRevoked ? "" : "WHERE revoked_ms IS NULL "
        return try connection.withStatement(
            "SELECT node_id, public_key, name, paired_ms, revoked_ms FROM paired_terminals \(filter)ORDER BY name, node_id"
        ) { s in
            var out: [PairedTerminal] = []
            while try s.step() { out.append(Self.pairedTerminal(s)) }
            return out
        }
    }

    /// The terminal paired with this static public key (revoked or not), if any.
    public func pairedTerminal(publicKey: [UInt8]) throws -> PairedTerminal? {
        try connection.withStatement(
            "SELECT node_id, public_key, name, paired_ms, revoked_ms FROM paired_terminals WHERE public_key = ?",
            [.text(Self.hex(publicKey))]
        ) { s in try s.step() ? Self.pairedTerminal(s) : nil }
    }

    /// The terminal an operator names: by node id (any case, revoked or not), else by name among
    /// the terminals not revoked.
    public func findPairedTerminal(_ idOrName: String) throws -> PairedTerminalMatch {
        let all = try pairedTerminals(includingRevoked: true)
        if let byId = all.first(where: { $0.nodeId.uppercased() == idOrName.uppercased() }) {
            return .found(byId)
        }
        let named = all.filter { $0.isActive && $0.name == idOrName }
        switch named.count {
        case 0: return .notFound
        case 1: return .found(named[0])
        default: return .ambiguous(named)
        }
    }

    /// Revokes the terminal an operator names (see `findPairedTerminal`): its key is refused
    /// from now on and the master forgets how far it got (its `terminals` row), in one
    /// transaction. A terminal revoked before keeps its first revocation time.
    public func revokePairedTerminal(_ idOrName: String, atMillis now: Int64) throws -> PairedTerminalMatch {
        try requireWritable()
        return try transaction {
            let match = try findPairedTerminal(idOrName)
            guard case .found(var t) = match else { return match }
            if t.revokedAtMillis == nil {
                t.revokedAtMillis = now
                try connection.execute(
                    "UPDATE paired_terminals SET revoked_ms = ? WHERE node_id = ?", [.integer(now), .text(t.nodeId)])
            }
            try connection.execute("DELETE FROM terminals WHERE terminal_id = ?", [.text(t.nodeId)])
            return .found(t)
        }
    }

    /// `name` if no active terminal (other than `nodeId`, pairing again) has it, else
    /// `name (2)`, `name (3)`, ...
    public func unusedTerminalName(_ name: String, except nodeId: String? = nil) throws -> String {
        let taken = Set(try pairedTerminals().filter { $0.nodeId != nodeId }.map(\.name))
        guard taken.contains(name) else { return name }
        var n = 2
        while taken.contains("\(name) (\(n))") { n += 1 }
        return "\(name) (\(n))"
    }

    private static func pairedTerminal(_ s: SQLiteStatement) -> PairedTerminal {
        PairedTerminal(
            nodeId: s.text(0), publicKey: bytes(hex: s.text(1)), name: s.text(2), pairedAtMillis: s.int64(3),
            revokedAtMillis: s.optionalInt64(4))
    }

    /// Lowercase hex, as the key is stored.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        var out = ""
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return out
    }

    /// The bytes of lowercase hex written by `hex`.
    static func bytes(hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        func value(_ c: UInt8) -> UInt8 { c >= 97 ? c - 87 : c - 48 }
        var i = 0
        while i + 1 < digits.count {
            out.append(value(digits[i]) << 4 | value(digits[i + 1]))
            i += 2
        }
        return out
    }
}
