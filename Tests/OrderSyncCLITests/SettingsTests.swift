import ArgumentParser
import Foundation
import OrderSyncNode
import SyncCore
import XCTest

@testable import ordersync

/// The daemons' settings: a flag, else the settings file (a daemon's section over the top),
/// else the default; a bad value names the file and line that set it; the options that take
/// one of a few words are enums.
final class SettingsTests: XCTestCase {
    let file = """
        data-dir = /var/lib/ordersync
        ping-interval = 20
        log-level = debug
        [master]
        port = 7500
        insecure-storepos = false
        rate-limit = 50
        [slave]
        log-level = warning
        master = ws://10.0.0.1:7420/
        """

    /// `arguments` parsed as `T` with `text` as the settings file (none when nil).
    func parse<T: ParsableCommand>(_: T.Type, _ arguments: [String], file text: String?) throws -> T {
        let config = try text.map { try ConfigFile(path: "/etc/o.conf", text: $0) }
        return try SettingsFile.$current.withValue(config) { try T.parse(arguments) }
    }

    /// The message of the error `arguments` fail with.
    func failure<T: ParsableCommand>(_ type: T.Type, _ arguments: [String], file text: String? = nil) -> String {
        do {
            _ = try parse(type, arguments, file: text)
            XCTFail("\(arguments) parsed")
            return ""
        } catch {
            return OrderSyncCommand.message(for: error)
        }
    }

    func testAFlagWinsOverTheFileWhichWinsOverTheDefault() throws {
        let config = try ConfigFile(path: "/etc/o.conf", text: file)
        try SettingsFile.$current.withValue(config) {
            let fromFile = try MasterCommand.parse([]).nodeConfiguration(dataDirectory: "/d")
            XCTAssertEqual(fromFile.port, 7500)
            XCTAssertEqual(fromFile.pingInterval, .seconds(20))
            XCTAssertEqual(fromFile.rateLimitPerSecond, 50)
            XCTAssertEqual(fromFile.peerTimeout, NodeDefaults.peerTimeout)
            XCTAssertFalse(fromFile.insecureStorePOS)
            let fromFlags = try MasterCommand.parse(["--port", "7600", "--ping-interval", "2", "--insecure-storepos"])
                .nodeConfiguration(dataDirectory: "/d")
            XCTAssertEqual(fromFlags.port, 7600)
            XCTAssertEqual(fromFlags.pingInterval, .seconds(2))
            XCTAssertEqual(fromFlags.rateLimitPerSecond, 50)
            XCTAssertTrue(fromFlags.insecureStorePOS)
            XCTAssertEqual(try MasterCommand.parse([]).settings().logLevel?.value, .debug)
            XCTAssertEqual(try MasterCommand.parse(["--log-level", "error"]).settings().logLevel, Setting(.error, .commandLine))
            let slave = try SlaveCommand.parse([])
            XCTAssertEqual(slave.settings().logLevel?.value, .warning)
            XCTAssertEqual(try slave.nodeConfiguration(dataDirectory: "/d").masterURL, MasterURL(host: "10.0.0.1", port: 7420))
            XCTAssertNil(slave.settings().port, "the master's section is not the slave's")
        }
        let defaults = try parse(MasterCommand.self, [], file: nil).nodeConfiguration(dataDirectory: "/d")
        XCTAssertEqual(defaults.port, NodeDefaults.port)
        XCTAssertEqual(defaults.pingInterval, NodeDefaults.pingInterval)
        XCTAssertEqual(defaults.rateLimitPerSecond, NodeDefaults.rateLimitPerSecond)
        XCTAssertEqual(defaults.httpTLS, .auto)
        XCTAssertEqual(defaults.listenAddress, "0.0.0.0")
    }

    func testTheDataDirectoryComesFromTheFlagTheEnvironmentThenTheFile() throws {
        let config = try ConfigFile(path: "/etc/o.conf", text: file + "\ndata-dir = /slave-dir")
        // The test sets the variable itself: one set outside is put aside, and back afterwards.
        let outside = ProcessInfo.processInfo.environment["ORDERSYNC_DATA_DIR"]
        unsetenv("ORDERSYNC_DATA_DIR")
        defer { if let outside { setenv("ORDERSYNC_DATA_DIR", outside, 1) } }
        try SettingsFile.$current.withValue(config) {
            XCTAssertEqual(try StatusCommand.parse([]).data.resolved(), "/var/lib/ordersync")
            XCTAssertEqual(try SlaveCommand.parse([]).node.data.resolved(for: .slave), "/slave-dir")
            XCTAssertEqual(try MasterCommand.parse([]).node.data.resolved(for: .master), "/var/lib/ordersync")
            XCTAssertEqual(try StatusCommand.parse(["--data-dir", "/flag"]).data.resolved(), "/flag")
            setenv("ORDERSYNC_DATA_DIR", "/env", 1)
            defer { unsetenv("ORDERSYNC_DATA_DIR") }
            XCTAssertEqual(try StatusCommand.parse([]).data.resolved(), "/env")
            XCTAssertEqual(try StatusCommand.parse(["--data-dir", "/flag"]).data.resolved(), "/flag")
        }
        XCTAssertThrowsError(try StatusCommand.parse([]).data.resolved())
    }

