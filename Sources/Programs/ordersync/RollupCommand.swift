import ArgumentParser
import Foundation
import JSON
import Logging
import OrderSyncNode

/// `ordersync rollup`: ships the store's journal to head office's PostgreSQL (Docs/OPERATIONS.md,
/// "Roll-up into head office"); `verify` and `status` check it. Exit codes: 0 ok, 1 verify found
/// a difference, 64 usage, 65 conflict or gap (`--once`), 69 head office unreachable, 78
/// configuration, 130/143 a `--once` stopped by SIGINT/SIGTERM.
struct RollupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rollup",
        abstract: "Roll the store's journal up into head office's PostgreSQL, verify it, or show how far it got.",
        subcommands: [RollupShipCommand.self, RollupVerifyCommand.self, RollupStatusCommand.self],
        defaultSubcommand: RollupShipCommand.self)
}

/// `--database-url`, else `$ORDERSYNC_DATABASE_URL` (keeps a password out of `ps`).
struct DatabaseURLOption: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Head office's PostgreSQL (postgresql://user@host/db?sslmode=verify-full&sslrootcert=…). Default: $ORDERSYNC_DATABASE_URL.",
            valueName: "url"))
    var databaseURL: String?

    /// The URL given, or the environment's.
    func resolved() throws -> String {
        if let u = databaseURL, !u.isEmpty { return u }
        if let u = ProcessInfo.processInfo.environment["ORDERSYNC_DATABASE_URL"], !u.isEmpty { return u }
        throw ValidationError("Missing --database-url (or set ORDERSYNC_DATABASE_URL).")
    }
}

/// `ordersync rollup [--once]`: the roll-up itself.
struct RollupShipCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ship",
        abstract: "Ship the stable journal entries to head office (the default); follow new ones unless --once.")

    @OptionGroup var data: DataDirOption
    @OptionGroup var database: DatabaseURLOption
    @Flag(name: .long, help: "Ship everything shippable, then exit 0 (130/143 when stopped by SIGINT/SIGTERM first).") var once = false
    @Flag(name: .long, help: "Log as JSON lines; with --once, print the final state as JSON.") var json = false
    @Option(name: .long, help: ArgumentHelp("Serve Prometheus metrics on ADDR:PORT.", valueName: "addr:port"))
    var metricsListen: String?
    @Option(name: .long, help: "Log level. (default: info)") var logLevel: Logger.Level?

    func validate() throws {
        if let m = metricsListen, MetricsAddress(parsing: m) == nil {
            throw ValidationError("--metrics-listen '\(m)' is not HOST:PORT.")
        }
        _ = try database.resolved()
        _ = try data.resolved()
    }

    func run() throws {
        let dir = try data.resolved()
        let level = logLevel ?? .info
        let format = EventLogFormat(syntax: json ? .json : .text, priorityPrefix: EventLogFormat.standardErrorIsJournal())
        LoggingSystem.bootstrap { label in EventLogHandler(logLevel: level, format: format, label: label) }
        var logger = Logger(label: "ordersync.rollup")
        logger.logLevel = level
        // Blocked before any thread starts, so that only the stop thread below takes them.
        var stopSignals = Self.stopSignals
        pthread_sigmask(SIG_BLOCK, &stopSignals, nil)
        let runner: RollupRunner
        do {
            runner = try RollupRunner(
                dataDirectory: dir, databaseURL: try database.resolved(), once: once,
                metrics: metricsListen.flatMap(MetricsAddress.init(parsing:)), logger: logger)
        } catch {
            let (message, exit) = RollupRunner.describe(error)
            FileHandle.standardError.write(Data("ordersync: \(message)\n".utf8))
            throw ExitCode(exit.rawValue)
        }
        Self.stopOnSignal(runner.stopHandle, once: once, logger: logger)
        let exit = runner.run()
        if json, once, let state = try? RollupStatus.read(dataDirectory: dir) { print(JSONValue.object(state).serialized()) }
        if exit != .ok { throw ExitCode(exit.rawValue) }
    }

    /// SIGINT and SIGTERM.
    private static var stopSignals: sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        return set
    }

    /// A thread that waits for SIGINT or SIGTERM and stops the roll-up: head office's call in
    /// flight is broken (a batch not committed is rolled back by head office, its checkpoint
    /// unmoved), the state file says `running:false`. A follower exits 0 (a service stopped); a
    /// `--once` exits 128 + the signal's number (130, 143), as a shell reports a command killed
    /// by it, so that a script never takes a partial shipment for a complete one.
    private static func stopOnSignal(_ handle: RollupStopHandle, once: Bool, logger: Logger) {
        Thread.detachNewThread {
            var set = stopSignals
            var signal: Int32 = 0
            while sigwait(&set, &signal) != 0 {}
            if !handle.stop() {
                logger.warning("rollup.stop_forced", metadata: ["signal": "\(signal)", "waited_s": "3"])
            }
            Foundation.exit(once ? 128 + signal : 0)
        }
    }
}

