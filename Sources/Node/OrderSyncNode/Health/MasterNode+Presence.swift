import NodePolicy
import OrderStore
import SyncCore

/// Where each paired terminal is (Docs/OPERATIONS.md, "Monitoring"): connected now, or away
/// since it was last seen and behind by what it has not acknowledged. Status (`away`), the
/// check (`--max-away`, `--max-lag`) and the per-terminal metrics read the same list, built
/// from the paired terminals (not revoked), what is saved of each (`terminals`: last seen, last
/// ack, address) and the links open now.
extension MasterNode {
    /// Every paired terminal but this node itself (a promoted master is in the list it kept
    /// as a slave), by name, at `nowMillis`.
    func terminalPresence(nowMillis: Int64) -> [TerminalPresence] {
        guard let paired = try? writer.read({ try $0.pairedTerminals() }) else { return [] }
        let saved = (try? writer.read { try $0.knownTerminals() }) ?? []
        let me = nodeIdentity.nodeId
        return paired.filter { $0.nodeId != me }.map { t in
            let live = engine.peers.values.filter { $0.terminalId == t.nodeId }.sorted { $0.id < $1.id }.last
            let known = saved.first { $0.id == t.nodeId }
            return TerminalPresence(
                terminalId: t.nodeId, name: t.name, connected: live != nil, lastSeenMillis: live != nil ? nowMillis : known?.lastSeenMillis,
                pairedAtMillis: t.pairedAtMillis, ackedSeq: live?.ackedSeq ?? known?.ackedSeq, address: live?.address ?? known?.address,
                outbox: live?.outbox ?? known?.outbox)
        }
    }
}
