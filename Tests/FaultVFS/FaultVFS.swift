internal import CFaultVFS

/// The fault-injecting SQLite VFS of the tests (Tests/CFaultVFS), from Swift.
///
/// Installed, it is SQLite's default VFS for the whole test process, so every store a test
/// opens (and every node it starts) goes through it without a change to the product. It keeps,
/// per file, the writes since that file's last `xSync`; `powerCut(under:_:)` drops or tears
/// them for one simulated machine (a directory prefix) and kills its open handles. Armed rules
/// make chosen writes, syncs or truncates fail with EIO or ENOSPC, or make a sync lie.
///
/// The state is process-wide: a test installs and resets it in `setUp`, and uninstalls it in
/// `tearDown` (XCTest runs the tests of a process one at a time).
public enum FaultVFS {
    /// What happens to the writes a power cut finds unsynced.
    public enum PowerLoss: Sendable {
        /// All of them are undone.
        case drop
        /// Each 512-byte sector keeps its new content or gets its old one back, as the seed
        /// (`setSeed`) chooses: SQLite's torn page.
        case tear

        var mode: Int32 {
            switch self {
            case .drop: Int32(ORDERSYNC_POWER_DROP.rawValue)
            case .tear: Int32(ORDERSYNC_POWER_TEAR.rawValue)
            }
        }
    }

    /// What an armed rule does to the calls it matches.
    public enum Fault: Sendable {
        /// Fails with SQLITE_IOERR (errno EIO).
        case eio
        /// Fails with SQLITE_FULL (errno ENOSPC).
        case enospc
        /// A sync returns success and makes nothing durable.
        case lyingSync
        /// The power of the rule's prefix goes off just before the call, which fails with EIO.
        case powerCut(PowerLoss)

        var kind: Int32 {
            switch self {
            case .eio: Int32(ORDERSYNC_FAULT_EIO.rawValue)
            case .enospc: Int32(ORDERSYNC_FAULT_ENOSPC.rawValue)
            case .lyingSync: Int32(ORDERSYNC_FAULT_LYING_SYNC.rawValue)
            case .powerCut(.drop): Int32(ORDERSYNC_FAULT_POWER_CUT_DROP.rawValue)
            case .powerCut(.tear): Int32(ORDERSYNC_FAULT_POWER_CUT_TEAR.rawValue)
            }
        }
    }

    /// The calls a rule counts.
    public struct Calls: OptionSet, Sendable {
        /// The `ORDERSYNC_FAULT_ON_*` bits.
        public let rawValue: Int32
        /// The calls of `rawValue`'s bits.
        public init(rawValue: Int32) { self.rawValue = rawValue }
        /// `xWrite`.
        public static let write = Calls(rawValue: Int32(ORDERSYNC_FAULT_ON_WRITE))
        /// `xSync`.
        public static let sync = Calls(rawValue: Int32(ORDERSYNC_FAULT_ON_SYNC))
        /// `xTruncate`.
        public static let truncate = Calls(rawValue: Int32(ORDERSYNC_FAULT_ON_TRUNCATE))
    }

    /// What the VFS has seen and done since the last `reset()`.
    public struct Counters: Sendable, Equatable, CustomStringConvertible {
        /// `xWrite` calls.
        public var writes: Int64
        /// `xSync` calls.
        public var syncs: Int64
        /// `xTruncate` calls.
        public var truncates: Int64
        /// Calls failed (or synced falsely) by an armed rule.
        public var faultsInjected: Int64
        /// Power cuts (`powerCut(under:_:)` and armed ones).
        public var powerCuts: Int64
        /// Process deaths (`kill(under:)`).
        public var kills: Int64
        /// Files whose unsynced writes a power cut undid.
        public var filesReverted: Int64
        /// Bytes a power cut put back to their synced content.
        public var bytesReverted: Int64
        /// Calls refused because their handle's machine lost power.
        public var deadCalls: Int64

        /// All zero.
        public init() {
            self.init(
                writes: 0, syncs: 0, truncates: 0, faultsInjected: 0, powerCuts: 0, kills: 0, filesReverted: 0,
                bytesReverted: 0, deadCalls: 0)
        }

        /// Counters with these values.
        init(
            writes: Int64, syncs: Int64, truncates: Int64, faultsInjected: Int64, powerCuts: Int64, kills: Int64,
            filesReverted: Int64, bytesReverted: Int64, deadCalls: Int64
        ) {
            self.writes = writes
            self.syncs = syncs
            self.truncates = truncates
            self.faultsInjected = faultsInjected
            self.powerCuts = powerCuts
            self.kills = kills
            self.filesReverted = filesReverted
            self.bytesReverted = bytesReverted
            self.deadCalls = deadCalls
        }

