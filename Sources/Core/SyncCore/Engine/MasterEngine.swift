import JSON

/// What applying one operation message produced.
public struct ApplyOutcome: Sendable {
    /// The journal sequence number of the applied change, if anything was applied.
    public var seq: Int64?
    /// The broadcast for every terminal (UTF-8 JSON bytes), as journalled (nil when nothing was
    /// applied); one larger than `MasterEngine.broadcastPartBytes` goes out in parts
    /// (`BroadcastParts`).
    public var broadcast: [UInt8]?
    /// The orders as applied (after the change; removed orders as they were).
    public var applied: [Order] = []
    /// Harmless repeats (nothing applied).
    public var unchanged: [Order] = []
    /// Rejected orders with the reason.
    public var errors: [WireError] = []
    /// True when `opId` had been answered before and this is the remembered answer.
    public var isRepeat = false
    /// For a repeat: the refusals recorded the first time (already in the rejection log).
    public var repeatedErrors: [WireError] = []
    /// The operation.
    public var operation: OperationKind

    public init(operation: OperationKind) {
        self.operation = operation
    }
}

/// The master's sync logic, with no I/O: terminals' messages in, messages to send out. The
/// node feeds it what its sockets and timers produce and carries out the actions; the
/// simulation does the same with an in-memory network and store.
///
/// Per operation: plan it against the store, commit the changes and the journal entry in one
/// transaction, answer the sender (refusals, then the broadcast, then `result`) and broadcast
/// to every live terminal. On `hello`: exactly the missed journal entries, or a snapshot, then
/// `ready`.
public final class MasterEngine {
    /// Close codes the engine asks for (RFC 6455 7.4.1).
    public static let policyViolation: UInt16 = 1008
    public static let internalError: UInt16 = 1011
    /// A terminal that fell too far behind during its snapshot: it reconnects and starts again.
    public static let tryAgainLater: UInt16 = 1013

    public enum PeerPhase: Equatable, Sendable {
        /// An OrderSync slave: waiting for its `hello`.
        case awaitingHello
        /// Its snapshot is going out a part at a time (`pacesSnapshots`); what it must also
        /// receive meanwhile is held and follows the last part.
        case receivingSnapshot
        /// Receives broadcasts.
        case live
        /// Its link is being closed; nothing more is read from it or sent to it.
        case closing
    }

    /// One connected terminal as the engine knows it.
    public struct Peer: Sendable {
        public var id: Int
        public var address: String
        public var speaksOrderSync: Bool
        public var phase: PeerPhase
        /// The paired terminal its link proved to be (an OrderSync slave); nil for a StorePOS
        /// terminal. Its hello cannot change who it is.
        public var authenticated: AuthenticatedTerminal?
        /// The key of its token buckets (`MasterEngine.bucketKey(terminal:address:)`), made once
        /// when it connects: the rate limit reads it for every operation.
        public let bucketKey: String
        /// Who sent an operation, for the journal (`MasterEngine.origin(of:address:)`), made once
        /// when it connects: built per operation it cost about 24,000 instructions, twice.
        public let origin: String
        /// The authenticated node id (nil for a StorePOS terminal).
        public var terminalId: String? { authenticated?.nodeId }
        /// The paired name (nil for a StorePOS terminal).
        public var terminalName: String? { authenticated?.name }
        /// The last sequence it said it applied (hello, then acks).
        public var ackedSeq: Int64?
        /// The changes its outbox holds, as it last said (hello, then acks); nil until it says.
        public var outbox: Int?
        /// The highest seq its standby copy holds on disk, as its last ack said (`held`); nil until then.
        public var held: Int64?
        /// The seq this link's copy starts after: the snapshot's sent to it, or the hello's
        /// `lastSeq` for a catch-up. At or below it the copy may hold a write only as orders,
        /// which a `diverged` cannot re-queue (Docs/PROTOCOL.md 7.19), so `held` vouches only
        /// for the seqs above it (`Standby.holds`).
        public var copyFloor: Int64 = 0
        /// True when this link's copy came as a snapshot (at `copyFloor`), not a catch-up.
        public var copyIsSnapshot = false
        public var messagesIn = 0
        public var rejected = 0
        /// Whether its operations are let through (the rate limit).
        public var admission = Admission.admitting
        /// An OrderSync slave's wall clock against the master's (`MasterEngine+Clock.swift`).
        public var clock = ClockSkew()
        /// When its link opened (master's wall clock, ms); nil when the caller did not say
        /// (`MasterEngine+HeldCopies.swift`).
        public var connectedMillis: Int64?
    }

