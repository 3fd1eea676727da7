/// The cost of handshakes per source address, as the log shows it: the first few failures of
/// an address in an interval are logged in full, later ones only counted, and one summary line
/// per address per interval gives the counts (`peer.handshake_summary`), instead of a line per
/// handshake. Pure: the caller asks for the summaries once per interval.
public struct HandshakeLedger: Sendable {
    /// What one address cost since its last summary.
    public struct Counts: Equatable, Sendable {
        /// Secure handshakes started (each one the X25519 work of a first message).
        public var started = 0
        /// Of those, authenticated.
        public var succeeded = 0
        /// Of those, failed, refused, timed out or abandoned by the peer.
        public var failed = 0
        /// Connections refused before any handshake work (over the rate or the address's caps,
        /// evicted before authenticating, a client the master does not admit, an upgrade refused
        /// or not finished in time).
        public var refused = 0
        /// Failures and refusals counted without a line of their own.
        public var unlogged = 0

        /// A ledger entry with nothing counted.
        public init() {}

        /// Whether the address failed or was refused: worth a summary line.
        public var isNoteworthy: Bool { failed > 0 || refused > 0 }
    }

    /// One address's summary.
    public struct Summary: Equatable, Sendable {
        /// The source address (host part).
        public var host: String
        /// What it cost since its previous summary.
        public var counts: Counts
    }

    /// Failure lines logged in full per address and interval; beyond, failures are counted.
    public let linesPerInterval: Int
    private var entries: [String: Entry] = [:]

    private struct Entry: Sendable {
        var counts = Counts()
        var lines = 0
    }

    /// A ledger that logs `linesPerInterval` failures per address in full.
    public init(linesPerInterval: Int) {
        self.linesPerInterval = max(0, linesPerInterval)
    }

    /// Whether anything waits for a summary.
    public var isEmpty: Bool { entries.isEmpty }

    /// A secure handshake started for `host`.
    public mutating func started(_ host: String) {
        entries[host, default: Entry()].counts.started += 1
    }

    /// A handshake of `host` authenticated.
    public mutating func succeeded(_ host: String) {
        entries[host, default: Entry()].counts.succeeded += 1
    }

    /// A handshake of `host` failed or was abandoned.
    public mutating func failed(_ host: String) {
        entries[host, default: Entry()].counts.failed += 1
    }

    /// A connection of `host` refused before any handshake work.
    public mutating func refused(_ host: String) {
        entries[host, default: Entry()].counts.refused += 1
        entries[host, default: Entry()].counts.unlogged += 1
    }

    /// A connection of `host` refused before any handshake work that may have a line of its
    /// own: whether to log it in full (true while the address's allowance of full lines in
    /// this interval lasts; false: it is only counted, in the next summary).
    public mutating func refusedLogsInFull(_ host: String) -> Bool {
        entries[host, default: Entry()].counts.refused += 1
        return logsFailureInFull(host)
    }

    /// Whether a failure of `host` is logged in full (true while its interval's allowance
    /// lasts); false: it is only counted, in the next summary.
    public mutating func logsFailureInFull(_ host: String) -> Bool {
        var entry = entries[host, default: Entry()]
        defer { entries[host] = entry }
        guard entry.lines < linesPerInterval else {
            entry.counts.unlogged += 1
            return false
        }
        entry.lines += 1
        return true
    }

    /// The interval is over: the summaries of the addresses that failed or were refused (by
    /// address), and every count starts again.
    public mutating func endInterval() -> [Summary] {
        defer { entries = [:] }
        return entries.filter { $0.value.counts.isNoteworthy }.map { Summary(host: $0.key, counts: $0.value.counts) }
            .sorted { $0.host < $1.host }
    }
}
