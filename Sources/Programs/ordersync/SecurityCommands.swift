import ArgumentParser
import Foundation
import JSON
import OrderSyncNode
import QRCode

/// Sends a request to the running master of `dir`: API errors and a master that is not running
/// become a clear message and their exit status (`ExitStatus`).
func callMaster(_ dir: String, _ method: String, _ path: String, body: JSONValue? = nil) throws -> JSONValue {
    try callDaemon(
        dir, method, path, body: body,
        noDaemon: "the master is not running for \(dir); pairing, terminals and keys are managed by the running master. "
            + "Start it with `ordersync master --data-dir \(dir)`.")
}

/// `ordersync pair ...`: the master's pairing codes: open one (the default), list, cancel.
struct PairCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pair",
        abstract: "Open a pairing code for a new terminal (the default), list the open codes, or cancel one.",
        subcommands: [Open.self, List.self, Cancel.self],
        defaultSubcommand: Open.self)

    /// `ordersync pair [open]`: one more code.
    struct Open: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Open a pairing window: print a one-time code a new terminal pairs with.",
            discussion: """
                The code is good for one terminal, for 10 minutes (or --valid-for). Up to 8 codes may be open at \
                once (one per till to pair); running `pair` again opens another code and leaves the others open. \
                On the new terminal run `ordersync slave --data-dir DIR --pair -` and type the code (or --pair CODE, \
                --pair-file FILE, or ORDERSYNC_PAIR_CODE). An address that tries 5 wrong codes is refused pairing \
                for 5 minutes; the open codes stay open. The code is also printed as a QR code.
                """)

        @OptionGroup var data: DataDirOption

        @Option(name: .long, help: "The name the terminal gets (default: the name it gives).")
        var name: String?

        @Option(name: .long, help: ArgumentHelp("How long the code is good for (1-600).", valueName: "seconds"))
        var validFor: Int = 600

        @Flag(name: .long, help: "Pair a handheld: it keeps a standby copy but does not vote when a terminal is promoted.")
        var handheld = false

        @Flag(name: .long, help: "Print the answer as JSON.")
        var json = false

        func validate() throws {
            guard (1...600).contains(validFor) else { throw ValidationError("--valid-for must be 1-600 seconds.") }
            if let n = name, n.isEmpty || n.utf8.count > 63 { throw ValidationError("--name must be 1-63 bytes.") }
        }

        func run() throws {
            let dir = try data.resolved()
            var body = JSONObject([("validForSeconds", .int(Int64(validFor)))])
            if let n = name { body["name"] = .string(n) }
            if handheld { body["voter"] = .bool(false) }
            let answer = try callMaster(dir, "POST", "/v1/pairing", body: .object(body))
            if json {
                print(answer.serialized())
                return
            }
            let o = answer.objectValue ?? JSONObject()
            let code = o["code"]?.stringValue ?? "?"
            print("pairing code: \(code)")
            print("valid until:  \(PairCommand.clock(o["expiresAtMillis"])) (one terminal)")
            print("store:        \(o["store"]?.stringValue ?? "?")")
            print("master id:    \(o["master"]?.stringValue ?? "?")")
            if let n = o["name"]?.stringValue { print("name:         \(n)") }
            // The code as a QR code, for a terminal with a camera (the text is the code itself).
            if let qr = try? QRCode(encoding: code) {
                print("")
                print(qr.terminalText(), terminator: "")
            }
            print("")
            print("On the new terminal run (and type the code when it waits for it):")
            print("  ordersync slave --data-dir DIR --pair -")
        }
    }

    /// `ordersync pair list`.
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the open pairing codes.")

        @OptionGroup var data: DataDirOption

        @Flag(name: .long, help: "Print the answer as JSON.")
        var json = false

        func run() throws {
            let answer = try callMaster(try data.resolved(), "GET", "/v1/pairing")
            if json {
                print(answer.serialized())
                return
            }
            let codes = answer.objectValue?["codes"]?.arrayValue ?? []
            if codes.isEmpty { print("no pairing code open (open one with `ordersync pair`)") }
            for case .object(let c) in codes {
                print(PairCommand.line(c))
            }
        }
    }

    /// `ordersync pair cancel CODE|NAME`.
    struct Cancel: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Cancel an open pairing code (by the code, or by the name it was opened for).")

        @OptionGroup var data: DataDirOption

        @Argument(help: ArgumentHelp("The code (as `pair list` shows it) or the terminal name it was opened for.", valueName: "code|name"))
        var codeOrName: String

        @Flag(name: .long, help: "Print the answer as JSON.")
        var json = false

        func run() throws {
            let answer = try callMaster(try data.resolved(), "DELETE", "/v1/pairing/\(pathComponent(codeOrName))")
            if json {
                print(answer.serialized())
                return
            }
            for case .object(let c) in answer.objectValue?["cancelled"]?.arrayValue ?? [] {
                print("cancelled " + PairCommand.line(c))
            }
        }
    }

    /// One open code in one line: the code, its name, when it closes.
    static func line(_ c: JSONObject) -> String {
        var line = c["code"]?.stringValue ?? "?"
        if let n = c["name"]?.stringValue { line += "  \(OrderText.quote(n))" }
        return line + "  until \(clock(c["expiresAtMillis"]))"
    }

    /// Wall-clock milliseconds as local `HH:mm:ss`.
    static func clock(_ millis: JSONValue?) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm:ss"
        return formatter.string(from: Date(timeIntervalSince1970: Double(millis?.intValue ?? 0) / 1000))
    }
}

