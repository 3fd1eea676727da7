import JSON

/// A member of a store: the master or a paired terminal, by node id and static public key
/// (`Docs/PROTOCOL.md` 7.3).
public struct StoreMember: Equatable, Sendable {
    /// Node id (`ABCD-EFGH-...`).
    public var id: String
    /// Static X25519 public key, 64 lower-case hex digits.
    public var key: String
    /// The name it is shown under.
    public var name: String
    /// Its member number (`TermBallot`): the terms it may bid. Nil from a master of an earlier
    /// version, or for a terminal paired before numbers and not numbered yet.
    public var number: Int64?

    /// A member from its fields.
    public init(id: String, key: String, name: String, number: Int64? = nil) {
        self.id = id
        self.key = key
        self.name = name
        self.number = number
    }

    /// `{"id":..,"key":..,"name":..,"number":n}` (`number` only when known).
    public var json: JSONObject {
        var o = JSONObject([("id", .string(id)), ("key", .string(key)), ("name", .string(name))])
        if let number { o["number"] = .int(number) }
        return o
    }

    /// The member in `o`, or nil when a member is missing (a `number` outside
    /// `TermBallot.numbers` counts as none).
    public init?(json o: JSONObject) {
        guard let id = o["id"]?.stringValue, let key = o["key"]?.stringValue, let name = o["name"]?.stringValue else { return nil }
        self.init(id: id, key: key, name: name, number: o["number"]?.intValue.flatMap { TermBallot.numbers.contains($0) ? $0 : nil })
    }
}

/// A paired terminal as the master lists it to its standbys.
public struct MemberTerminal: Equatable, Sendable {
    public var member: StoreMember
    /// When it paired, milliseconds since 1970.
    public var pairedMillis: Int64
    /// When it was revoked, or nil.
    public var revokedMillis: Int64?
    /// Whether it votes in a promotion.
    public var voter: Bool

    /// A paired terminal from its fields.
    public init(member: StoreMember, pairedMillis: Int64, revokedMillis: Int64? = nil, voter: Bool = true) {
        self.member = member
        self.pairedMillis = pairedMillis
        self.revokedMillis = revokedMillis
        self.voter = voter
    }
}

/// The store's members and settings, as the master sends them to each standby
/// (`{"type":"members",...}`) and a standby keeps them.
public struct StoreMembers: Equatable, Sendable {
    /// The master's term when it sent them.
    public var term: Int64
    public var master: StoreMember
    public var terminals: [MemberTerminal]
    /// The store's settings a promoted node must keep (StorePOS mode and ranges), as given by
    /// the master's node; carried and stored as they are.
    public var settings: JSONObject

    /// Members from their fields.
    public init(term: Int64, master: StoreMember, terminals: [MemberTerminal], settings: JSONObject = JSONObject()) {
        self.term = term
        self.master = master
        self.terminals = terminals
        self.settings = settings
    }

    /// The `members` message.
    public func encodedBytes() -> [UInt8] {
        let list: [JSONValue] = terminals.map { t in
            var o = t.member.json
            o["pairedMs"] = .int(t.pairedMillis)
            o["revokedMs"] = t.revokedMillis.map { .int($0) } ?? .null
            o["voter"] = .bool(t.voter)
            return .object(o)
        }
        return JSONValue.object(
            JSONObject([
                ("type", .string("members")), ("term", .int(term)), ("master", .object(master.json)), ("terminals", .array(list)),
                ("settings", .object(settings)),
            ])
        ).serializedBytes()
    }
}

/// The messages a master sends only to its standbys (`Docs/PROTOCOL.md` 7), parsed before the
/// usual ones; a peer that does not know them ignores them.
public enum StandbyMessage: Equatable, Sendable {
    /// The store's members and settings.
    case members(StoreMembers)
    /// Another terminal's operation got these refusals.
    case refused(opId: String, origin: String, term: Int64, errors: [WireError])
    /// The standby's entries after `keep` are not in the master's history; a snapshot follows.
    case diverged(keep: Int64, term: Int64)
    /// Operation ids the snapshot that follows covers (one part of them).
    case appliedIds(AppliedIdsPart)

    /// The standby message `o` is, nil when `o` is another message; an error when it is one
    /// but malformed.
    public static func decode(_ o: JSONObject) -> Result<StandbyMessage, WireError>? {
        switch o["type"]?.stringValue {
        case "members":
            guard let term = o["term"]?.intValue, let m = o["master"]?.objectValue.flatMap(StoreMember.init(json:)),
                let list = o["terminals"]?.arrayValue
            else { return .failure(WireError(.invalidMessage, "members needs term, master and terminals")) }
            var terminals: [MemberTerminal] = []
            for v in list {
                guard let t = v.objectValue, let member = StoreMember(json: t), let paired = t["pairedMs"]?.intValue else {
                    return .failure(WireError(.invalidMessage, "a member terminal needs id, key, name and pairedMs"))
                }
                terminals.append(
                    MemberTerminal(
                        member: member, pairedMillis: paired, revokedMillis: t["revokedMs"]?.intValue,
                        voter: t["voter"].map { $0 != .bool(false) } ?? true))
            }
            return .success(
                .members(StoreMembers(term: term, master: m, terminals: terminals, settings: o["settings"]?.objectValue ?? JSONObject())))
        case "refused":
            guard let id = o["opId"]?.stringValue, let origin = o["origin"]?.stringValue, let list = o["errors"]?.arrayValue else {
                return .failure(WireError(.invalidMessage, "refused needs opId, origin and errors"))
            }
            let errors = list.compactMap { v -> WireError? in
                guard let e = v.objectValue, case .success(.error(let err, _, _)) = ServerMessage.decode(.object(e)) else { return nil }
                return err
            }
            return .success(.refused(opId: id, origin: origin, term: o["term"]?.intValue ?? 1, errors: errors))
        case "diverged":
            guard let keep = o["keep"]?.intValue, keep >= 0 else {
                return .failure(WireError(.invalidMessage, "diverged needs keep >= 0"))
            }
            return .success(.diverged(keep: keep, term: o["term"]?.intValue ?? 1))
        case "opIds":
            return AppliedIdsPart.decode(o).map { .appliedIds($0) }
        default:
            return nil
        }
    }

    /// The message's JSON bytes.
    public func encodedBytes() -> [UInt8] {
        switch self {
        case .members(let m):
            return m.encodedBytes()
        case let .refused(opId, origin, term, errors):
            let list: [JSONValue] = errors.map { .object(ServerMessage.error($0, opId: opId, operation: nil).jsonObject()) }
            return JSONValue.object(
                JSONObject([
                    ("type", .string("refused")), ("opId", .string(opId)), ("origin", .string(origin)), ("term", .int(term)),
                    ("errors", .array(list)),
                ])
            ).serializedBytes()
        case let .diverged(keep, term):
            return JSONValue.object(JSONObject([("type", .string("diverged")), ("keep", .int(keep)), ("term", .int(term))]))
                .serializedBytes()
        case .appliedIds(let p):
            return p.encodedBytes()
        }
    }

    /// The refusal of a hello from a terminal that follows a newer term: this master is stale.
    public static func staleMasterBytes(term: Int64) -> [UInt8] {
        JSONValue.object(
            JSONObject([
                ("type", .string("error")), ("code", .string("stale_master")),
                ("message", .string("this master's term is over: term \(term) has begun")), ("term", .int(term)),
            ])
        ).serializedBytes()
    }
}
