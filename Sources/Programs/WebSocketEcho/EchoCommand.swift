import WebSocket

/// What the command line asks for: `server` or `client`, with their options.
enum EchoCommand {
    /// `server --port N [--host H] [--max-message-size B] [--max-fragments N]`.
    case server(host: String, port: UInt16, configuration: WebSocketConfiguration)
    /// `client --url ws://HOST:PORT [--agent NAME] [--max-message-size B] [--max-fragments N]`.
    case client(host: String, port: UInt16, agent: String, configuration: WebSocketConfiguration)

    /// The usage text printed for `--help` and after a bad command line.
    static let usage = """
        usage: ordersync-wsecho server --port N [--host 127.0.0.1] [LIMITS]
               ordersync-wsecho client --url ws://HOST:PORT [--agent NAME] [LIMITS]

        server  echo every text and binary message back with the same type; prints
                "listening PORT" once ready (--port 0 picks a free port)
        client  run the Autobahn fuzzing server's client sequence (/getCaseCount,
                /runCase?case=N&agent=NAME echoing every message, /updateReports)

        LIMITS  --max-message-size BYTES (default 20971520)
                --max-fragments COUNT    (default 131072)
        """

    /// Limits large enough for every Autobahn case of groups 1-10: group 9 sends messages of
    /// up to 16 MiB, and 4 MiB messages in 64-byte fragments (65536 fragments).
    static let autobahnConfiguration = WebSocketConfiguration(maxMessageSize: 20 << 20, maxFragments: 1 << 17)

    /// Parses the arguments after the program name.
    static func parse(_ arguments: [String]) throws -> EchoCommand {
        guard let mode = arguments.first else {
            throw EchoError("missing mode: server or client")
        }
        var options: [String: String] = [:]
        var index = 1
        while index < arguments.count {
            let name = arguments[index]
            guard name.hasPrefix("--"), index + 1 < arguments.count else {
                throw EchoError("expected --option value, got '\(name)'")
            }
            options[name] = arguments[index + 1]
            index += 2
        }
        var configuration = autobahnConfiguration
        if let value = options.removeValue(forKey: "--max-message-size") {
            configuration.maxMessageSize = try positive(value, "--max-message-size")
            configuration.maxFrameSize = configuration.maxMessageSize
        }
        if let value = options.removeValue(forKey: "--max-fragments") {
            configuration.maxFragments = try positive(value, "--max-fragments")
        }
        let command: EchoCommand
        switch mode {
        case "server":
            let host = options.removeValue(forKey: "--host") ?? "127.0.0.1"
            guard let portText = options.removeValue(forKey: "--port") else {
                throw EchoError("server needs --port")
            }
            command = .server(host: host, port: try port(portText), configuration: configuration)
        case "client":
            guard let url = options.removeValue(forKey: "--url") else {
                throw EchoError("client needs --url ws://HOST:PORT")
            }
            let (host, port) = try authority(ofURL: url)
            let agent = options.removeValue(forKey: "--agent") ?? "ordersync"
            // The agent goes into a query string and kosoku's report file names unescaped.
            guard !agent.isEmpty, agent.utf8.allSatisfy(isAgentByte) else {
                throw EchoError("--agent must be letters, digits, '.', '_' or '-', got '\(agent)'")
            }
            command = .client(host: host, port: port, agent: agent, configuration: configuration)
        default:
            throw EchoError("unknown mode '\(mode)': expected server or client")
        }
        if let unknown = options.keys.sorted().first {
            throw EchoError("unknown option \(unknown) for \(mode)")
        }
        return command
    }

    /// Splits `ws://HOST:PORT[/]` (HOST may be a bracketed IPv6 literal).
    static func authority(ofURL url: String) throws -> (String, UInt16) {
        let prefix = "ws://"
        guard url.hasPrefix(prefix) else {
            throw EchoError("only ws:// URLs are supported, got '\(url)'")
        }
        var rest = Substring(url.dropFirst(prefix.count))
        if rest.hasSuffix("/") {
            rest = rest.dropLast()
        }
        guard !rest.contains("/"), let colon = rest.lastIndex(of: ":") else {
            throw EchoError("expected ws://HOST:PORT, got '\(url)'")
        }
        var host = rest[..<colon]
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = host.dropFirst().dropLast()
        }
        guard !host.isEmpty else {
            throw EchoError("missing host in '\(url)'")
        }
        return (String(host), try port(String(rest[rest.index(after: colon)...])))
    }

    private static func port(_ text: String) throws -> UInt16 {
        guard let value = UInt16(text) else {
            throw EchoError("invalid port '\(text)'")
        }
        return value
    }

    private static func positive(_ text: String, _ name: String) throws -> Int {
        guard let value = Int(text), value > 0 else {
            throw EchoError("\(name) must be a positive integer, got '\(text)'")
        }
        return value
    }

    private static func isAgentByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }
}
