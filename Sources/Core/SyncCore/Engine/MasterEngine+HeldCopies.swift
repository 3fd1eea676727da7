import JSON

/// Creates a StorePOS app may already hold (`Docs/PROTOCOL.md` 4.2.1, "A Create applied again
/// after a master change"). The app inserts every order of a received Create in its Realm,
/// whose primary key is the uuid, and crashes when the uuid is there already. A master that is
/// the only master its store ever had sends an app only orders its store never had, after a
/// connect sequence that removed every order it has. After a promotion (7.9) or a restore
/// (7.17) that no longer holds: the master applies again Creates that an older master applied
/// and broadcast (a till's re-queued tail, 7.5; a retry of a change the old master applied but
/// never answered; the promoted node's own outbox, 7.12), and an app that got the order from
/// that master still holds it.
///
/// So, in a store whose history names another term than 1 (there was another master: a
/// promotion, a restore), an order of a Create that an app *may* hold is preceded, on that
/// app, by a Remove of its uuid, one uuid per message (a Remove naming more uuids than the
/// app's list holds does nothing), and `StorePOSSpacing` puts its `distance` promises between
/// that Remove and the Create. An app may hold an order from another master only if it
/// received it before its link to this master opened, and an order is created before any
/// master applies it: so the orders an app may hold are those created before its link opened.
/// `created` is read on the creating terminal's clock, so the comparison allows
/// `heldCopyMarginMillis` either way, and a `created` further ahead of the master's clock than
/// that (a clock off by more, or a time a caller gave) proves nothing and counts as may-hold.
/// An app whose link's opening time the engine was not told may hold anything. A Create that
/// is itself a repeat is broadcast to no one, so it gets nothing.
extension MasterEngine {
    /// How far `created` may be off the master's clock: twice the 30 s bound past which the
    /// master logs a terminal's clock as skewed (`Docs/PROTOCOL.md` 4.8).
    public static let heldCopyMarginMillis: Int64 = 60_000

    /// Whether the store's history had a master other than this term's: a term other than 1,
    /// or term starts that name one.
    var hadOtherMasters: Bool {
        terms.term != 1 || terms.starts.starts.keys.contains { $0 != 1 }
    }

    /// Whether the StorePOS app on `peer` may hold `order` from another master (see the type's
    /// comment); `now` is the master's clock.
    func mayHold(_ order: Order, on peer: Peer, now: Int64) -> Bool {
        guard let opened = peer.connectedMillis else { return true }
        let created = order.created.epochMillis
        return created < opened + Self.heldCopyMarginMillis || created > now + Self.heldCopyMarginMillis
    }

    /// Before the broadcast of the Create of `orders` to `ids`: to each StorePOS terminal among
    /// them, a Remove of each order its app may hold, one uuid per message, spaced from what it
    /// was sent about that order before; the caller's `spaceForStorePOS` then puts the Create
    /// `distance` promises after the last of them. Logs `storepos.held_removed` (debug).
    func removeHeldCopies(of orders: [Order], before ids: [Int], now: Int64, _ out: inout [Action]) {
        guard hadOtherMasters else { return }
        for id in ids {
            guard let peer = peers[id], !peer.speaksOrderSync else { continue }
            let held = orders.filter { mayHold($0, on: peer, now: now) }
            guard !held.isEmpty else { continue }
            for order in held {
                spaceForStorePOS([id], naming: [order.uuid], promises: 1, &out)
                let remove = OperationMessage(operation: .remove, orders: [.object(JSONObject([("uuid", .string(order.uuid))]))])
                out.append(.send(peer: id, bytes: remove.encodedBytes()))
            }
            out.append(
                .log(EngineLog(.debug, "storepos.held_removed", [("peer.address", peer.address), ("orders", "\(held.count)")])))
        }
    }
}
