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
    /// Docs/PROTOCOL.md 7.16): the next one after its terminals'; and it is a member of its store
    /// like a paired fixed terminal (7.20): its own row among the paired terminals, a voter under
    /// its key and its name, added once to a new store or one made by an earlier version
    /// (`members.master_added`), moved to its new key after a rotation (`members.master_rekeyed`).
    /// Before the loop runs, committed in place as the store's identity is. Without a number
    /// left it goes on (logged): it cannot bid a term once a slave, and its terminals keep theirs.
    static func claimMembership(_ writer: StoreWriter, identity: NodeIdentity, name: String, logger: Logger) {
        do {
            let row = try writer.writeBetweenRoles { db in
                try db.keepOwnMemberRow(
                    nodeId: identity.nodeId, publicKey: identity.publicKeyBytes, name: name, atMillis: WallClock.nowMillis())
            }
            logOwnRow(row, logger: logger)
        } catch {
            logger.warning("members.no_number", metadata: ["error": "\(error)"])
        }
    }

    /// Logs what `keepOwnMemberRow` changed (nothing when the row was there).
    static func logOwnRow(_ row: OwnMemberRow, logger: Logger) {
        switch row {
        case .kept:
            return
        case .added(let t):
            logger.notice(
                "members.master_added",
                metadata: [
                    "node.id": "\(t.nodeId)", "name": "\(t.name)", "voter": "true",
                    "hint": "this master is a member of its store like a paired terminal: once stepped down, the next master knows its key",
                ])
        case .rekeyed(let t, let previous):
            logger.notice(
                "members.master_rekeyed", metadata: ["node.id": "\(t.nodeId)", "previous.id": "\(previous)", "name": "\(t.name)"])
        }
    }

    /// After a key rotation: the master's own row takes its new key (committed off the loop),
    /// then the standbys get the members.
    func rekeyOwnRow() {
        // A write: it waits for a group's commit in flight.
        writer.whenIdle { [weak self] in self?.writeOwnRow() }
    }

    private func writeOwnRow() {
        let (identity, name, logger) = (keys.current, terminalName, self.logger)
        storeWrite({ db in
            try db.keepOwnMemberRow(
                nodeId: identity.nodeId, publicKey: identity.publicKeyBytes, name: name, atMillis: WallClock.nowMillis())
        }) { [weak self] result in
            switch result {
            case .success(let row): Self.logOwnRow(row, logger: logger)
            case .failure(let error): logger.error("members.rekey_failed", metadata: ["error": "\(error)"])
            }
            self?.announceMembers()
        }
    }

    /// The paired terminals not revoked but this master's own row (7.20): the terminals it serves.
    func servedTerminals() throws -> [PairedTerminal] {
        let me = nodeIdentity.nodeId
        return try writer.read { try $0.pairedTerminals() }.filter { $0.nodeId != me }
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
