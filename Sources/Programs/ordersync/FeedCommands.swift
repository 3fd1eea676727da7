import ArgumentParser
import Foundation
import JSON
import OrderSyncNode
import SyncCore

/// `ordersync watch`: follows the node's change feed (Docs/API.md, "Change feed").
struct WatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Follow the node's changes as they are applied (master or slave); Ctrl-C stops.",
        discussion:
            "Reads GET /v1/changes as server-sent events over the local API socket, reconnects when the stream drops and resumes after the last change seen. A cursor the node no longer covers exits 66 (resnapshot_required)."
    )

    @OptionGroup var data: DataDirOption
    @Option(name: .long, help: "Start after this change (its seq); 0 shows every change the node keeps.") var since: Int64?
    @Flag(name: .long, help: "Print each change as one JSON object per line.") var json = false

    func validate() throws {
        if let s = since, s < 0 { throw ValidationError("--since must be 0 or more.") }
    }

    func run() throws {
        let dir = try data.resolved()
        var start = since
        if start == nil {
            // From now on: a cursor past the end is refused with the feed's last seq.
            let r = try reportingFailures {
                try LocalAPIClient(dataDirectory: dir).send(method: "GET", path: "/v1/changes?since=\(Int64.max)")
            }
            guard r.status == 410, let last = r.body.objectValue?["error"]?.objectValue?["last"]?.intValue else {
                let e = LocalAPIClientError.answer(r)
                throw fail(e.description, ExitStatus.forClientError(e))
            }
            start = last
        }
        try reportingFailures {
            try ChangeFeedClient(dataDirectory: dir).follow(
                since: start ?? 0,
                onChange: { _, text in FileHandle.standardOutput.write(Data(((json ? text : Self.line(text)) + "\n").utf8)) },
                onReconnect: { why in FileHandle.standardError.write(Data("watch: \(why); reconnecting\n".utf8)) })
        }
    }

    /// `43  2026-11-25T15:00:00.123Z  create  by ORIGIN  uuid (name, status) ...`.
    static func line(_ text: String) -> String {
        guard let o = (try? JSONParser.parse(Array(text.utf8)))?.objectValue else { return text }
        var parts = ["\(o["seq"]?.intValue ?? 0)", o["at"]?.stringValue ?? "", o["operation"]?.stringValue ?? ""]
        if o["pending"] == .bool(true) { parts.append("pending") }
        if let outcome = o["outcome"]?.stringValue {
            parts.append(outcome)
            if let m = o["masterSeq"]?.intValue { parts.append("master #\(m)") }
            if let e = o["error"]?.objectValue {
                parts.append("\(e["code"]?.stringValue ?? ""): \(OrderText.quote(e["message"]?.stringValue ?? ""))")
            }
        } else if let m = o["masterSeq"]?.intValue {
            parts.append("master #\(m)")
        }
        if let origin = o["origin"]?.stringValue { parts.append("by \(OrderText.quote(origin))") }
        if let opId = o["opId"]?.stringValue { parts.append("op \(opId)") }
        for order in (o["orders"]?.arrayValue ?? []).compactMap(\.objectValue) {
            let uuid = order["uuid"]?.stringValue ?? "?"
            if order["removed"] == .bool(true) {
                parts.append("\(uuid) (removed)")
            } else {
                let name = order["customerName"]?.stringValue ?? ""
                parts.append(
                    "\(uuid) (\(OrderText.quote(name)), \(order["status"]?.stringValue ?? ""), v\(order["version"]?.intValue ?? 0))")
            }
        }
        return parts.filter { !$0.isEmpty }.joined(separator: "  ")
    }
}

/// `ordersync export`: orders for accounting, streamed from the master's store.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export the master's orders as CSV or JSON for accounting (read-only; works with the master running or stopped).",
        discussion:
            "CSV follows RFC 4180 (UTF-8, CRLF, a header row). Money is given in minor units (total_cents) and formatted with two decimals (total). --from is inclusive, --to exclusive, both on the order's created time."
    )

    @OptionGroup var data: DataDirOption
    @Option(name: .long, help: "csv, json (one array) or ndjson (one object per line).") var format: OrderExporter.Format = .csv
    @Option(name: .long, help: "Only orders created at or after this time (RFC 3339, or YYYY-MM-DD in UTC).") var from: String?
    @Option(name: .long, help: "Only orders created before this time (RFC 3339, or YYYY-MM-DD in UTC).") var to: String?
    @Option(name: .long, help: "Only orders with this status.") var status: OrderStatus?
    @Flag(name: .long, help: "CSV: one row per line item instead of one per order.") var items = false
    @Option(name: .long, help: "Write to this file (replaced once complete) instead of standard output.") var output: String?

    func validate() throws {
        if let f = from, Self.millis(f) == nil { throw ValidationError("--from '\(f)' is not a time (RFC 3339 or YYYY-MM-DD).") }
        if let t = to, Self.millis(t) == nil { throw ValidationError("--to '\(t)' is not a time (RFC 3339 or YYYY-MM-DD).") }
        if items, format != .csv { throw ValidationError("--items applies to --format csv (JSON carries the items in each order).") }
    }

    /// RFC 3339 (or the StorePOS form), or a plain date taken as midnight UTC.
    static func millis(_ text: String) -> Int64? {
        if let t = OrderTimestamp(parsing: text) { return t.epochMillis }
        if text.count == 10, let t = OrderTimestamp(parsing: text + "T00:00:00Z") { return t.epochMillis }
        return nil
    }

    func run() throws {
        do { try export() } catch let e as ExportWriteError { throw fail(e.description, .storageFailure) }
    }

    private func export() throws {
        let dir = try data.resolved()
        var exporter = OrderExporter(format: format)
        exporter.layout = items ? .items : .orders
        exporter.fromMillis = from.flatMap(Self.millis)
        exporter.toMillis = to.flatMap(Self.millis)
        exporter.status = status
        guard let output else {
            _ = try reportingFailures { try exporter.run(dataDirectory: dir, to: STDOUT_FILENO) }
            return
        }
        // Written beside the target and renamed when complete: a failed export leaves no half file.
        let temp = output + ".partial"
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640)
        guard fd >= 0 else { throw fail("cannot write \(temp): \(String(cString: strerror(errno)))", .storageFailure) }
        do {
            let n = try reportingFailures { try exporter.run(dataDirectory: dir, to: fd) }
            guard fsync(fd) == 0, close(fd) == 0 else {
                throw fail("cannot write \(temp): \(String(cString: strerror(errno)))", .storageFailure)
            }
            guard rename(temp, output) == 0 else {
                throw fail("cannot rename \(temp) to \(output): \(String(cString: strerror(errno)))", .storageFailure)
            }
            FileHandle.standardError.write(Data("exported \(n) orders to \(output)\n".utf8))
        } catch {
            close(fd)
            unlink(temp)
            throw error
        }
    }
}