    func testABadValueFromTheFileNamesItsLineAndFromAFlagDoesNot() {
        XCTAssertEqual(
            failure(MasterCommand.self, [], file: "[master]\nport = 70000"), "--port must be 0-65535. (port is set at /etc/o.conf:2)")
        XCTAssertEqual(failure(MasterCommand.self, ["--port", "70000"], file: "[master]\nport = 7500"), "--port must be 0-65535.")
        XCTAssertEqual(failure(MasterCommand.self, ["--port", "70000"]), "--port must be 0-65535.")
        XCTAssertEqual(
            failure(SlaveCommand.self, [], file: "[slave]\nmaster = http://x/"),
            "--master must look like ws://HOST:PORT/ (got 'http://x/'). (master is set at /etc/o.conf:2)")
        XCTAssertEqual(
            failure(MasterCommand.self, [], file: "metrics-listen = nowhere"),
            "--metrics-listen must look like 127.0.0.1:9420 or [::1]:9420 (got 'nowhere'). (metrics-listen is set at /etc/o.conf:1)")
    }

    func testACrossOptionCheckSeesTheFileAndTheFlagsTogether() {
        // 15 s is longer than the default ping interval, not than the file's.
        XCTAssertEqual(
            failure(SlaveCommand.self, ["--peer-timeout", "15"], file: "ping-interval = 20"),
            "--peer-timeout must be longer than --ping-interval. (ping-interval is set at /etc/o.conf:1)")
        XCTAssertNoThrow(try parse(SlaveCommand.self, ["--peer-timeout", "15", "--ping-interval", "5"], file: "ping-interval = 20"))
        XCTAssertNoThrow(try parse(SlaveCommand.self, ["--ping-interval", "5"], file: "peer-timeout = 8"))
        XCTAssertEqual(
            failure(MasterCommand.self, ["--storepos-allow", "10.0.0.0/8"], file: "[master]\ninsecure-storepos = no"),
            "--storepos-allow only applies with --insecure-storepos. (insecure-storepos is set at /etc/o.conf:2)")
        XCTAssertNoThrow(try parse(MasterCommand.self, ["--storepos-allow", "10.0.0.0/8"], file: "[master]\ninsecure-storepos = yes"))
        XCTAssertEqual(
            failure(MasterCommand.self, [], file: "max-message-size = 2048\n[master]\njournal-budget = 1024"),
            "--journal-budget must be at least --max-message-size (2048) bytes. "
                + "(journal-budget is set at /etc/o.conf:3) (max-message-size is set at /etc/o.conf:1)")
        XCTAssertEqual(
            failure(SlaveCommand.self, ["--pair", "7KQ4-M2XD-9HZC-B0RT"], file: "[slave]\npair-file = /p"),
            "give the pairing code one way only: --pair, --pair-file or ORDERSYNC_PAIR_CODE. (pair-file is set at /etc/o.conf:2)")
    }