    public enum Action: Equatable, Sendable {
        /// Send `bytes` (one message, UTF-8 JSON text) to one terminal.
        case send(peer: Int, bytes: [UInt8])
        /// Send `bytes` (one message, UTF-8 JSON text) to these terminals (the live ones), in
        /// this order.
        case broadcast(bytes: [UInt8], peers: [Int])
        /// Close the terminal's link with this code.
        case close(peer: Int, code: UInt16, reason: String)
        case log(EngineLog)
        /// A terminal follows a newer term: the node stops taking writes and plays slave (PROTOCOL 7.1).
        case stepDown(term: Int64)
    }

    public let store: any MasterStore
    public let storeId: String
    public let epoch: String
    /// Settable inside the module only, so the simulation's self-checks can make the engine skip
    /// a sequence number (`@testable import`); nothing else sets it.
    public internal(set) var lastSeq: Int64
    /// Settable inside the module, for the rate limit (`MasterEngine+RateLimit.swift`).
    public internal(set) var peers: [Int: Peer] = [:]
    /// Each StorePOS terminal's spacing (how far apart what it is sent about one order must be),
    /// by its id: kept beside `peers`, not in each `Peer`, since it changes on every broadcast,
    /// and changing it inside the `Peer` moved the whole `Peer` out of the dictionary and back
    /// (with its strings retained) once per terminal and operation.
    var storePOSSpacing: [Int: StorePOSSpacing] = [:]
    /// What the node tells the engine for head office's roll-up (`RollupFacts`).
    public var rollup = RollupFacts()
    /// Operations a terminal may send (see `MasterEngine+RateLimit.swift`).
    public var rateLimit = RateLimit.default
    /// The terminals' token buckets, by `bucketKey(for:)`; full ones are forgotten.
    var buckets: [String: TokenBucket] = [:]
    /// Bytes, snapshots and journal budget per terminal, and the refusals' log summary.
    public var limits = TerminalLimits()