        /// Adds another run's counters.
        public mutating func add(_ o: Counters) {
            writes += o.writes
            syncs += o.syncs
            truncates += o.truncates
            faultsInjected += o.faultsInjected
            powerCuts += o.powerCuts
            kills += o.kills
            filesReverted += o.filesReverted
            bytesReverted += o.bytesReverted
            deadCalls += o.deadCalls
        }

        /// One line, `name=value` pairs, for `FIGURE` lines.
        public var description: String {
            "writes=\(writes) syncs=\(syncs) truncates=\(truncates) faults_injected=\(faultsInjected) "
                + "power_cuts=\(powerCuts) kills=\(kills) files_reverted=\(filesReverted) bytes_reverted=\(bytesReverted) "
                + "dead_calls=\(deadCalls)"
        }
    }

    /// `prefix` as SQLite spells paths (its xFullPathname collapses "//", which
    /// `NSTemporaryDirectory() + "/..."` makes).
    static func canonical(_ prefix: String) -> String {
        var text = ""
        for c in prefix where !(c == "/" && text.last == "/") { text.append(c) }
        return text
    }

    /// Registers the VFS as SQLite's default.
    public static func install() {
        let rc = ordersync_fault_vfs_install()
        precondition(rc == 0, "sqlite3_vfs_register failed: \(rc)")
    }

    /// Makes "unix" SQLite's default VFS again.
    public static func uninstall() { ordersync_fault_vfs_uninstall() }

    /// Forgets rules, undo logs and counters; every machine is on.
    public static func reset() { ordersync_fault_vfs_reset() }

    /// Arms `fault` for the `nth` call among `calls` on files under `prefix`, and the
    /// `count - 1` matching calls after it (`count` below zero: all of them). Returns the
    /// rule's number.
    @discardableResult
    public static func arm(_ fault: Fault, on calls: Calls, under prefix: String, nth: Int = 1, count: Int = 1) -> Int {
        Int(ordersync_fault_vfs_arm(canonical(prefix), calls.rawValue, Int32(nth), fault.kind, Int32(count)))
    }

    /// Removes every armed rule.
    public static func disarm() { ordersync_fault_vfs_disarm() }

    /// The seed deciding which sectors a torn power cut keeps.
    public static func setSeed(_ seed: UInt64) { ordersync_fault_vfs_set_seed(seed) }

    /// Cuts the power of the machine whose files are under `prefix`; returns the number of
    /// files whose unsynced writes were undone. Close every store that was open there before
    /// `powerOn(under:)`.
    @discardableResult
    public static func powerCut(under prefix: String, _ loss: PowerLoss) -> Int {
        Int(ordersync_fault_vfs_power_cut(canonical(prefix), loss.mode))
    }

    /// The process whose files are under `prefix` dies (SIGKILL): its handles are dead, the
    /// kernel's page cache keeps every write. Close its stores, then `powerOn(under:)`.
    public static func kill(under prefix: String) {
        ordersync_fault_vfs_power_cut(canonical(prefix), Int32(ORDERSYNC_PROCESS_KILL.rawValue))
    }

    /// Syncs stop calling fsync (the VFS still counts the files as synced): for runs that
    /// check the VFS's model of the disk and need speed. `reset()` turns fsync back on.
    public static func skipRealSync(_ skip: Bool) { ordersync_fault_vfs_skip_real_sync(skip ? 1 : 0) }

    /// Turns the machine back on (its -shm files are gone); returns how many handles of the
    /// machine from before the cut are still open (0 unless a test forgot to close a store).
    @discardableResult
    public static func powerOn(under prefix: String) -> Int {
        Int(ordersync_fault_vfs_power_on(canonical(prefix)))
    }

    /// Bytes written under `prefix` since their file's last sync.
    public static func unsyncedBytes(under prefix: String) -> Int64 {
        ordersync_fault_vfs_unsynced_bytes(canonical(prefix))
    }

    /// The counters since the last `reset()`.
    public static var counters: Counters {
        let c = ordersync_fault_vfs_get_counters()
        return Counters(
            writes: c.writes, syncs: c.syncs, truncates: c.truncates, faultsInjected: c.faults_injected,
            powerCuts: c.power_cuts, kills: c.kills, filesReverted: c.files_reverted, bytesReverted: c.bytes_reverted,
            deadCalls: c.dead_calls)
    }
}
