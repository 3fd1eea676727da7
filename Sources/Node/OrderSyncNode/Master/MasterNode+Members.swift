import Foundation
import JSON
import Logging
import OrderStore
import SyncCore

/// The store's members and settings for the standbys (`Docs/PROTOCOL.md` 7.3).
extension MasterNode {
    /// Gives the engine the store's members (this master, the paired terminals with their voter
    /// flags) and the settings a promoted slave must keep; it sends them to every slave at once
    /// and to each later one after its `ready`. Called at start and after pairing or revoking.
    func publishMembers() {
        let key = Array(keys.current.publicKey.rawRepresentation).map { String(format: "%02x", $0) }.joined()
        let master = StoreMember(id: keys.current.nodeId, key: key, name: terminalName)
        let settings = JSONObject([
            ("storePOS", .bool(configuration.insecureStorePOS)),
            ("storePOSRanges", .array(configuration.storePOSAllow.map { .string($0.description) })),
        ])
        do {
            let members = try writer.read { try $0.storeMembers(master: master, settings: settings) }
            perform(engine.membersChanged(members))
        } catch {
            logger.error("members.read_failed", metadata: ["error": "\(error)"])
        }
    }
}
