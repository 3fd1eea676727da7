import Foundation
import JSON
import SyncCore

extension MasterNode {
    func handleAPI(_ route: LocalAPIRoute, _ respond: @escaping LocalAPIServer.Respond) {
        switch route {
        case .status:
            respond(200, status())
        case .list, .show, .journal, .rejections:
            _ = NodeStartup.answerRead(route, db: db, respond: respond)
        case .write(var message, let single):
            if message.opId == nil { message.opId = UUID().uuidString.lowercased() }
            let origin = "\(terminalName) (local API)"
            let (outcome, actions) = engine.localWrite(message, origin: origin, now: WallClock.nowMillis())
            perform(actions)
            let answer = LocalAPIRoute.writeAnswer(single: single, operation: message.operation, applied: outcome.applied,
                                                   unchanged: outcome.unchanged, errors: outcome.errors + outcome.repeatedErrors,
                                                   seq: outcome.seq)
            respond(answer.status, answer.body)
        }
    }

    func status() -> JSONValue {
        var o = JSONObject()
        o["role"] = .string("master")
        o["version"] = .string(NodeVersion.string)
        o["store"] = .string(storeId)
        o["name"] = .string(terminalName)
        o["epoch"] = .string(engine.epoch)
        o["seq"] = .int(engine.lastSeq)
        o["orders"] = .int(Int64((try? db.orderCount()) ?? 0))
        o["port"] = .int(Int64(boundPort))
        o["dataDir"] = .string(configuration.dataDirectory)
        o["serviceType"] = .string(configuration.serviceType)
        o["serviceName"] = publishedName.map { .string($0) } ?? .null
        o["avahi"] = .string(avahiState)
        o["uptimeSeconds"] = .int(Int64(Date().timeIntervalSince(startedAt)))
        let now = loop.now
        let lastSeq = engine.lastSeq
        let known = engine.peers
        o["peers"] = .array(sessions.values.sorted { $0.id < $1.id }.filter { $0.link != nil }.map { s in
            let e = known[s.id]
            var p = JSONObject()
            p["address"] = .string(s.address)
            p["protocol"] = .string(s.speaksOrderSync ? "ordersync" : "storepos")
            p["terminal"] = e?.terminalName.map { .string($0) } ?? .null
            p["terminalId"] = e?.terminalId.map { .string($0) } ?? .null
            p["connectedSeconds"] = .int((now - s.connectedAt) / 1000)
            p["lastSeenMillisAgo"] = .int(now - (s.link?.lastHeardMillis ?? now))
            p["ackedSeq"] = e?.ackedSeq.map { .int($0) } ?? .null
            p["lag"] = e?.ackedSeq.map { .int(lastSeq - $0) } ?? .null
            p["messages"] = .int(Int64(e?.messagesIn ?? 0))
            p["rejected"] = .int(Int64(e?.rejected ?? 0))
            return .object(p)
        })
        let connectedIds = Set(known.values.compactMap(\.terminalId))
        o["terminals"] = .array(((try? db.knownTerminals()) ?? []).map { t in
            var k = JSONObject()
            k["terminalId"] = .string(t.id)
            k["name"] = .string(t.name)
            k["address"] = .string(t.address)
            k["connected"] = .bool(connectedIds.contains(t.id))
            let acked = known.values.first { $0.terminalId == t.id }?.ackedSeq ?? t.ackedSeq
            k["ackedSeq"] = .int(acked)
            k["lag"] = .int(max(0, lastSeq - acked))
            k["lastSeen"] = .string(OrderTimestamp(epochMillis: t.lastSeenMillis).storePOSText)
            return .object(k)
        })
        o["tombstones"] = .int(Int64((try? db.tombstoneCount()) ?? 0))
        return .object(o)
    }
}
