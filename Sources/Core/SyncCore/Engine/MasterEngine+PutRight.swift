import JSON

/// Refusals put right on a plain StorePOS app. The app applies its own Update or Remove to its
/// list and its Realm before it sends it, and never reads an `error`: a refused change would
/// stay on its screen until it reconnects. So, right after the `error`, the master sends that
/// app what undoes the change under the app's own rules (`Docs/PROTOCOL.md` 3.1):
///
/// * a refused Update: an Update carrying the master's copy (the app replaces the first row
///   with that uuid);
/// * a refused Remove: a Create of the master's copy (the app deleted the row from its Realm
///   before sending the Remove, so the insert cannot meet a duplicate key); while the app's own
///   connect sequence is still going out and its Create of the order is still to come, nothing:
///   that Create puts the order back, and a second one would crash the app (a Remove of an
///   order the app held from before, sent before it handled the sequence's Remove of it);
/// * a Create of an order the master does not have, refused for what it holds (a table size
///   out of range, a text too long; or as `removed`): a Remove of that uuid (the app inserted
///   the order in its Realm before sending it, so it holds it and the Remove finds it); as
///   `already_exists`: an Update with the master's copy. A Create that failed to commit
///   (`storage_failed`) is left on the app: it was not judged, and the app holds the only copy.
///
/// The uuid is spelled as the app sent it, since the app compares uuids exactly. OrderSync
/// slaves get none of this: their `error` (and `conflict`) carry what they need.
extension MasterEngine {
    /// The message that undoes, on StorePOS terminal `peer`, the change `e` refused; nil when
    /// there is nothing to put right (the master does not have the order, or the refusal is of
    /// a whole message).
    func putRight(_ e: WireError, of message: OperationMessage, for peer: Int) -> (operation: OperationKind, bytes: [UInt8])? {
        guard let master = e.uuid, let sent = Self.sentSpelling(of: master, index: e.index, in: message) else { return nil }
        let current: Order?
        do { current = try store.order(uuid: master) } catch { return nil }
        switch (message.operation, current) {
        case (.update, let order?):
            return (.update, Self.storePOSMessage(.update, order, spelled: sent))
        case (.remove, let order?):
            // The app's connect sequence is still going out: when its Create of the order is
            // still to come, that Create puts the order back (nothing more: a second Create
            // would crash the app); when it went out, the app removed the copy it gave.
            if let stream = snapshots[peer], !stream.hasHandedOut(order) { return nil }
            return (.create, Self.storePOSMessage(.create, order, spelled: sent))
        case (.create, let order?) where e.code == .alreadyExists:
            return (.update, Self.storePOSMessage(.update, order, spelled: sent))
        case (.create, nil) where e.code != .storageFailed:
            let orders: [JSONValue] = [.object(JSONObject([("uuid", .string(sent))]))]
            return (.remove, OperationMessage(operation: .remove, orders: orders).encodedBytes())
        default:
            return nil
        }
    }

    /// Sends a StorePOS terminal what puts right the change `e` refused, if anything does, and
    /// logs it (`storepos.put_right`).
    func sendPutRight(_ e: WireError, of message: OperationMessage, to peer: Int, _ out: inout [Action]) {
        guard peers[peer]?.speaksOrderSync == false, let answer = putRight(e, of: message, for: peer) else { return }
        spaceForStorePOS([peer], naming: [e.uuid ?? ""], promises: 1, &out)
        out.append(.send(peer: peer, bytes: answer.bytes))
        out.append(
            .log(
                EngineLog(
                    .info, "storepos.put_right",
                    [
                        ("peer.address", peers[peer]?.address ?? "?"), ("order.uuid", e.uuid ?? ""), ("code", e.code.rawValue),
                        ("refused", "\(message.operation)"), ("sent", "\(answer.operation)"),
                    ])))
    }

    /// The uuid of the refused order as the sender wrote it: the one at `index` when it names
    /// the same order, else the first in the message that does (compared without case).
    static func sentSpelling(of uuid: String, index: Int?, in message: OperationMessage) -> String? {
        let key = uuid.lowercased()
        func spelled(_ value: JSONValue) -> String? {
            guard let u = value.objectValue?["uuid"]?.stringValue, u.lowercased() == key else { return nil }
            return u
        }
        if let i = index, message.orders.indices.contains(i), let u = spelled(message.orders[i]) { return u }
        return message.orders.lazy.compactMap(spelled).first
    }

    /// `{"operation":…,"orders":[order]}` with the order's uuid spelled `spelled`.
    static func storePOSMessage(_ operation: OperationKind, _ order: Order, spelled: String) -> [UInt8] {
        var copy = order
        copy.uuid = spelled
        return ServerMessage.applied(operation: operation, orders: [copy], seq: nil, opId: nil, origin: nil, snapshot: nil).encodedBytes()
    }
}
