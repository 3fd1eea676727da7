import Foundation
import JSON
import OrderStore
import SyncCore

/// The store's members and settings as the master hands them to its engine, which sends them to
/// every standby (`{"type":"members"}`, Docs/PROTOCOL.md 7): at start, and whenever a pairing,
/// a revocation or a key rotation changes them. A slave without them cannot be promoted
/// (`no_standby_copy`).
extension MasterNode {
    /// The members as the store holds them now: this master (its current key), every paired
    /// terminal (revoked ones with their date), and the settings a promoted node keeps.
    func storeMembers() -> StoreMembers? {
        guard let terminals = try? writer.read({ try $0.memberTerminals() }) else { return nil }
        let key = Array(keys.current.publicKey.rawRepresentation).map { String(format: "%02x", $0) }.joined()
        var settings = JSONObject()
        settings["storePOS"] = .bool(configuration.insecureStorePOS)
        settings["storePOSRanges"] = .array(configuration.storePOSAllow.map { .string($0.description) })
        return StoreMembers(
            term: term, master: StoreMember(id: keys.current.nodeId, key: key, name: terminalName), terminals: terminals,
            settings: settings)
    }

    /// Hands the members to the engine (and so to every standby connected).
    func announceMembers() {
        guard let members = storeMembers() else {
            logger.warning("members.unreadable", metadata: ["hint": "standbys keep the members they had"])
            return
        }
        perform(engine.membersChanged(members))
    }
}