/// `ordersync rollup verify`.
struct RollupVerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Prove head office holds this store's journal byte for byte (exit 0), or name the first entry that differs (exit 1).")

    @OptionGroup var data: DataDirOption
    @OptionGroup var database: DatabaseURLOption
    @Flag(name: .long, help: "Print the answer as JSON.") var json = false

    func validate() throws {
        _ = try database.resolved()
        _ = try data.resolved()
    }

    func run() throws {
        let (answer, exit) = RollupVerify.run(dataDirectory: try data.resolved(), databaseURL: try database.resolved())
        if json {
            print(JSONValue.object(answer).serialized())
        } else if let error = answer["error"]?.stringValue {
            FileHandle.standardError.write(Data("ordersync: \(error)\n".utf8))
        } else if answer["equal"] == .bool(true) {
            print("equal up to seq \(answer["seq"]?.intValue ?? 0), rolling hash \(answer["rolling"]?.stringValue ?? "")")
        } else {
            print("differs at seq \(answer["firstDifferentSeq"]?.intValue ?? 0): \(answer["reason"]?.stringValue ?? "")")
        }
        if exit != .ok { throw ExitCode(exit.rawValue) }
    }
}

/// `ordersync rollup status`: what the running (or last) roll-up wrote to `rollup.state.json`.
struct RollupStatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Show how far the roll-up got (from DATADIR/rollup.state.json).")

    @OptionGroup var data: DataDirOption
    @Flag(name: .long, help: "Print it as JSON.") var json = false

    func run() throws {
        let dir = try data.resolved()
        guard let state = try RollupStatus.read(dataDirectory: dir) else {
            throw fail("no roll-up has run on \(dir) (no \(RollupStatus.fileName))", .notFound)
        }
        if json {
            print(JSONValue.object(state).serialized())
            return
        }
        let checkpoint = state["checkpoint"]?.objectValue
        let lag = state["lag"]?.objectValue
        print("roll-up: \(state["state"]?.stringValue ?? "?")\(state["running"] == .bool(true) ? "" : " (not running)")")
        print("checkpoint: seq \(checkpoint?["seq"]?.intValue ?? 0) at \(checkpoint?["at"]?.stringValue ?? "-")")
        print("stable seq: \(state["stableSeq"]?.intValue ?? 0), local last seq: \(state["localLastSeq"]?.intValue ?? 0)")
        print("lag: \(lag?["entries"]?.intValue ?? 0) entries, \(lag?["seconds"].map { $0.serialized() } ?? "0") s")
        if let e = state["lastError"]?.objectValue {
            print("error: \(e["code"]?.stringValue ?? "") \(e["message"]?.stringValue ?? "") since \(e["at"]?.stringValue ?? "")")
        } else if let e = state["previousError"]?.objectValue {
            print(
                "previous error (over): \(e["code"]?.stringValue ?? "") \(e["message"]?.stringValue ?? ""), "
                    + "\(e["at"]?.stringValue ?? "") to \(e["clearedAt"]?.stringValue ?? "")")
        }
    }
}
