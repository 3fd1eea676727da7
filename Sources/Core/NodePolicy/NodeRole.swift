/// A node's role.
public enum NodeRole: String, Sendable {
    case master
    case slave
}
