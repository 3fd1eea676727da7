/// The terminals' messages a master holds while its lease is lapsed (`--auto-failover`;
/// Docs/PROTOCOL.md, "Automatic failover"), bounded as every queue of the node is: at most
/// `mostMessages` messages and `mostBytes` bytes in all. Pure: the node offers each message of a
/// terminal's link (`offer`) and carries out the decision; once the lease is held again it takes
/// the held messages (`release`) and applies them in arrival order.
///
/// A terminal's operation is held (unacknowledged: it stays in the terminal's outbox), and so is
/// whatever that link sends after it, in order. An operation that does not fit is refused (the
/// terminal sends it again later), and so is every later operation of that link until the lease
/// is held again: one that fitted after a refused one would overtake it. A later message that is
/// not an operation (an ack behind a held operation) and does not fit ends that link: its held
/// messages go (nothing of them was acknowledged), and the terminal connects again.
public struct LeaseHeldMessages<Session: Hashable & Sendable>: Sendable {
    /// What the node does with a terminal's message.
    public enum Decision: Equatable, Sendable {
        /// Not held: applied as usual (the lease is held, or a message that is not an operation
        /// from a link that holds nothing).
        case pass
        /// Held until the lease is held again.
        case held
        /// An operation refused unapplied: the terminal sends it again after a wait.
        case refuse
        /// The link is ended (try again later); its held messages were dropped.
        case close
    }

    /// The most messages held at once (all links together).
    public static var defaultMostMessages: Int { 10_000 }
    /// The most bytes of messages held at once (16 MiB, the bound of a link's unsent bytes).
    public static var defaultMostBytes: Int { 16 << 20 }

    public let mostMessages: Int
    public let mostBytes: Int
    /// The held messages, in arrival order.
    public private(set) var held: [(session: Session, bytes: [UInt8])] = []
    /// Their bytes.
    public private(set) var bytes = 0
    /// Operations refused since the lease lapsed (for the log line at `release`).
    public private(set) var refused = 0
    /// Links with a message held: their later messages wait behind it.
    private var holding: Set<Session> = []
    /// Links with an operation refused: their later operations are refused too.
    private var refusing: Set<Session> = []

    public init(mostMessages: Int = defaultMostMessages, mostBytes: Int = defaultMostBytes) {
        self.mostMessages = mostMessages
        self.mostBytes = mostBytes
    }

    /// A message `bytes` of link `session` while the lease is lapsed; `isOperation` when it is a
    /// terminal's operation.
    public mutating func offer(_ bytes: [UInt8], isOperation: Bool, from session: Session) -> Decision {
        if isOperation, refusing.contains(session) {
            refused += 1
            return .refuse
        }
        guard isOperation || holding.contains(session) else { return .pass }
        guard held.count < mostMessages, self.bytes + bytes.count <= mostBytes else {
            if isOperation {
                refusing.insert(session)
                refused += 1
                return .refuse
            }
            ended(session)
            return .close
        }
        held.append((session, bytes))
        self.bytes += bytes.count
        holding.insert(session)
        return .held
    }

    /// Link `session` ended (or is being closed): its held messages go.
    public mutating func ended(_ session: Session) {
        holding.remove(session)
        refusing.remove(session)
        guard held.contains(where: { $0.session == session }) else { return }
        held.removeAll { $0.session == session }
        bytes = held.reduce(0) { $0 + $1.bytes.count }
    }

    /// The lease is held again: the held messages, in arrival order; nothing is held or refused
    /// any more.
    public mutating func release() -> [(session: Session, bytes: [UInt8])] {
        defer { self = LeaseHeldMessages(mostMessages: mostMessages, mostBytes: mostBytes) }
        return held
    }
}
