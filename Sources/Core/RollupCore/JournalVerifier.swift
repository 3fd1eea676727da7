/// `ordersync rollup verify`'s comparison: head office's rows for one store and lineage, walked
/// in seq order from 1, against their own hashes, the rolling chain and the local journal. Pure:
/// the shell feeds rows in chunks and reads the verdict.
public struct JournalVerifier: Sendable {
    /// One head office row: its seq, the hash recomputed from its columns, and the hash and
    /// rolling hash it stores.
    public struct HeadRow: Equatable, Sendable {
        public var seq: Int64
        public var contentHash: [UInt8]
        public var storedHash: [UInt8]
        public var storedRolling: [UInt8]

        /// A row from its parts.
        public init(seq: Int64, contentHash: [UInt8], storedHash: [UInt8], storedRolling: [UInt8]) {
            self.seq = seq
            self.contentHash = contentHash
            self.storedHash = storedHash
            self.storedRolling = storedRolling
        }
    }

    /// The outcome.
    public enum Verdict: Equatable, Sendable {
        /// Head office holds exactly the journal up to `seq`, whose rolling hash is `rolling`.
        case equal(seq: Int64, rolling: [UInt8])
        /// The first entry that differs, and why.
        case different(seq: Int64, reason: String)
    }

    private var rolling: [UInt8]
    private var next: Int64 = 1
    private var difference: (seq: Int64, reason: String)?

    /// A walk from seq 1, starting from the lineage's start value (`RollupHash.start`).
    public init(start: [UInt8]) {
        rolling = start
    }

    /// The first difference found so far, if any (the walk can stop there).
    public var foundDifference: Bool { difference != nil }

    /// The next head office row (seq order), with the local journal's hash of the same seq when
    /// the local journal still holds it.
    public mutating func check(_ row: HeadRow, localHash: [UInt8]?) {
        guard difference == nil else { return }
        guard row.seq == next else {
            difference = (next, "head office has no row for seq \(next) (a gap before seq \(row.seq))")
            return
        }
        guard row.contentHash == row.storedHash else {
            difference = (row.seq, "head office's row does not match its own hash (its content was changed)")
            return
        }
        let expected = RollupHash.rolling(previous: rolling, hash: row.storedHash)
        guard expected == row.storedRolling else {
            difference = (row.seq, "head office's rolling hash does not follow from the rows before it")
            return
        }
        if let localHash, localHash != row.contentHash {
            difference = (row.seq, "head office's entry differs from the local journal's")
            return
        }
        rolling = expected
        next += 1
    }

    /// The verdict, given head office's checkpoint (`seq`, `rolling`; nil when it has none) and
    /// the lowest seq of a row above the checkpoint, if any.
    public func verdict(checkpointSeq: Int64?, checkpointRolling: [UInt8]?, rowAboveCheckpoint: Int64?) -> Verdict {
        if let d = difference { return .different(seq: d.seq, reason: d.reason) }
        let walked = next - 1
        let checkpoint = checkpointSeq ?? 0
        if let above = rowAboveCheckpoint {
            return .different(seq: above, reason: "head office holds seq \(above) beyond its checkpoint \(checkpoint)")
        }
        guard walked == checkpoint else {
            return .different(seq: walked + 1, reason: "head office's rows end at \(walked) but its checkpoint says \(checkpoint)")
        }
        if checkpoint > 0, checkpointRolling != rolling {
            return .different(seq: checkpoint, reason: "head office's checkpoint rolling hash differs from its rows'")
        }
        return .equal(seq: checkpoint, rolling: rolling)
    }
}
