import ArgumentParser
import Foundation
import JSON
import OrderSyncNode

/// `ordersync dashboard ...`: the store dashboard's access tokens, kept by the running master.
struct DashboardCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dashboard",
        abstract: "Make, list and revoke the tokens that open the store dashboard (master started with --http-listen).",
        subcommands: [Create.self, List.self, Revoke.self],
        defaultSubcommand: Create.self)

    /// `ordersync dashboard [create] [--name LABEL]`.
    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create",
            abstract: "Make a dashboard token and print the address to open (the token is shown only now).",
            discussion: """
                The token is 256 random bits; the master keeps only its SHA-256, with the label and the \
                creation time. Open the printed address in a browser on the store's network: the page \
                exchanges the token for a session cookie. `ordersync dashboard revoke` ends it at once.
                """)

        @OptionGroup var data: DataDirOption

        @Option(name: .long, help: ArgumentHelp("A label for the token (1-63 bytes, no '/'; default dashboard-ID).", valueName: "label"))
        var name: String?

        @Flag(name: .long, help: "Print the answer as JSON.")
        var json = false

        func validate() throws {
            if let n = name, n.isEmpty || n.utf8.count > 63 || n.contains("/") {
                throw ValidationError("--name must be 1-63 bytes, without '/'.")
            }
        }

        func run() throws {
            var body = JSONObject()
            if let n = name { body["name"] = .string(n) }
            let answer = try callMaster(try data.resolved(), "POST", "/v1/dashboard/tokens", body: .object(body))
            if json {
                print(answer.serialized())
                return
            }
            let o = answer.objectValue ?? JSONObject()
            print("dashboard token \(o["id"]?.stringValue ?? "?") \(OrderText.quote(o["name"]?.stringValue ?? ""))")
            if let url = o["url"]?.stringValue {
                print("open: \(url)")
                if let sha256 = o["certificateSha256"]?.stringValue {
                    print("certificate SHA-256: \(sha256)")
                    print("(the browser warns about a self-signed certificate: go on only if it shows this fingerprint)")
                }
            } else {
                print("token: \(o["token"]?.stringValue ?? "?")")
                print("the master serves no dashboard: start it with --http-listen ADDR:PORT (e.g. 0.0.0.0:8080),")
                print("then open the address it serves (https:// beyond loopback) and paste the token")
            }
            print("The token is shown only now; `ordersync dashboard revoke \(o["id"]?.stringValue ?? "ID")` ends it.")
        }
    }

    /// `ordersync dashboard list`.
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the dashboard tokens (labels and times, never the tokens).")

        @OptionGroup var data: DataDirOption

        @Flag(name: .long, help: "Print the answer as JSON.")
        var json = false

        func run() throws {
            let answer = try callMaster(try data.resolved(), "GET", "/v1/dashboard/tokens")
            if json {
                print(answer.serialized())
                return
            }
            let list = answer.objectValue?["tokens"]?.arrayValue ?? []
            if list.isEmpty { print("no dashboard tokens (make one with `ordersync dashboard`)") }
            let formatter = ISO8601DateFormatter()
            for case .object(let t) in list {
                let made = Date(timeIntervalSince1970: Double(t["createdAtMillis"]?.intValue ?? 0) / 1000)
                print(
                    "\(t["id"]?.stringValue ?? "?")  \(OrderText.quote(t["name"]?.stringValue ?? ""))  made \(formatter.string(from: made))"
                )
            }
            if let url = answer.objectValue?["url"]?.stringValue { print("dashboard: \(url)") }
            if let sha256 = answer.objectValue?["certificateSha256"]?.stringValue { print("certificate SHA-256: \(sha256)") }
        }
    }

    /// `ordersync dashboard revoke ID|LABEL`.
    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a dashboard token: its sessions end and its open pages are logged out at once.")

        @OptionGroup var data: DataDirOption

        @Argument(help: ArgumentHelp("The token's id (as `dashboard list` shows it) or label.", valueName: "id|label"))
        var token: String

        @Flag(name: .long, help: "Print the answer as JSON.")
        var json = false

        func run() throws {
            let answer = try callMaster(try data.resolved(), "POST", "/v1/dashboard/tokens/\(pathComponent(token))/revoke")
            if json {
                print(answer.serialized())
                return
            }
            let o = answer.objectValue ?? JSONObject()
            print("revoked \(o["id"]?.stringValue ?? "?") \(OrderText.quote(o["name"]?.stringValue ?? ""))")
        }
    }
}

/// `text` percent-encoded as one path segment (an id or a name in a local API path).
func pathComponent(_ text: String) -> String {
    var allowed = CharacterSet.urlPathAllowed
    allowed.remove("/")
    return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
}
