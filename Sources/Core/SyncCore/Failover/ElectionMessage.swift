import JSON

/// The messages of a promotion between a candidate and a voter (design.md, "Wire", part
/// `election`), on the same link as the sync messages. The node tries `ElectionMessage.decode`
/// before the usual parsers; it answers nil for any other message, so those go on as before.
///
/// - candidate → voter `{"type":"promise","term":T'}`
/// - voter → candidate `{"type":"vote","term":T',"granted":bool,"lastSeq":S,"lastTerm":t,"reason":".."}`
///   (`reason` only with a refusal; `"rival":"<node id>","rivalTerm":R` too when the voter
///   refused because it promised or follows another node in a term R >= T')
/// - candidate → voter `{"type":"fetch","after":S,"termStarts":{"1":1,"3":11}}`: its journal
///   ends at S, and its terms began there. The voter finds K, the last seq both histories hold
///   in the same term (`TermHistory.sharedSeq(with:)`), and sends its journal entries with
///   seq > K as the broadcast bytes it stored, then `{"type":"fetched","seq":X}`. An entry at
///   or below S replaces the candidate's own entries from its seq on (they go back to its
///   outbox, as after `diverged`).
public enum ElectionMessage: Equatable, Sendable {
    /// Asks for the voter's promise not to follow anybody else in `term`.
    case promise(term: Int64)
    /// The voter's answer to `promise`.
    case vote(Vote)
    /// Asks for the journal entries the candidate lacks: its journal ends at `after`, its terms
    /// began at `termStarts` (term to first seq).
    case fetch(after: Int64, termStarts: [Int64: Int64])
    /// Every entry up to `seq` was sent.
    case fetched(seq: Int64)

    /// A voter's answer: granted or not, and where its journal ends.
    public struct Vote: Equatable, Sendable {
        /// The term promised (or refused).
        public var term: Int64
        /// True when the voter promised.
        public var granted: Bool
        /// Where the voter's journal ends.
        public var position: LogPosition
        /// Why it refused; nil when granted.
        public var reason: String?
        /// With a refusal: the other node the voter promised or follows, in a term at or above
        /// the one asked (`FollowPolicy.rival(against:from:)`); a forced candidate withdraws.
        public var rival: TermVote?

        /// A vote from its fields.
        public init(term: Int64, granted: Bool, position: LogPosition, reason: String? = nil, rival: TermVote? = nil) {
            self.term = term
            self.granted = granted
            self.position = position
            self.reason = reason
            self.rival = rival
        }
    }

    /// The `type` values of these messages.
    public static let types: Set<String> = ["promise", "vote", "fetch", "fetched"]

    /// Longest `reason` a vote may carry, in UTF-8 bytes.
    public static let maxReasonBytes = 512

    /// The members of this message, in the order written.
    public func jsonObject() -> JSONObject {
        var o = JSONObject()
        switch self {
        case .promise(let term):
            o["type"] = .string("promise")
            o["term"] = .int(term)
        case .vote(let v):
            o["type"] = .string("vote")
            o["term"] = .int(v.term)
            o["granted"] = .bool(v.granted)
            o["lastSeq"] = .int(v.position.lastSeq)
            o["lastTerm"] = .int(v.position.lastTerm)
            if let r = v.reason { o["reason"] = .string(r) }
            if let r = v.rival {
                o["rival"] = .string(r.nodeId)
                o["rivalTerm"] = .int(r.term)
            }
        case let .fetch(after, termStarts):
            o["type"] = .string("fetch")
            o["after"] = .int(after)
            o["termStarts"] = TermHistory(starts: termStarts, lastSeq: after).startsJSON
        case .fetched(let seq):
            o["type"] = .string("fetched")
            o["seq"] = .int(seq)
        }
        return o
    }

    /// The JSON text as its UTF-8 bytes, as the wire carries it.
    public func encodedBytes() -> [UInt8] { JSONValue.object(jsonObject()).serializedBytes() }

