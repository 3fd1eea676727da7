import ArgumentParser
import Foundation
import JSON
import NodePolicy
import OrderSyncNode
import SyncCore

/// `ordersync order ...`: create, update, remove, list and show orders through the local API.
struct OrderCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "order",
        abstract: "Create, change, remove and read orders on this terminal.",
        subcommands: [Create.self, Update.self, Remove.self, List.self, Show.self])
}

/// Prints an order either as one JSON object or as a readable line.
func printOrder(_ order: JSONObject, json: Bool, verb: String? = nil) {
    if json {
        print(JSONValue.object(order).serialized())
        return
    }
    let uuid = order["uuid"]?.stringValue ?? "?"
    var parts = [
        "customer=\(OrderText.quote(order["customerName"]?.stringValue ?? ""))",
        "created=\(order["created"]?.stringValue ?? "")",
    ]
    if let s = order["shippingMethod"]?.stringValue { parts.append("shipping=\(OrderText.quote(s))") }
    if let t = order["tableName"]?.stringValue { parts.append("table=\(OrderText.quote(t))") }
    if let n = order["tableSize"]?.intValue { parts.append("table-size=\(n)") }
    if let s = order["status"]?.stringValue { parts.append("status=\(s)") }
    if let items = order["items"]?.arrayValue { parts.append("items=\(items.count)") }
    if let n = order["note"]?.stringValue { parts.append("note=\(OrderText.quote(n))") }
    if let v = order["version"]?.intValue { parts.append("version=\(v)") }
    if let s = order["sync"]?.stringValue { parts.append("sync=\(s)") }
    print("\(verb.map { "\($0) " } ?? "")\(uuid) \(parts.joined(separator: " "))")
}

/// "created" etc., or "queued (…)" when a slave stored the change to send it later.
func verb(_ done: String, _ reply: JSONValue) -> String {
    reply.objectValue?["sync"]?.stringValue == "pending"
        ? "\(done) locally, queued for the master (not reachable right now):" : done
}

/// Sends a request to the daemon of `dir`; API and client errors become a clear message and
/// their exit status (`ExitStatus`). `noDaemon` replaces the message when no daemon runs.
func callDaemon(
    _ dir: String, _ method: String, _ path: String, body: JSONValue? = nil, noDaemon: String? = nil
) throws -> JSONValue {
    let response = try reportingFailures {
        do {
            return try LocalAPIClient(dataDirectory: dir).send(method: method, path: path, body: body)
        } catch LocalAPIClientError.noDaemon {
            guard let message = noDaemon else { throw LocalAPIClientError.noDaemon(dataDirectory: dir) }
            throw fail(message, .unavailable)
        }
    }
    if (200..<300).contains(response.status) { return response.body }
    let err = response.body.objectValue?["error"]?.objectValue
    let code = err?["code"]?.stringValue ?? "http_\(response.status)"
    let message = err?["message"]?.stringValue ?? "request failed with HTTP \(response.status)"
    var line = "\(message) [\(code)]"
    if let u = err?["uuid"]?.stringValue { line += " (order \(u))" }
    throw fail(line, ExitStatus.forAPIError(code: code, httpStatus: response.status))
}

/// Fields shared by create and update.
struct OrderFieldOptions: ParsableArguments {
    @Option(name: .long, help: "Shipping method (StorePOS shippingMethod).")
    var shipping: String?

    @Option(name: .long, help: "Table name.")
    var table: String?

    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp("Table size (-1 means no table, as in StorePOS).", valueName: "n"))
    var tableSize: Int?

    @Option(name: .long, help: "A note (\"no nuts\").")
    var note: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A line item, repeatable: NAME:QUANTITY:UNIT_PRICE_CENTS[:SKU]. Replaces the order's items.",
            valueName: "item"))
    var item: [String] = []

    var isEmpty: Bool { shipping == nil && table == nil && tableSize == nil && note == nil && item.isEmpty }

    func validate() throws {
        _ = try lineItems()
    }

    func lineItems() throws -> [JSONValue] {
        try item.map { text in
            let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard (3...4).contains(parts.count), !parts[0].isEmpty, let q = Int64(parts[1]), q >= 1,
                let p = Int64(parts[2]), p >= 0
            else {
                throw ValidationError("--item '\(text)' must be NAME:QUANTITY:UNIT_PRICE_CENTS[:SKU], e.g. Latte:2:350")
            }
            var o = JSONObject([("name", .string(parts[0])), ("quantity", .int(q)), ("unitPrice", .int(p))])
            if parts.count == 4, !parts[3].isEmpty { o["sku"] = .string(parts[3]) }
            return .object(o)
        }
    }

    func apply(to o: inout JSONObject) throws {
        if let s = shipping { o["shippingMethod"] = .string(s) }
        if let t = table { o["tableName"] = .string(t) }
        if let n = tableSize { o["tableSize"] = .int(Int64(n)) }
        if let n = note { o["note"] = .string(n) }
        if !item.isEmpty { o["items"] = .array(try lineItems()) }
    }
}

