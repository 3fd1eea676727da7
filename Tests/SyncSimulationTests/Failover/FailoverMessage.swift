import JSON

@testable import SyncCore

/// The failover model's sync messages (a small cousin of the real wire: hello with terms,
/// operations, broadcasts carrying their term, results, `diverged`, `ready`, `stale_master`),
/// and the real `ElectionMessage`s, which it carries as the node does.
enum FailoverMessage: Equatable {
    case hello(node: Int, history: TermHistory, term: Int64)
    case operation(opId: String)
    case ack(held: Int64)
    case entry(FailoverEntry)
    case result(opId: String, seq: Int64)
    case diverged(keep: Int64)
    case ready(term: Int64)
    case staleMaster(term: Int64)
    case election(ElectionMessage)

    /// The JSON text.
    var text: String {
        var o = JSONObject()
        switch self {
        case let .hello(node, history, term):
            o = JSONObject([
                ("type", .string("hello")), ("node", .int(Int64(node))), ("lastSeq", .int(history.lastSeq)),
                ("lastTerm", .int(history.lastTerm)), ("term", .int(term)), ("termStarts", history.startsJSON),
            ])
        case .operation(let opId):
            o = JSONObject([("type", .string("op")), ("opId", .string(opId))])
        case .ack(let held):
            o = JSONObject([("type", .string("ack")), ("held", .int(held))])
        case .entry(let e):
            o = JSONObject([("type", .string("entry")), ("seq", .int(e.seq)), ("term", .int(e.term)), ("opId", .string(e.opId))])
        case let .result(opId, seq):
            o = JSONObject([("type", .string("result")), ("opId", .string(opId)), ("seq", .int(seq))])
        case .diverged(let keep):
            o = JSONObject([("type", .string("diverged")), ("keep", .int(keep))])
        case .ready(let term):
            o = JSONObject([("type", .string("ready")), ("term", .int(term))])
        case .staleMaster(let term):
            o = JSONObject([("type", .string("error")), ("code", .string("stale_master")), ("term", .int(term))])
        case .election(let m):
            return String(decoding: m.encodedBytes(), as: UTF8.self)
        }
        return JSONValue.object(o).serialized()
    }

    /// Reads a message; nil for anything this model never sends (a bug of the model).
    static func parse(_ text: String) -> FailoverMessage? {
        let bytes = Array(text.utf8)
        if let election = ElectionMessage.decode(bytes) {
            guard case .success(let m) = election else { return nil }
            return .election(m)
        }
        guard let o = (try? JSONParser.parse(bytes))?.objectValue, let type = o["type"]?.stringValue else { return nil }
        func int(_ key: String) -> Int64 { o[key]?.intValue ?? -1 }
        func string(_ key: String) -> String { o[key]?.stringValue ?? "" }
        switch type {
        case "hello":
            let starts = o["termStarts"].flatMap { TermHistory.starts(json: $0) } ?? [:]
            return .hello(node: Int(int("node")), history: TermHistory(starts: starts, lastSeq: int("lastSeq")), term: int("term"))
        case "op": return .operation(opId: string("opId"))
        case "ack": return .ack(held: int("held"))
        case "entry": return .entry(FailoverEntry(seq: int("seq"), term: int("term"), opId: string("opId")))
        case "result": return .result(opId: string("opId"), seq: int("seq"))
        case "diverged": return .diverged(keep: int("keep"))
        case "ready": return .ready(term: int("term"))
        case "error": return .staleMaster(term: int("term"))
        default: return nil
        }
    }
}