    func testTheWordOptionsAreEnumsAndAWrongWordNamesTheAllowedOnes() throws {
        XCTAssertEqual(try MasterCommand.parse(["--log-level", "trace"]).node.logging.logLevel, .trace)
        XCTAssertEqual(try MasterCommand.parse(["--log-format", "json"]).node.logging.logFormat, .json)
        XCTAssertEqual(try MasterCommand.parse(["--http-tls", "off"]).served.httpTLS, .off)
        XCTAssertEqual(try ExportCommand.parse(["--format", "ndjson", "--status", "in_progress"]).format, .ndjson)
        XCTAssertEqual(try ExportCommand.parse(["--status", "in_progress"]).status, .inProgress)
        XCTAssertEqual(try OrderCommand.List.parse(["--status", "completed"]).status, .completed)
        let uuid = "6F9619FF-8B86-D011-B42D-00C04FC964FF"
        XCTAssertEqual(try OrderCommand.Update.parse([uuid, "--status", "cancelled"]).status, .cancelled)
        let statuses = ["open", "in_progress", "completed", "cancelled"]
        let cases: [(any ParsableCommand.Type, [String], [String])] = [
            (MasterCommand.self, ["--log-level", "loud"], ["trace", "debug", "info", "notice", "warning", "error", "critical"]),
            (SlaveCommand.self, ["--log-format", "xml"], ["text", "json"]),
            (MasterCommand.self, ["--http-tls", "maybe"], ["auto", "on", "off"]),
            (ExportCommand.self, ["--format", "xml"], ["csv", "json", "ndjson"]),
            (ExportCommand.self, ["--status", "done"], statuses),
            (OrderCommand.List.self, ["--status", "done"], statuses),
            (OrderCommand.Update.self, [uuid, "--status", "done"], statuses),
        ]
        for (command, arguments, allowed) in cases {
            do {
                _ = try command.parse(arguments)
                XCTFail("\(arguments) parsed")
            } catch {
                let message = OrderSyncCommand.message(for: error)
                XCTAssertTrue(
                    message.hasPrefix("The value '\(arguments[arguments.count - 1])' is invalid for '\(arguments[arguments.count - 2]) "),
                    message)
                // A few words inline ('a', 'b' or 'c'), more one a line ("  - a").
                for word in allowed {
                    XCTAssertTrue(
                        message.contains("'\(word)'") || message.contains("  - \(word)\n") || message.hasSuffix("  - \(word)"),
                        "\(word): \(message)")
                }
                XCTAssertEqual(OrderSyncCommand.exitCode(for: error), .validationFailure)
            }
        }
        XCTAssertEqual(
            failure(ExportCommand.self, ["--format", "json", "--items"]),
            "--items applies to --format csv (JSON carries the items in each order).")
    }

    func testTheSettingsFileKeysAreTheDaemonsLongFlags() {
        var flags = Set<String>()
        for help in [MasterCommand.helpMessage(columns: 400), SlaveCommand.helpMessage(columns: 400)] {
            for line in help.split(separator: "\n") {
                let words = line.split(separator: " ")
                guard let first = words.first, first.hasPrefix("--") else { continue }
                flags.insert(String(first.dropFirst(2)))
            }
        }
        flags.subtract(["help", "version", "config"])
        XCTAssertEqual(flags, Set(ConfigKey.allCases.map(\.rawValue)))
        XCTAssertTrue(
            MasterCommand.helpMessage(columns: 400).contains(
                "TCP port for terminals (a slave: once promoted); 0 picks any free port. (default: 7420)"))
    }

    /// A slave takes what a master serves (the terminals' port, the dashboard), from its flags or
    /// the file's top: it serves them once promoted, in the same process.
    func testASlaveTakesWhatItServesOncePromoted() throws {
        let config = try ConfigFile(path: "/etc/o.conf", text: "port = 7500\nhttp-listen = 0.0.0.0:8080\n[slave]\nlisten = 10.0.0.2")
        try SettingsFile.$current.withValue(config) {
            let fromFile = try SlaveCommand.parse([]).nodeConfiguration(dataDirectory: "/d")
            XCTAssertEqual(fromFile.port, 7500)
            XCTAssertEqual(fromFile.listenAddress, "10.0.0.2")
            XCTAssertEqual(fromFile.httpListen, MetricsAddress(host: "0.0.0.0", port: 8080))
            XCTAssertEqual(fromFile.httpTLS, .auto)
            let fromFlags = try SlaveCommand.parse(["--http-listen", "127.0.0.1:8081", "--http-tls", "on", "--port", "0"])
                .nodeConfiguration(dataDirectory: "/d")
            XCTAssertEqual(fromFlags.httpListen, MetricsAddress(host: "127.0.0.1", port: 8081))
            XCTAssertEqual(fromFlags.httpTLS, .on)
            XCTAssertEqual(fromFlags.port, 0)
        }
        let plain = try parse(SlaveCommand.self, [], file: nil).nodeConfiguration(dataDirectory: "/d")
        XCTAssertEqual(plain.port, NodeDefaults.port)
        XCTAssertNil(plain.httpListen)
        XCTAssertEqual(
            failure(SlaveCommand.self, ["--http-listen", "8080"]), "--http-listen must look like 0.0.0.0:8080 or [::1]:8080 (got '8080').")
        XCTAssertEqual(
            failure(SlaveCommand.self, [], file: "[slave]\nport = 70000"), "--port must be 0-65535. (port is set at /etc/o.conf:2)")
    }
}