    /// Orders per snapshot message.
    public var snapshotChunk = 500
    /// The empty Removes a StorePOS app's connect sequence puts after its Removes and after its
    /// Creates (`SnapshotStream`): 4 × 64, four times the worker threads iOS gives an app's
    /// dispatch queues, so no task of the app's queue can still wait to start when a task 256
    /// places later runs (`Docs/PROTOCOL.md` 4.2.1).
    public var storePOSFence = 256
    /// When true, a snapshot goes out only a part at a time as the shell asks for it
    /// (`snapshotDue(for:)`, when the terminal's send buffer has room); when false, every part
    /// at once (the simulation, tests).
    public var pacesSnapshots = false
    /// The most bytes held for a terminal while its snapshot goes out; beyond, its link is
    /// closed (`tryAgainLater`) and it gets a fresh snapshot when it reconnects.
    public var maxHeldSnapshotBytes = 8 << 20
    /// Snapshots going out, by terminal (see `MasterEngine+Snapshot.swift`).
    var snapshots: [Int: SnapshotStream] = [:]
    /// The orders last read for a snapshot and the sequence they stand at: terminals joining
    /// at the same sequence share one read (and, copy-on-write, one array).
    var snapshotRead: SnapshotRead?
    /// Opens a paged read of the orders at a sequence (the node's: read off its loop, a page
    /// at a time); nil: a snapshot reads every order at once (`MasterStore.allOrders()`).
    public var pagedSnapshots: ((Int64) throws -> any SnapshotPages)?
    /// Most journal entries sent to catch a terminal up; further behind, a snapshot is cheaper.
    public var maxCatchUpEntries = 10_000
    /// Most bytes of journal entries sent at once to catch a terminal up: beyond, it gets the
    /// paced snapshot instead (half the default per-connection send cap, so a catch-up never
    /// overflows its link and is never replayed forever).
    public var maxCatchUpBytes = 8 << 20
    /// A broadcast that encodes to more than this goes out in parts of at most this many bytes
    /// (`BroadcastParts`), live and in catch-up.
    public var broadcastPartBytes = BroadcastParts.defaultPartBytes
    /// The most an operation's broadcast may encode to: an operation that would grow into more
    /// is refused as a whole (`too_large`) before anything is stored. The planner's own limits
    /// (`OperationPlanner.maxOrdersPerMessage` orders of at most `OperationPlanner.maxOrderBytes`)
    /// keep broadcasts under it; this holds whatever those limits become.
    public var maxBroadcastBytes = 16 << 20
    /// Terminals not heard from for this long are forgotten (they get a snapshot if they come
    /// back), so one lost terminal does not keep tombstones and journal for ever.
    public var terminalHorizonMillis: Int64 = 30 * 24 * 3600 * 1000
    /// Journal entries younger than this are kept (operators' history), whatever else holds.
    public var journalKeepMillis: Int64 = 30 * 24 * 3600 * 1000
    /// The newest entries kept for catch-up and history, whatever their age.
    public var journalKeepNewest: Int64 = 100_000
    /// While true, every operation applied is noted in `groupApplied` (the node commits many
    /// operations in one transaction; see `MasterEngine+Group.swift`).
    public var recordsGroup = false
    /// Whether each applied operation is logged (`op.applied`, a debug record): the node turns
    /// it off when its log level would drop it anyway, so the hot path does not build it.
    public var logsEachOperation = true
    /// Operations refused since start, by code (each order refused counts once): the node's
    /// metrics read it.
    public internal(set) var refusals: [WireErrorCode: Int] = [:]
    /// While true, broadcasts go to OrderSync terminals only (orders adopted from StorePOS apps,
    /// `MasterEngine+ForeignOrders.swift`).
    var withholdsFromStorePOS = false
    /// The operations applied since the group began (`recordsGroup`).
    public internal(set) var groupApplied: [GroupedOperation] = []
    /// The master's term and its lineage's term starts, read from the store (`Docs/PROTOCOL.md` 7.1).
    public var terms: MasterTerms
    /// The store's members and settings as the node last gave them (`membersChanged(_:)`).
    public internal(set) var members: StoreMembers? {
        didSet { voters = MemberVoters(members) }
    }
    /// The voter flags and count the members give, worked out once each time they change: every
    /// group reads them for each standby (`standbys`, the stable seq).
    public internal(set) var voters = MemberVoters(nil)

    public init(store: any MasterStore, storeId: String, epoch: String) throws {
        self.store = store
        self.storeId = storeId
        self.epoch = epoch
        self.lastSeq = try store.lastJournalSeq()
        self.terms = try store.masterTerms()
    }

    /// The live terminals, in connection order.
    public var livePeers: [Int] { peers.values.filter { $0.phase == .live }.map(\.id).sorted() }

    // MARK: Events

    /// A terminal is connected: an OrderSync slave once its secure link proved it is the
    /// paired `terminal` (it says hello next), a StorePOS terminal (`terminal` nil) once its
    /// How the journal names a terminal's operations: `till-2 [ABCD-EFGH]@10.0.0.3:5555`, or a StorePOS terminal's address.
    public static func origin(of terminal: AuthenticatedTerminal?, address: String) -> String {
        terminal.map { "\($0.label)@\(address)" } ?? address
    }