    /// Decodes `bytes` when they are an election message: nil when they are some other message
    /// (or not JSON: the usual parser names that), else the message or an `invalid_message`
    /// error naming the member that is wrong.
    public static func decode(_ bytes: [UInt8]) -> Result<ElectionMessage, WireError>? {
        // Every election message has a `type`; a StorePOS operation (the hot path) usually not.
        guard contains(bytes, #""type""#) else { return nil }
        guard let value = try? JSONParser.parse(bytes, maxMembersPerObject: JSONParser.peerMaxMembersPerObject),
            let object = value.objectValue
        else { return nil }
        return decode(object)
    }

    /// Decodes a parsed message when its `type` is one of `types`; nil otherwise.
    public static func decode(_ o: JSONObject) -> Result<ElectionMessage, WireError>? {
        guard let type = o["type"]?.stringValue, types.contains(type) else { return nil }
        do {
            switch type {
            case "promise":
                return .success(.promise(term: try integer(o, "term", in: type, atLeast: 2)))
            case "vote":
                guard case .bool(let granted) = o["granted"] else {
                    throw WireError(.invalidMessage, "vote needs \"granted\": true or false")
                }
                var reason: String?
                if let r = o["reason"], r != .null {
                    guard let s = r.stringValue, s.utf8.count <= maxReasonBytes else {
                        throw WireError(.invalidMessage, "vote \"reason\" must be a string of at most \(maxReasonBytes) bytes")
                    }
                    reason = s
                }
                let position = LogPosition(
                    lastSeq: try integer(o, "lastSeq", in: type, atLeast: 0), lastTerm: try integer(o, "lastTerm", in: type, atLeast: 1))
                let vote = Vote(
                    term: try integer(o, "term", in: type, atLeast: 2), granted: granted, position: position, reason: reason,
                    rival: try rival(o))
                return .success(.vote(vote))
            case "fetch":
                let after = try integer(o, "after", in: type, atLeast: 0)
                guard let value = o["termStarts"], let starts = TermHistory.starts(json: value), !starts.isEmpty else {
                    throw WireError(
                        .invalidMessage, #"fetch needs "termStarts": an object of terms to first seqs, integers of 1 or more"#)
                }
                return .success(.fetch(after: after, termStarts: starts))
            default:
                return .success(.fetched(seq: try integer(o, "seq", in: type, atLeast: 0)))
            }
        } catch let e as WireError {
            return .failure(e)
        } catch {
            return .failure(WireError(.invalidMessage, "\(type): \(error)"))
        }
    }

    /// The `rival` and `rivalTerm` of a vote: both or neither.
    private static func rival(_ o: JSONObject) throws -> TermVote? {
        guard let value = o["rival"], value != .null else { return nil }
        guard let id = value.stringValue, !id.isEmpty, id.utf8.count <= maxReasonBytes else {
            throw WireError(.invalidMessage, "vote \"rival\" must be a node id")
        }
        return TermVote(term: try integer(o, "rivalTerm", in: "vote", atLeast: 1), nodeId: id)
    }

    /// Member `key` of a `type` message: an integer of `atLeast` or more.
    private static func integer(_ o: JSONObject, _ key: String, in type: String, atLeast minimum: Int64) throws -> Int64 {
        guard let v = o[key] else { throw WireError(.invalidMessage, "\(type) needs \"\(key)\"") }
        guard let n = v.intValue, n >= minimum else {
            let got = v.typeName == "number" ? v.serialized() : v.typeName
            throw WireError(.invalidMessage, "\(type) \"\(key)\" must be an integer of \(minimum) or more, got \(got)")
        }
        return n
    }

    /// True when `bytes` contain `needle` (ASCII).
    private static func contains(_ bytes: [UInt8], _ needle: StaticString) -> Bool {
        let n = needle.withUTF8Buffer { Array($0) }
        guard bytes.count >= n.count, let first = n.first else { return false }
        var i = 0
        while i <= bytes.count - n.count {
            if bytes[i] == first && bytes[i..<(i + n.count)].elementsEqual(n) { return true }
            i += 1
        }
        return false
    }
}
