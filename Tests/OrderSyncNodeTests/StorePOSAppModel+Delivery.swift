import SyncCore
import WireTestSupport

extension Dictionary where Key == Int, Value == StorePOSAppModel {
    /// Carries the master's messages to the apps (by peer id), in order; returns the texts sent
    /// to `peer`.
    mutating func deliver(_ actions: [MasterEngine.Action], to peer: Int) -> [String] {
        var texts: [String] = []
        for action in actions {
            switch action {
            case .send(let p, let bytes):
                self[p]?.receive(bytes.text)
                if p == peer { texts.append(bytes.text) }
            case .broadcast(let bytes, let peers):
                for p in peers { self[p]?.receive(bytes.text) }
                if peers.contains(peer) { texts.append(bytes.text) }
            default: break
            }
        }
        return texts
    }
}