    /// WebSocket opened; a StorePOS terminal sends no hello: it gets the snapshot at once.
    /// `now`: the master's wall clock (ms) as the link opened.
    public func peerConnected(_ id: Int, address: String, terminal: AuthenticatedTerminal?, now: Int64? = nil) -> [Action] {
        let speaksOrderSync = terminal != nil
        peers[id] = Peer(
            id: id, address: address, speaksOrderSync: speaksOrderSync,
            phase: speaksOrderSync ? .awaitingHello : .live, authenticated: terminal,
            bucketKey: Self.bucketKey(terminal: terminal?.nodeId, address: address),
            origin: Self.origin(of: terminal, address: address), connectedMillis: now)
        guard !speaksOrderSync else { return [] }
        storePOSSpacing[id] = StorePOSSpacing(distance: storePOSFence)
        var out: [Action] = []
        sendSnapshot(to: id, &out)
        return route(out)
    }

    /// The paired terminal `nodeId` was revoked: each of its links is closed (1008 `revoked`)
    /// and forgotten at once, without recording how far it got (its record goes with it).
    public func revoked(terminal nodeId: String) -> [Action] {
        var out: [Action] = []
        for p in peers.values.sorted(by: { $0.id < $1.id }) where p.terminalId == nodeId {
            peers[p.id] = nil
            endSnapshot(of: p.id)
            out.append(.close(peer: p.id, code: MasterEngine.policyViolation, reason: "revoked"))
        }
        return out
    }

    /// A terminal's link ended.
    public func peerDisconnected(_ id: Int, now: Int64) -> [Action] {
        guard let p = peers.removeValue(forKey: id) else { return [] }
        storePOSSpacing[id] = nil
        limits.refusedHellos.remove(id)
        endSnapshot(of: id)
        var out: [Action] = []
        // One that left before its hello did not say how far it got: what was saved stands.
        if p.phase != .awaitingHello { remember([p], now: now, &out) }
        return out
    }

    /// A message from a terminal: the payload of a text frame (or of a sealed secure message),
    /// as received. `now` is wall-clock milliseconds (journal timestamps and the default
    /// `created`; never used to order anything).
    public func received(_ bytes: [UInt8], from id: Int, now: Int64) -> [Action] {
        guard var p = peers[id], p.phase != .closing, !limits.refusedHellos.contains(id) else { return [] }
        p.messagesIn += 1
        peers[id] = p
        var out: [Action] = []
        switch ClientMessage.decode(bytes) {
        case .failure(let e):
            reject(e, opId: nil, operation: nil, to: id, now: now, &out)
        case .success(.hello(let hello)):
            self.hello(hello, from: id, now: now, &out)
            if let t = hello.time { clockSaid(hello: t, from: id, now: now, &out) }
        case .success(.ack(let seq, let outbox, let held, let clock)):
            peers[id]?.ackedSeq = min(max(0, seq), lastSeq)
            if let n = outbox { peers[id]?.outbox = n }
            if let h = held { peers[id]?.held = min(h, lastSeq) }
            if let c = clock { clockAnswered(c, from: id, now: now, &out) }
        case .success(.operation(let message)):
            if p.phase == .awaitingHello {
                reject(
                    WireError(.invalidMessage, "send hello first (subprotocol \(orderSyncSubprotocol))"), opId: message.opId,
                    operation: message.operation, to: id, now: now, &out)
                break
            }
            guard admit(message, bytes: bytes.count, from: id, now: now, &out) else { break }
            let outcome = apply(message, origin: p.origin, now: now)
            chargeJournal(outcome, from: id, now: now)
            deliver(outcome, message: message, origin: p.origin, sender: id, now: now, &out)
        }
        return route(out)
    }

    /// A write through the master's own local API. With `ackNow`, its broadcast asks the
    /// OrderSync slaves to ack at once (`MasterEngine+Standbys.swift`).
    public func localWrite(_ message: OperationMessage, origin: String, now: Int64, ackNow: Bool = false) -> (ApplyOutcome, [Action]) {
        var out: [Action] = []
        let outcome = apply(message, origin: origin, now: now)
        deliver(outcome, message: message, origin: origin, sender: nil, now: now, &out)
        if ackNow { markAckNow(&out) }
        return (outcome, route(out))
    }

