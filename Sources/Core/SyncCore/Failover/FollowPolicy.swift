/// What a slave does about an announced instance of its store, and whether it grants a
/// candidate's promise (design.md, "Following" and "Promotion" step 4). Pure: the node passes
/// what it holds (its `sync.term`, `sync.vote`, the members of its standby copy, the master it
/// follows) and the TXT record it browsed, and carries out the decision.
///
/// Only a member (the master, or a non-revoked paired terminal, by node id) may raise the term:
/// a stranger announcing `term=999` is ignored, whatever its term. Within one term a slave
/// pre-votes only for the candidate it promised, and follows at most one master: any member
/// announcing itself master of that term (a majority of promises makes at most one), unless it
/// already follows another one in it.
public struct FollowPolicy: Equatable, Sendable {
    /// The role an instance announces in its TXT `role` (absent: `master`, as every master
    /// before terms announced none).
    public enum AnnouncedRole: String, Equatable, Sendable {
        /// A node bidding for the term: a connection is a pre-vote.
        case candidate
        /// A master.
        case master

        /// The role of TXT `role=<text>`: `candidate`, else (`master`, absent, or a value
        /// from a later version) a master.
        public init(txt: String?) {
            self = txt == AnnouncedRole.candidate.rawValue ? .candidate : .master
        }
    }

    /// An instance of the store as browsed: its TXT `id`, `term` and `role`.
    public struct Announcement: Equatable, Sendable {
        /// TXT `id`; nil from a master that does not publish one.
        public var id: String?
        /// TXT `term`; absent means 1.
        public var term: Int64
        /// TXT `role`.
        public var role: AnnouncedRole

        /// An announcement from its fields.
        public init(id: String?, term: Int64 = 1, role: AnnouncedRole = .master) {
            self.id = id
            self.term = term
            self.role = role
        }
    }

    /// Why an instance is not followed, as the node logs it.
    public enum IgnoreReason: Equatable, Sendable, CustomStringConvertible {
        /// It publishes no `id`: an older master; the existing trust rules decide alone.
        case unidentified
        /// It is this node itself.
        case ownInstance
        /// Not a member of the store: log `master.untrusted` (a rogue announcing a high term).
        case notAMember(id: String, term: Int64)
        /// Its term is below this slave's.
        case lowerTerm(announced: Int64, own: Int64)
        /// Its term is this slave's, which belongs to another node (the one it voted for or
        /// follows).
        case termTaken(term: Int64, by: String?)

        public var description: String {
            switch self {
            case .unidentified: return "the instance publishes no node id"
            case .ownInstance: return "the instance is this node"
            case let .notAMember(id, term): return "\(id) (term \(term)) is not a member of this store"
            case let .lowerTerm(announced, own): return "its term \(announced) is below this terminal's term \(own)"
            case let .termTaken(term, by):
                return by.map { "term \(term) belongs to \($0)" } ?? "term \(term) belongs to another node"
            }
        }
    }

    /// The slave's move on an announcement.
    public enum Decision: Equatable, Sendable {
        /// Do nothing about it.
        case ignore(IgnoreReason)
        /// A candidate of a higher term (or the one this slave voted for): connect to it at
        /// once, dropping the current link, and say hello. Nothing is persisted.
        case preVote
        /// A master to follow: persist `sync.term` = `persistTerm` first when it is set (a
        /// higher term), then connect at once, dropping the current link (nothing to do when
        /// already connected to it).
        case follow(persistTerm: Int64?)
    }

    /// The answer to a `promise`.
    public enum PromiseAnswer: Equatable, Sendable {
        /// Grant: persist `vote` (`sync.term` and `sync.vote`) before answering when it is set;
        /// nil when that very vote is stored already.
        case granted(persist: TermVote?)
        /// Refuse, saying why.
        case refused(reason: String)
    }

    /// This node's id.
    public var nodeId: String
    /// Its `sync.term` (1 when absent).
    public var term: Int64
    /// Its `sync.vote`, if any.
    public var vote: TermVote?
    /// The members of the store it knows, node id to public key (hex): the master and the
    /// non-revoked paired terminals of its standby copy, and the masters it followed before.
    public var members: [String: String]
    /// The node id of the master it follows in its term `term`; nil when it follows none in
    /// that term (it raised its term by a promise or on seeing a later master, and has not
    /// reached that master yet). The node keeps it with `sync.term`.
    public var followedMaster: String?

    /// A policy from what the slave holds.
    public init(nodeId: String, term: Int64, vote: TermVote?, members: [String: String], followedMaster: String?) {
        self.nodeId = nodeId
        self.term = term
        self.vote = vote
        self.members = members
        self.followedMaster = followedMaster
    }

    /// What to do about `announced`.
    public func decide(_ announced: Announcement) -> Decision {
        guard let id = announced.id else { return .ignore(.unidentified) }
        guard id != nodeId else { return .ignore(.ownInstance) }
        guard members[id] != nil else { return .ignore(.notAMember(id: id, term: announced.term)) }
        if announced.term < term { return .ignore(.lowerTerm(announced: announced.term, own: term)) }
        if announced.term > term {
            return announced.role == .candidate ? .preVote : .follow(persistTerm: announced.term)
        }
        // The same term: the candidate it promised in it; a master, unless it follows another
        // one in it (whoever it voted for: a losing candidate's voters follow the winner).
        switch announced.role {
        case .candidate:
            if vote == TermVote(term: term, nodeId: id) { return .preVote }
            let holder = vote.flatMap { $0.term == term ? $0.nodeId : nil } ?? followedMaster
            return .ignore(.termTaken(term: term, by: holder))
        case .master:
            guard let followed = followedMaster, followed != id else { return .follow(persistTerm: nil) }
            return .ignore(.termTaken(term: term, by: followed))
        }
    }

    /// Whether to grant candidate `id` its promise for `promisedTerm`: yes when the term is
    /// above this slave's, or is its term and it voted for that very candidate in it.
    public func grant(promise promisedTerm: Int64, from id: String) -> PromiseAnswer {
        guard members[id] != nil else { return .refused(reason: "\(id) is not a member of this store") }
        guard id != nodeId else { return .refused(reason: "a node does not promise itself over a link") }
        let asked = TermVote(term: promisedTerm, nodeId: id)
        if promisedTerm > term { return .granted(persist: asked) }
        if promisedTerm < term { return .refused(reason: "term \(promisedTerm) is below this terminal's term \(term)") }
        if vote == asked { return .granted(persist: nil) }
        if let v = vote, v.term == term { return .refused(reason: "voted for \(v.nodeId) in term \(term)") }
        return .refused(reason: "term \(term) belongs to \(followedMaster ?? "another master")")
    }

    /// The node that holds this slave's term when it refuses candidate `id` a promise for
    /// `promisedTerm`: the one it promised (`sync.vote`) or the master it follows in its term,
    /// when that term is at or above `promisedTerm` and the holder is not `id`. Nil when it would
    /// grant, or knows no holder. A forced candidate told of a rival withdraws (`rival_candidate`):
    /// another node bids for or reigns in a term at least as high.
    public func rival(against promisedTerm: Int64, from id: String) -> TermVote? {
        guard term >= promisedTerm, case .refused = grant(promise: promisedTerm, from: id) else { return nil }
        let holder = vote.flatMap { $0.term == term ? $0.nodeId : nil } ?? followedMaster
        guard let holder, holder != id, holder != nodeId else { return nil }
        return TermVote(term: term, nodeId: holder)
    }
}