/// `ordersync terminal ...`: the master's paired terminals.
struct TerminalCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "terminal",
        abstract: "List and revoke the terminals paired with this master.",
        subcommands: [List.self, Revoke.self])

    /// `ordersync terminal list`.
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the paired terminals.")

        @OptionGroup var data: DataDirOption

        @Flag(name: .long, help: "Print the answer as JSON.")
        var json = false

        func run() throws {
            let answer = try callMaster(try data.resolved(), "GET", "/v1/terminals")
            if json {
                print(answer.serialized())
                return
            }
            let list = answer.objectValue?["terminals"]?.arrayValue ?? []
            if list.isEmpty { print("no paired terminals (pair one with `ordersync pair`)") }
            for case .object(let t) in list {
                let connected = t["connected"] == .bool(true)
                var line = "\(t["id"]?.stringValue ?? "?")  \(OrderText.quote(t["name"]?.stringValue ?? ""))"
                line += connected ? "  connected" : "  away"
                if let a = t["address"]?.stringValue { line += "  \(a)" }
                if let seq = t["ackedSeq"]?.intValue { line += "  acked \(seq)" }
                if let n = t["outbox"]?.intValue { line += "  outbox \(n)" }
                if case .bool(let v)? = t["voter"] { line += v ? "  voter yes" : "  voter no" }
                print(line)
            }
        }
    }

    /// `ordersync terminal revoke ID|NAME`.
    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a paired terminal: its link closes and its key is refused from now on.")

        @OptionGroup var data: DataDirOption

        @Argument(help: ArgumentHelp("The terminal's id (as `terminal list` shows it) or name.", valueName: "id|name"))
        var terminal: String

        @Flag(name: .long, help: "Print the answer as JSON.")
        var json = false

        func run() throws {
            let answer = try callMaster(try data.resolved(), "POST", "/v1/terminals/\(pathComponent(terminal))/revoke")
            if json {
                print(answer.serialized())
                return
            }
            let o = answer.objectValue ?? JSONObject()
            print("revoked \(o["id"]?.stringValue ?? "?") \(OrderText.quote(o["name"]?.stringValue ?? ""))")
        }
    }
}

/// `ordersync key ...`: the master's key.
struct KeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key",
        abstract: "Manage the master's key.",
        subcommands: [Rotate.self])

    /// `ordersync key rotate`.
    struct Rotate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a new master key; connected terminals are handed over to it, the old key still answers.",
            discussion: """
                The old key moves to node.key.previous and keeps answering terminals that have not been \
                handed over yet; a second rotation drops it (terminals that missed both must pair again).
                """)

        @OptionGroup var data: DataDirOption

        @Flag(name: .long, help: "Print the answer as JSON.")
        var json = false

        func run() throws {
            let answer = try callMaster(try data.resolved(), "POST", "/v1/key/rotate")
            if json {
                print(answer.serialized())
                return
            }
            let o = answer.objectValue ?? JSONObject()
            print("master id:   \(o["master"]?.stringValue ?? "?")")
            print("previous id: \(o["previous"]?.stringValue ?? "?") (still answers)")
            print("handed over: \(o["linksHandedOver"]?.intValue ?? 0) connected terminal(s)")
        }
    }
}
