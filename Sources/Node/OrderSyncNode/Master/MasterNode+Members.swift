import Foundation
import JSON
import Logging
import OrderStore
import SyncCore

/// The store's members and settings as the master hands them to its engine, which sends them to
/// every standby (`{"type":"members"}`, Docs/PROTOCOL.md 7): at start, and whenever a pairing,
/// a revocation, a key rotation or a dashboard token changes them. A slave without them cannot be promoted
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
        // The dashboard's tokens (digests only): a promoted standby lets the same tokens in.
        settings[DashboardTokens.settingsKey] = dashboardTokens.tokens.jsonValue
        let number = try? writer.read { try $0.ownMemberNumber() }
        return StoreMembers(
            term: term, master: StoreMember(id: keys.current.nodeId, key: key, name: terminalName, number: number),
            terminals: terminals, settings: settings)
    }

    /// A master proper takes its member number at start when it has none (`member.number`,
    /// Docs/PROTOCOL.md 7.16): the next one after its terminals'. Before the loop runs, committed
    /// in place as the store's identity is. Without a number left it goes on (logged): it cannot
    /// bid a term once a slave, and its terminals keep theirs.
    static func claimMemberNumber(_ writer: StoreWriter, nodeId: String, logger: Logger) {
        do {
            _ = try writer.writeBetweenRoles { db in try db.claimOwnMemberNumber(nodeId: nodeId) }
        } catch {
            logger.warning("members.no_number", metadata: ["error": "\(error)"])
        }
    }

    /// Hands the members to the engine (and so to every standby connected).
    func announceMembers() {
        leaseMembersChanged()
        guard let members = storeMembers() else {
            logger.warning("members.unreadable", metadata: ["hint": "standbys keep the members they had"])
            return
        }
        perform(engine.membersChanged(members))
    }
}