extension OrderCommand {
    /// `ordersync order create`.
    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create an order; prints it (with its uuid).")
        @OptionGroup var data: DataDirOption
        @Option(name: .long, help: "Customer name.") var customer: String
        @OptionGroup var fields: OrderFieldOptions
        @Option(name: .long, help: "Use this UUID instead of a new one (a retry with the same UUID and fields is harmless).")
        var uuid: String?
        @Option(name: .long, help: "Creation time (2016-01-12T21:35:16+0800 or RFC 3339). Default: now.")
        var created: String?
        @Flag(name: .long, help: "Print the order as one JSON object.") var json = false

        func validate() throws {
            if let u = uuid, !Order.isValidUUID(u) { throw ValidationError("--uuid '\(u)' is not a UUID.") }
            if let c = created, OrderTimestamp(parsing: c) == nil {
                throw ValidationError("--created '\(c)' is not a date-time like 2016-01-12T21:35:16+0800.")
            }
        }

        func run() throws {
            let dir = try data.resolved()
            var o = JSONObject()
            o["uuid"] = .string(uuid ?? UUID().uuidString)
            o["customerName"] = .string(customer)
            if let c = created { o["created"] = .string(c) }
            try fields.apply(to: &o)
            let reply = try callDaemon(dir, "POST", "/v1/orders", body: .object(o))
            printOrder(reply.objectValue ?? JSONObject(), json: json, verb: json ? nil : verb("created", reply))
        }
    }

    /// `ordersync order update`.
    struct Update: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change fields of an order; fields not given are kept.")
        @OptionGroup var data: DataDirOption
        @Argument(help: "The order's UUID.") var uuid: String
        @Option(name: .long, help: "Customer name.") var customer: String?
        @Option(name: .long, help: "New status.") var status: OrderStatus?
        @OptionGroup var fields: OrderFieldOptions
        @Option(name: .long, help: ArgumentHelp("Only if the order is still at this version (else: conflict).", valueName: "n"))
        var ifVersion: Int?
        @Flag(name: .long, help: "Print the order as one JSON object.") var json = false

        func validate() throws {
            guard Order.isValidUUID(uuid) else { throw ValidationError("'\(uuid)' is not a UUID.") }
            if customer == nil && status == nil && fields.isEmpty {
                throw ValidationError(
                    "Nothing to change: give at least one of --customer, --status, --shipping, --table, --table-size, --note, --item.")
            }
        }

        func run() throws {
            let dir = try data.resolved()
            var o = JSONObject()
            if let c = customer { o["customerName"] = .string(c) }
            if let s = status { o["status"] = .string(s.rawValue) }
            if let v = ifVersion { o["version"] = .int(Int64(v)) }
            try fields.apply(to: &o)
            let reply = try callDaemon(dir, "PATCH", "/v1/orders/\(uuid)", body: .object(o))
            printOrder(reply.objectValue ?? JSONObject(), json: json, verb: json ? nil : verb("updated", reply))
        }
    }

    /// `ordersync order remove`.
    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove an order.")
        @OptionGroup var data: DataDirOption
        @Argument(help: "The order's UUID.") var uuid: String
        @Option(name: .long, help: ArgumentHelp("Only if the order is still at this version (else: conflict).", valueName: "n"))
        var ifVersion: Int?
        @Flag(name: .long, help: "Print the removed order as one JSON object.") var json = false

        func validate() throws {
            guard Order.isValidUUID(uuid) else { throw ValidationError("'\(uuid)' is not a UUID.") }
        }

        func run() throws {
            let dir = try data.resolved()
            let reply: JSONValue
            if let v = ifVersion {
                let message = JSONObject([
                    ("operation", .int(2)),
                    (
                        "orders",
                        .array([
                            .object(
                                JSONObject([
                                    ("uuid", .string(uuid)), ("version", .int(Int64(v))),
                                ]))
                        ])
                    ),
                ])
                reply = try callDaemon(dir, "POST", "/v1/operations", body: .object(message))
                if let e = reply.objectValue?["errors"]?.arrayValue?.first?.objectValue {
                    let code = e["code"]?.stringValue ?? "error"
                    var line = "\(e["message"]?.stringValue ?? "refused") [\(code)]"
                    if let cv = e["current"]?.objectValue?["version"]?.intValue { line += "; it is at version \(cv) now" }
                    throw fail(line, ExitStatus.forAPIError(code: code, httpStatus: 409))
                }
                let removed = reply.objectValue?["applied"]?.arrayValue?.first?.objectValue ?? JSONObject()
                printOrder(removed, json: json, verb: json ? nil : "removed")
                return
            }
            reply = try callDaemon(dir, "DELETE", "/v1/orders/\(uuid)")
            printOrder(reply.objectValue ?? JSONObject(), json: json, verb: json ? nil : verb("removed", reply))
        }
    }

    /// `ordersync order list`.
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List orders, oldest first (by created, then uuid). Works read-only when no daemon runs.")
        @OptionGroup var data: DataDirOption
        @Option(name: .long, help: "Page number, from 1.") var page: Int = 1
        @Option(name: .long, help: "Orders per page (1-1000).") var per: Int = 50
        @Option(name: .long, help: "Only orders with this status.") var status: OrderStatus?
        @Flag(name: .long, help: "Print {\"page\",\"per\",\"total\",\"orders\"} as JSON.") var json = false

        func validate() throws {
            guard page >= 1 else { throw ValidationError("--page starts at 1.") }
            guard (1...1000).contains(per) else { throw ValidationError("--per must be 1-1000.") }
        }

        func run() throws {
            let dir = try data.resolved()
            let result = try reportingFailures {
                try OrderReader.list(dataDirectory: dir, page: page, per: per, status: status)
            }
            if json {
                print(result.serialized())
                return
            }
            let o = result.objectValue ?? JSONObject()
            let orders = o["orders"]?.arrayValue ?? []
            for order in orders { printOrder(order.objectValue ?? JSONObject(), json: false) }
            print("page \(page), \(orders.count) of \(o["total"]?.intValue ?? 0) orders")
        }
    }

    /// `ordersync order show`.
    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one order. Works read-only when no daemon runs.")
        @OptionGroup var data: DataDirOption
        @Argument(help: "The order's UUID.") var uuid: String
        @Flag(name: .long, help: "Print the order as one JSON object.") var json = false

        func validate() throws {
            guard Order.isValidUUID(uuid) else { throw ValidationError("'\(uuid)' is not a UUID.") }
        }

        func run() throws {
            let dir = try data.resolved()
            let order = try reportingFailures { try OrderReader.show(dataDirectory: dir, uuid: uuid) }
            guard let o = order else { throw fail("no order \(uuid) in \(dir) [not_found]", .notFound) }
            printOrder(o, json: json)
        }
    }
}

/// `ordersync status`.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Show what the node of a data directory is doing.")
    @OptionGroup var data: DataDirOption
    @Flag(name: .long, help: "Print the status as JSON.") var json = false

    func run() throws {
        let dir = try data.resolved()
        // A roll-up's state file beside the store shows under `rollup` (Docs/OPERATIONS.md).
        let rollup = try? RollupStatus.read(dataDirectory: dir)
        if json {
            var answer = try callDaemon(dir, "GET", "/v1/status")
            if case .object(var o) = answer, let rollup {
                o["rollup"] = .object(rollup)
                answer = .object(o)
            }
            print(answer.serialized())
            return
        }
        print(StatusText.render(try reportingFailures { try LocalAPIClient(dataDirectory: dir).status() }))
        if let r = rollup {
            print(
                "rollup: \(r["state"]?.stringValue ?? "?")\(r["running"] == .bool(true) ? "" : " (not running)"), checkpoint "
                    + "\(r["checkpoint"]?.objectValue?["seq"]?.intValue ?? 0), lag \(r["lag"]?.objectValue?["entries"]?.intValue ?? 0) entries"
            )
        }
    }
}
