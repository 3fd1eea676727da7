import JSON
import PostgresClient
import RollupCore

/// `ordersync rollup verify`: walks head office's rows of this store and lineage from seq 1 to
/// its checkpoint, recomputing each row's hash from its columns and the rolling chain, and
/// compares them with the entries the local journal still holds; also that no row lies beyond
/// the checkpoint.
public enum RollupVerify {
    /// Rows read per round trip.
    static let chunk = 2000

    /// The answer's JSON and the exit status: `{"equal":true,"seq":N,"rolling":"…"}` (0) or
    /// `{"equal":false,"firstDifferentSeq":N,"reason":"…"}` (1); a failure to read either side
    /// is `{"error":…}` with 69 (head office unreachable) or 78.
    public static func run(dataDirectory: String, databaseURL: String) -> (JSONObject, RollupExit) {
        do {
            try PostgresConnection.validate(url: databaseURL)
            let local = try RollupLocalJournal(dataDirectory: dataDirectory)
            let office = try HeadOffice(url: databaseURL, storeId: local.identity.storeId, lineage: local.identity.lineage)
            defer { office.close() }
            return try compare(local: local, office: office)
        } catch let e as PostgresError {
            return (errorObject(e.description), e.kind == .configuration ? .configuration : .unreachable)
        } catch let f as RollupFailure {
            return (errorObject(f.description), f.code == "config" ? .configuration : .unreachable)
        } catch {
            return (errorObject("\(error)"), .unreachable)
        }
    }

    private static func compare(local: RollupLocalJournal, office: HeadOffice) throws -> (JSONObject, RollupExit) {
        let checkpoint = try office.existingCheckpoint()
        let last = checkpoint?.seq ?? 0
        var verifier = JournalVerifier(start: RollupHash.start(storeId: local.identity.storeId, lineage: local.identity.lineage))
        var after: Int64 = 0
        while after < last && !verifier.foundDifference {
            let rows = try office.journalRows(after: after, through: last, limit: chunk)
            guard let lastRow = rows.last?.entry.seq else { break }
            var localHashes: [Int64: [UInt8]] = [:]
            for e in try local.entries(after: after, through: lastRow, limit: Int(lastRow - after)) {
                localHashes[e.seq] = RollupHash.entry(e)
            }
            for row in rows {
                verifier.check(
                    JournalVerifier.HeadRow(
                        seq: row.entry.seq, contentHash: RollupHash.entry(row.entry), storedHash: row.hash, storedRolling: row.rolling),
                    localHash: localHashes[row.entry.seq])
            }
            after = lastRow
        }
        let above = try office.firstRow(above: last)
        var o = JSONObject()
        switch verifier.verdict(checkpointSeq: checkpoint?.seq, checkpointRolling: checkpoint?.rolling, rowAboveCheckpoint: above) {
        case .equal(let seq, let rolling):
            o["equal"] = .bool(true)
            o["seq"] = .int(seq)
            o["rolling"] = .string(RollupHash.hex(rolling))
            return (o, .ok)
        case .different(let seq, let reason):
            o["equal"] = .bool(false)
            o["firstDifferentSeq"] = .int(seq)
            o["reason"] = .string(reason)
            return (o, .different)
        }
    }

    private static func errorObject(_ message: String) -> JSONObject {
        var o = JSONObject()
        o["error"] = .string(message)
        return o
    }
}
