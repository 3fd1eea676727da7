import NodePolicy
import OrderStore

/// What status and metrics show of failover (Docs/PROTOCOL.md 7), read from the store.
enum FailoverStatus {
    /// The node's term: metadata `sync.term` (absent, or the store unreadable: 1).
    static func term(_ writer: StoreWriter) -> Int64 {
        let text = (try? writer.read { try $0.metadata("sync.term") }) ?? nil
        return text.flatMap { Int64($0) } ?? 1
    }

    /// The store's voters: the master (`masterId`, shown as `masterName`) and every other paired
    /// terminal not revoked whose voter flag is set, by name. The master's own row among the
    /// paired terminals (Docs/PROTOCOL.md 7.20) is the master: counted once. Nil when the store
    /// cannot be read.
    static func voters(_ writer: StoreWriter, masterId: String, masterName: String) -> MasterStatus.Voters? {
        guard
            let names = try? writer.read({ db -> [String] in
                let nonVoters = try db.nonVoters()
                return try db.pairedTerminals().filter { !nonVoters.contains($0.nodeId) && $0.nodeId != masterId }.map(\.name)
            })
        else { return nil }
        return MasterStatus.Voters(names: [masterName] + names)
    }
}
