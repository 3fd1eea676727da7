import NodePolicy

extension StatusText {
    /// Multi-line text of a status, now (a pairing window's countdown from the wall clock).
    public static func render(_ status: NodeStatus) -> String {
        render(status, nowMillis: WallClock.nowMillis())
    }
}
