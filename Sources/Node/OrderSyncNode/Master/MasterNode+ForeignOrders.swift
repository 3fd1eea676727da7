import Foundation
import JSON
import NodePolicy
import SyncCore

/// The local API of orders StorePOS apps hold that the store does not (`ForeignOrder`,
/// Docs/OPERATIONS.md "An iPad coming from StorePOS"): list them, adopt them into the store,
/// or clear them from the apps.
extension MasterNode {
    func handleForeignOrders(_ route: MasterAPIRoute, _ respond: LocalAPIServer.Respond) {
        let origin = respond.caller.origin(node: terminalName)
        switch route {
        case .foreignOrders:
            do {
                let list = try writer.read { try $0.foreignOrders() }
                respond(
                    200,
                    .object(
                        JSONObject([
                            ("foreign", .array(list.map { .object(Self.foreignObject($0)) })),
                            ("waiting", .int(Int64(list.filter { $0.state == .seen }.count))),
                        ])))
            } catch {
                respond(500, LocalAPIRoute.errorBody(code: "storage_failed", message: "\(error)"))
            }
        case .adoptForeignOrders(let uuids):
            enqueue(.foreign(adopt: true, uuids: uuids, origin: origin, respond: respond))
        case .clearForeignOrders(let uuids):
            enqueue(.foreign(adopt: false, uuids: uuids, origin: origin, respond: respond))
        default:
            respond(404, LocalAPIRoute.errorBody(code: "no_route", message: "not a StorePOS route"))
        }
    }

    /// Adopts or clears foreign orders in the current group; the answer leaves once it is on disk.
    func applyForeign(adopt: Bool, uuids: [String]?, origin: String, now: Int64, respond: LocalAPIServer.Respond)
        -> [MasterEngine.Action]
    {
        let (result, actions) =
            adopt
            ? engine.adoptForeignOrders(uuids, origin: origin, opId: UUID().uuidString.lowercased(), now: now)
            : engine.clearForeignOrders(uuids)
        var o = JSONObject()
        o[adopt ? "adopted" : "cleared"] = .array(result.records.map { .object(Self.foreignObject($0)) })
        o["unknown"] = .array(result.unknown.map { .string($0) })
        if let outcome = result.applied {
            o["seq"] = outcome.seq.map { .int($0) } ?? .null
            let written = LocalAPIRoute.writeAnswer(
                single: nil, operation: .create, applied: outcome.applied, unchanged: outcome.unchanged, errors: outcome.errors,
                seq: outcome.seq)
            o["errors"] = written.body.objectValue?["errors"] ?? .array([])
        }
        let failed = LocalAPIRoute.errorBody(code: "storage_failed", message: "the master could not store the change")
        group.answers.append((respond, 200, JSONValue.object(o).serializedBytes(), (500, failed)))
        return actions
    }

    /// A foreign order as the local API shows it.
    static func foreignObject(_ f: ForeignOrder) -> JSONObject {
        JSONObject([
            ("uuid", .string(f.uuid)), ("state", .string(f.state.rawValue)), ("address", .string(f.address)),
            ("order", (try? JSONParser.parse(Array(f.content.utf8))) ?? .string(f.content)),
            ("firstSeen", .string(OrderTimestamp(epochMillis: f.firstSeenMillis).storePOSText)),
            ("lastSeen", .string(OrderTimestamp(epochMillis: f.lastSeenMillis).storePOSText)), ("count", .int(f.count)),
        ])
    }
}
