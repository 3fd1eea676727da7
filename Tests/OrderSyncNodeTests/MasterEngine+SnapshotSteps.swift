import SyncCore

extension MasterEngine {
    /// The next step of a terminal's paced snapshot, as the node takes it: the next part, or,
    /// where a StorePOS app's connect sequence waits at a pause, past it (the node does so once
    /// the link has written everything and the settle time passed).
    func snapshotStep(for id: Int) -> [Action] {
        isSnapshotSettling(id) ? snapshotSettled(id) : snapshotDue(for: id)
    }
}
