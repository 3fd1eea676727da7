import ArgumentParser
import Foundation
import JSON
import OrderSyncNode
import SyncCore

/// `ordersync journal`: the history of applied operations, from the master's journal.
struct JournalCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "journal",
        abstract: "Show applied operations (who, what, when) from the master's journal. Works read-only when no daemon runs.",
        discussion:
            "Run it on the master's data directory; a slave keeps no journal. With --rejected it also works on a slave: the changes that terminal refused or that its master refused."
    )

    @OptionGroup var data: DataDirOption
    @Option(name: .long, help: "Only operations on this order.") var order: String?
    @Option(name: .long, help: "Only operations after this sequence number.") var since: Int64 = 0
    @Option(name: .long, help: "Most entries to show (1-10000).") var limit: Int = 100
    @Flag(name: .long, help: "Show refused operations (who sent what, and why) instead of applied ones.") var rejected = false
    @Flag(name: .long, help: "Print {\"entries\":[...]} (or {\"rejections\":[...]}) as JSON.") var json = false

    func validate() throws {
        if let o = order, !Order.isValidUUID(o) { throw ValidationError("--order '\(o)' is not a UUID.") }
        guard since >= 0 else { throw ValidationError("--since must be 0 or more.") }
        guard (1...10_000).contains(limit) else { throw ValidationError("--limit must be 1-10000.") }
    }

    func run() throws {
        let dir = try data.resolved()
        let result = try reportingFailures {
            try OrderReader.journal(dataDirectory: dir, since: since, order: order, limit: limit, rejected: rejected)
        }
        if json {
            print(result.serialized())
            return
        }
        if rejected {
            let list = result.objectValue?["rejections"]?.arrayValue ?? []
            for r in list {
                let o = r.objectValue ?? JSONObject()
                print(
                    "#\(o["id"]?.intValue ?? 0)  \(o["at"]?.stringValue ?? "")  \(o["operation"]?.stringValue ?? "-")  "
                        + "by \(OrderText.quote(o["origin"]?.stringValue ?? ""))  \(o["code"]?.stringValue ?? "")  "
                        + "\(o["order"]?.stringValue ?? "-")  \(OrderText.quote(o["message"]?.stringValue ?? ""))")
            }
            if list.isEmpty { print("no rejections after #\(since)") }
            return
        }
        let entries = result.objectValue?["entries"]?.arrayValue ?? []
        for e in entries {
            let o = e.objectValue ?? JSONObject()
            let orders = (o["orders"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: ",")
            print(
                "\(o["seq"]?.intValue ?? 0)  \(o["at"]?.stringValue ?? "")  \(o["operation"]?.stringValue ?? "")  "
                    + "by \(OrderText.quote(o["origin"]?.stringValue ?? ""))  \(o["result"]?.stringValue ?? "")  \(orders)")
        }
        if entries.isEmpty { print("no journal entries after \(since)") }
    }
}
