import ArgumentParser
import Foundation
import JSON
import OrderSyncNode
import SyncCore

/// `ordersync storepos ...`: orders StorePOS apps hold that the store does not (an iPad coming
/// from StorePOS keeps its old orders): list, adopt, clear. See Docs/OPERATIONS.md.
struct StorePOSCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storepos",
        abstract: "Orders StorePOS apps hold that the store does not: list, adopt into the store, or clear from the apps.",
        subcommands: [Foreign.self, Adopt.self, Clear.self])

    /// `ordersync storepos foreign`.
    struct Foreign: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the orders StorePOS apps named that the store does not have (seen when their staff change or remove one).")

        @OptionGroup var data: DataDirOption
        @Flag(name: .long, help: "Print {\"foreign\":[...],\"waiting\":N} as JSON.") var json = false

        func run() throws {
            let answer = try callMaster(try data.resolved(), "GET", "/v1/storepos/foreign")
            if json {
                print(answer.serialized())
                return
            }
            let list = answer.objectValue?["foreign"]?.arrayValue ?? []
            if list.isEmpty { print("no foreign orders: no StorePOS app named an order the store does not have") }
            for case .object(let f) in list { print(StorePOSCommand.line(f)) }
        }
    }

    /// The selection shared by `adopt` and `clear`.
    struct Selection: ParsableArguments {
        @Argument(help: ArgumentHelp("The orders' uuids, as `storepos foreign` lists them.", valueName: "uuid"))
        var uuids: [String] = []
        @Flag(name: .long, help: "Every foreign order still waiting.") var all = false

        func validate() throws {
            guard all != !uuids.isEmpty else { throw ValidationError("Give uuids or --all (not both).") }
            if let bad = uuids.first(where: { !Order.isValidUUID($0) }) { throw ValidationError("'\(bad)' is not a UUID.") }
        }

        /// Asks the master to `action` (adopt, clear) the selected orders and prints what it did.
        func post(_ dir: String, _ action: String, done: String, json: Bool) throws {
            let body: JSONValue =
                all ? .object(JSONObject([("all", .bool(true))])) : .object(JSONObject([("uuids", .array(uuids.map { .string($0) }))]))
            let answer = try callMaster(dir, "POST", "/v1/storepos/foreign/\(action)", body: body)
            try StorePOSCommand.report(answer, key: done, json: json)
        }
    }

    /// `ordersync storepos adopt`.
    struct Adopt: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Bring foreign orders into the store (one journaled Create); StorePOS apps reconnect and get the store afresh.")

        @OptionGroup var data: DataDirOption
        @OptionGroup var selection: Selection
        @Flag(name: .long, help: "Print the answer as JSON.") var json = false

        func run() throws { try selection.post(try data.resolved(), "adopt", done: "adopted", json: json) }
    }

    /// `ordersync storepos clear`.
    struct Clear: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove foreign orders from every StorePOS app (now, and at its next connect).")

        @OptionGroup var data: DataDirOption
        @OptionGroup var selection: Selection
        @Flag(name: .long, help: "Print the answer as JSON.") var json = false

        func run() throws { try selection.post(try data.resolved(), "clear", done: "cleared", json: json) }
    }

    /// One foreign order as a line.
    static func line(_ f: JSONObject) -> String {
        let order = f["order"]?.objectValue ?? JSONObject()
        return "\(f["uuid"]?.stringValue ?? "?")  \(f["state"]?.stringValue ?? "?")  "
            + "\(OrderText.quote(order["customerName"]?.stringValue ?? ""))  from \(f["address"]?.stringValue ?? "?")  "
            + "seen \(f["count"]?.intValue ?? 0)x, last \(f["lastSeen"]?.stringValue ?? "?")"
    }

    /// Prints what `adopt` or `clear` did; fails when some uuids were not waiting or refused.
    static func report(_ answer: JSONValue, key: String, json: Bool) throws {
        let o = answer.objectValue ?? JSONObject()
        let unknown = (o["unknown"]?.arrayValue ?? []).compactMap(\.stringValue)
        let errors = o["errors"]?.arrayValue ?? []
        if json {
            print(answer.serialized())
        } else {
            let done = o[key]?.arrayValue ?? []
            for case .object(let f) in done { print("\(key) \(line(f))") }
            if done.isEmpty { print("nothing \(key)") }
            for u in unknown { print("not waiting: \(u) (not recorded, or adopted or cleared already)") }
            for case .object(let e) in errors {
                print("refused: \(e["uuid"]?.stringValue ?? "-") \(e["code"]?.stringValue ?? "") \(e["message"]?.stringValue ?? "")")
            }
        }
        if !unknown.isEmpty || !errors.isEmpty { throw ExitCode.failure }
    }
}
