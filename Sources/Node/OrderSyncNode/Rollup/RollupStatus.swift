import Foundation
import JSON

/// What a roll-up reports of itself (`ordersync rollup status`, `ordersync status` under
/// `rollup`, the metrics): one value, many views. The running roll-up writes it to
/// `DATADIR/rollup.state.json` (atomically: a new file renamed over the old) after each batch
/// and each error.
public struct RollupStatus: Sendable {
    /// The file's name in the data directory.
    public static let fileName = "rollup.state.json"

    public var running: Bool
    public var pid: Int32
    public var storeId: String
    public var lineage: String
    /// Head office's checkpoint and when this roll-up last moved it (ms since 1970).
    public var checkpointSeq: Int64
    public var checkpointAtMillis: Int64?
    public var stableSeq: Int64
    public var localLastSeq: Int64
    /// Entries not yet at head office (up to the local journal's last), and the age of the
    /// oldest of them in seconds (0 when none waits).
    public var lagEntries: Int64
    public var lagSeconds: Double
    /// The current failure: code, message and when; nil once the roll-up recovered from it
    /// (`recovered(atMillis:)`), so that status reads as healthy while it is.
    public var lastError: (code: String, message: String, atMillis: Int64)?
    /// The failure recovered from most recently, and when it was over (history: what the link
    /// went through, not what it is doing).
    public var previousError: (code: String, message: String, atMillis: Int64, clearedAtMillis: Int64)?
    /// `shipping`, `idle`, `backoff`, `conflict` or `gap`.
    public var state: String
    /// True while connected to head office.
    public var up: Bool
    /// Counters since the process started.
    public var batches: Int64 = 0
    public var entries: Int64 = 0
    public var conflicts: Int64 = 0
    public var errors: [String: Int64] = [:]

    /// The state file's JSON.
    public var json: JSONObject {
        var o = JSONObject()
        o["running"] = .bool(running)
        o["pid"] = .int(Int64(pid))
        o["storeId"] = .string(storeId)
        o["lineage"] = .string(lineage)
        var c = JSONObject()
        c["seq"] = .int(checkpointSeq)
        c["at"] = checkpointAtMillis.map { .string(Self.iso($0)) } ?? .null
        o["checkpoint"] = .object(c)
        o["stableSeq"] = .int(stableSeq)
        o["localLastSeq"] = .int(localLastSeq)
        var lag = JSONObject()
        lag["entries"] = .int(lagEntries)
        lag["seconds"] = .double(lagSeconds)
        o["lag"] = .object(lag)
        if let e = lastError {
            var err = JSONObject()
            err["code"] = .string(e.code)
            err["message"] = .string(e.message)
            err["at"] = .string(Self.iso(e.atMillis))
            o["lastError"] = .object(err)
        } else {
            o["lastError"] = .null
        }
        if let e = previousError {
            var err = JSONObject()
            err["code"] = .string(e.code)
            err["message"] = .string(e.message)
            err["at"] = .string(Self.iso(e.atMillis))
            err["clearedAt"] = .string(Self.iso(e.clearedAtMillis))
            o["previousError"] = .object(err)
        } else {
            o["previousError"] = .null
        }
        o["state"] = .string(state)
        return o
    }

    /// The roll-up works again (a batch committed, or everything shipped after a fresh look at
    /// head office and the journal): the current error, if any, becomes `previousError`.
    public mutating func recovered(atMillis now: Int64) {
        guard let e = lastError else { return }
        previousError = (e.code, e.message, e.atMillis, now)
        lastError = nil
    }

    /// RFC 3339 UTC with milliseconds.
    static func iso(_ millis: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(millis) / 1000))
    }

    /// Writes the state file of `dataDirectory` atomically; a failure is returned, not thrown
    /// (the roll-up goes on without it).
    func write(to dataDirectory: String) -> Error? {
        let path = (dataDirectory as NSString).appendingPathComponent(Self.fileName)
        do {
            try Data(JSONValue.object(json).serializedBytes()).write(to: URL(fileURLWithPath: path), options: .atomic)
            return nil
        } catch {
            return error
        }
    }

    /// The state file of `dataDirectory` as JSON, with `running` corrected to false when its
    /// process is gone (killed before it could say so); nil when there is no file.
    public static func read(dataDirectory: String) throws -> JSONObject? {
        let path = (dataDirectory as NSString).appendingPathComponent(fileName)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        guard var o = try JSONParser.parse(Array(data)).objectValue else { return nil }
        if o["running"] == .bool(true), let pid = o["pid"]?.intValue, kill(pid_t(pid), 0) != 0, errno == ESRCH {
            o["running"] = .bool(false)
        }
        return o
    }

    /// The Prometheus text of the metrics (Docs/OPERATIONS.md, "Roll-up into head office").
    var metricsText: String {
        var lines: [String] = []
        func gauge(_ name: String, _ help: String, _ value: String, type: String = "gauge") {
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) \(type)")
            lines.append("\(name) \(value)")
        }
        gauge("ordersync_rollup_lag_entries", "Journal entries not yet at head office.", "\(lagEntries)")
        gauge("ordersync_rollup_lag_seconds", "Age of the oldest entry not yet at head office.", "\(lagSeconds)")
        gauge("ordersync_rollup_checkpoint_seq", "Head office's checkpoint for this store and lineage.", "\(checkpointSeq)")
        gauge("ordersync_rollup_batches_total", "Batches committed at head office.", "\(batches)", type: "counter")
        gauge("ordersync_rollup_entries_total", "Journal entries committed at head office.", "\(entries)", type: "counter")
        lines.append("# HELP ordersync_rollup_errors_total Failures, by code.")
        lines.append("# TYPE ordersync_rollup_errors_total counter")
        for code in ["config", "unreachable", "query", "local"] {
            lines.append("ordersync_rollup_errors_total{code=\"\(code)\"} \(errors[code] ?? 0)")
        }
        gauge("ordersync_rollup_conflicts_total", "Conflicts found at head office.", "\(conflicts)", type: "counter")
        gauge("ordersync_rollup_up", "1 while connected to head office.", up ? "1" : "0")
        lines.append("# HELP ordersync_rollup_state 1 for the roll-up's state (status `state`), 0 for the others.")
        lines.append("# TYPE ordersync_rollup_state gauge")
        for name in ["shipping", "idle", "backoff", "conflict", "gap"] {
            lines.append("ordersync_rollup_state{state=\"\(name)\"} \(state == name ? 1 : 0)")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