    /// Periodic housekeeping: persists what is known of live terminals, forgets terminals past
    /// the horizon, and compacts tombstones and the journal up to what every known terminal
    /// has acknowledged.
    public func maintenance(now: Int64) -> [Action] {
        var out: [Action] = []
        let live = peers.values.filter { $0.terminalId != nil && $0.phase == .live }.sorted { $0.id < $1.id }
        remember(live, now: now, &out)
        forgetFullBuckets(now: now)
        refusalSummaries(now: now, &out)
        do {
            try store.forgetTerminals(lastSeenBefore: now - terminalHorizonMillis)
            let known = try store.knownTerminals()
            // A connected terminal's ack in memory may be newer than the saved one, never older.
            let passed = min(known.map(\.ackedSeq).min() ?? lastSeq, lastSeq)
            let tombstones = try store.compactTombstones(through: passed)
            if tombstones > 0 { out.append(.log(EngineLog(.debug, "tombstones.compacted", [("count", "\(tombstones)")]))) }
            // A journal entry leaves only when every known terminal has applied it (then no
            // outbox still holds its operation: a slave drops an outbox entry in the same
            // transaction as applying the broadcast that carries its id), when it is older than
            // the history horizon, and when it is not among the newest kept for catch-up.
            let through = rollup.compactionLimit(min(passed, lastSeq - journalKeepNewest), lastSeq: lastSeq)
            if through > 0 {
                let dropped = try store.compactJournal(through: through, recordedBefore: now - journalKeepMillis)
                if dropped > 0 {
                    out.append(.log(EngineLog(.info, "journal.compacted", [("count", "\(dropped)"), ("through", "\(through)")])))
                }
            }
        } catch {
            out.append(.log(EngineLog(.error, "maintenance.failed", [("error", "\(error)")])))
        }
        return out
    }

    // MARK: Applying operations

    /// Applies `message` from `origin`. Storage failures turn every planned change into a
    /// `storage_failed` error; nothing is half-applied.
    public func apply(_ message: OperationMessage, origin: String, now: Int64) -> ApplyOutcome {
        var outcome = ApplyOutcome(operation: message.operation)
        if let id = message.opId {
            do {
                if let repeated = try repeatOutcome(of: message, opId: id) { return repeated }
            } catch {
                outcome.errors = [WireError(.storageFailed, "could not read the journal: \(error)")]
                return outcome
            }
        }
        let plan: OperationPlan
        do {
            plan = try OperationPlanner.plan(
                message, now: OrderTimestamp(epochMillis: now), lookup: { try store.order(uuid: $0) },
                wasRemoved: { try store.hasTombstone(uuid: $0) })
        } catch {
            outcome.errors = [WireError(.storageFailed, "could not read orders: \(error)")]
            return outcome
        }
        outcome.unchanged = plan.unchanged
        outcome.errors = plan.errors
        guard !plan.changes.isEmpty else { return outcome }
        let seq = lastSeq + 1
        let orders = plan.changes.map(\.order)
        let text = ServerMessage.appliedBytes(
            operation: message.operation, orders: orders, seq: seq, opId: message.opId, origin: origin, term: terms.term)
        let bytes = text.count
        guard bytes <= maxBroadcastBytes else {
            // Refused as a whole, before anything is stored: no terminal could be sent it.
            outcome.errors = [
                WireError(
                    .tooLarge,
                    "this operation would be broadcast as \(bytes) bytes of JSON; at most \(maxBroadcastBytes) are accepted: send fewer orders per message"
                )
            ]
            return outcome
        }
        let entry = JournalEntry(
            seq: seq, term: terms.term, opId: message.opId, origin: origin, operation: message.operation,
            orderUUIDs: orders.map(\.uuid), message: text, recordedAtMillis: now)
        do {
            try store.commit(plan.changes, entry: entry)
        } catch {
            // The transaction rolled back, or reached the disk although reported as failed:
            // read the sequence again. A retry of the same operation id then finds the entry.
            lastSeq = (try? store.lastJournalSeq()) ?? lastSeq
            outcome.errors =
                plan.errors + orders.map { WireError(.storageFailed, "the master could not store the change: \(error)", uuid: $0.uuid) }
            return outcome
        }
        lastSeq = seq
        outcome.seq = seq
        outcome.broadcast = text
        outcome.applied = orders
        return outcome
    }
}
