import Foundation
import SyncCore
import XCTest

@testable import OrderSyncNode

/// The settings file (`/etc/ordersync/ordersync.conf`) and how its settings become flags.
final class ConfigFileTests: XCTestCase {
    let good = """
        # the shop's settings
        data-dir = /var/lib/ordersync
        name = "  Front counter  "
        log-level = debug

        [master]
        port = 7500
        insecure-storepos = yes
        storepos-allow = 192.168.1.0/24
        storepos-allow = fd00::/8

        [slave]
        master = ws://10.0.0.1:7420/
        log-level = warning
        """

    func testAGoodFileGivesEveryEntryWithItsLine() throws {
        let file = try ConfigFile(path: "/etc/x.conf", text: good)
        XCTAssertEqual(
            file.entries.map { "\($0.key)=\($0.value)@\($0.location)" },
            [
                "data-dir=/var/lib/ordersync@/etc/x.conf:2", "name=  Front counter  @/etc/x.conf:3",
                "log-level=debug@/etc/x.conf:4", "port=7500@/etc/x.conf:7", "insecure-storepos=yes@/etc/x.conf:8",
                "storepos-allow=192.168.1.0/24@/etc/x.conf:9", "storepos-allow=fd00::/8@/etc/x.conf:10",
                "master=ws://10.0.0.1:7420/@/etc/x.conf:13", "log-level=warning@/etc/x.conf:14",
            ])
        XCTAssertEqual(file.entries[3].section, .master)
        XCTAssertNil(file.entries[0].section)
    }

    func testTheMasterGetsItsSettingsAsFlags() throws {
        let file = try ConfigFile(path: "/etc/x.conf", text: good)
        let args = ConfigArguments(["master"], file: file, environment: [:], groups: [])
        XCTAssertEqual(
            args.arguments,
            [
                "master", "--data-dir", "/var/lib/ordersync", "--name", "  Front counter  ", "--log-level", "debug",
                "--port", "7500", "--insecure-storepos", "--storepos-allow", "192.168.1.0/24", "--storepos-allow", "fd00::/8",
            ])
        XCTAssertEqual(args.origin(mentionedIn: "--port must be 0-65535.")?.location, "/etc/x.conf:7")
        XCTAssertNil(args.origin(mentionedIn: "--port-range is wrong"))
    }

    func testTheSlaveGetsItsOwnSectionBeforeTheTopOfTheFile() throws {
        let file = try ConfigFile(path: "/etc/x.conf", text: good)
        let args = ConfigArguments(["slave"], file: file, environment: [:], groups: [])
        XCTAssertEqual(
            args.arguments,
            [
                "slave", "--data-dir", "/var/lib/ordersync", "--name", "  Front counter  ", "--log-level", "warning",
                "--master", "ws://10.0.0.1:7420/",
            ])
    }

    func testFlagsWinOverTheFile() throws {
        let file = try ConfigFile(path: "/etc/x.conf", text: good)
        let args = ConfigArguments(
            ["master", "--port=7600", "--data-dir", "/srv/o", "--storepos-allow", "10.0.0.0/8"], file: file, environment: [:],
            groups: [])
        XCTAssertEqual(
            args.arguments,
            [
                "master", "--port=7600", "--data-dir", "/srv/o", "--storepos-allow", "10.0.0.0/8",
                "--name", "  Front counter  ", "--log-level", "debug", "--insecure-storepos",
            ])
        // The environment's data directory wins over the file's too.
        let fromEnvironment = ConfigArguments(["status"], file: file, environment: ["ORDERSYNC_DATA_DIR": "/d"], groups: [])
        XCTAssertEqual(fromEnvironment.arguments, ["status"])
    }

    func testOtherCommandsGetOnlyTheDataDirectory() throws {
        let file = try ConfigFile(path: "/etc/x.conf", text: good)
        XCTAssertEqual(
            ConfigArguments(["order", "show", "u1"], file: file, environment: [:], groups: ["order"]).arguments,
            ["order", "show", "u1", "--data-dir", "/var/lib/ordersync"])
        XCTAssertEqual(
            ConfigArguments(["order", "create", "--", "-x"], file: file, environment: [:], groups: ["order"]).arguments,
            ["order", "create", "--data-dir", "/var/lib/ordersync", "--", "-x"])
        for untouched in [["order"], ["--version"], ["master", "--help"], ["help", "master"], []] {
            XCTAssertEqual(ConfigArguments(untouched, file: file, environment: [:], groups: ["order"]).arguments, untouched)
        }
    }

    func testAnUnknownKeyNamesTheFileAndLine() {
        XCTAssertThrowsError(try ConfigFile(path: "/etc/x.conf", text: "data-dir = /d\nprot = 7420\n")) { error in
            XCTAssertEqual(
                (error as? ConfigError)?.message,
                "/etc/x.conf:2: unknown key 'prot'; the keys are the long flags of `ordersync master` and `ordersync slave`, and data-dir")
        }
        XCTAssertThrowsError(try ConfigFile(path: "c", text: "--port = 1")) { error in
            XCTAssertTrue("\(error)".hasPrefix("c:1: unknown key '--port' (write keys without their dashes)"), "\(error)")
        }
        XCTAssertThrowsError(try ConfigFile(path: "c", text: "[slave]\nport = 1")) { error in
            XCTAssertEqual("\(error)", "c:2: 'port' is not an option of `ordersync slave`")
        }
        XCTAssertThrowsError(try ConfigFile(path: "c", text: "[pos]")) { error in
            XCTAssertEqual("\(error)", "c:1: unknown section [pos]; use [master] or [slave]")
        }
    }

    func testABadValueNamesTheFileAndLine() {
        let cases: [(String, String)] = [
            ("port = 74x20", "c:1: port = 74x20: expected a whole number"),
            ("ping-interval = soon", "c:1: ping-interval = soon: expected a number"),
            ("insecure-storepos = maybe", "c:1: insecure-storepos = maybe: expected true or false"),
            ("log-level = loud", "c:1: log-level = loud: expected one of trace, debug, info, notice, warning, error, critical"),
            ("name =", "c:1: name = : the value is empty (comment the line out to use the default)"),
            ("name = \"Till", "c:1: unterminated quoted value"),
            ("just words", "c:1: expected `key = value`, got `just words`"),
            ("port = 1\nport = 2", "c:2: 'port' is already set at c:1"),
        ]
        for (text, message) in cases {
            XCTAssertThrowsError(try ConfigFile(path: "c", text: text), text) { error in
                XCTAssertEqual("\(error)", message)
            }
        }
    }

    func testTheFileComesFromTheOptionTheEnvironmentOrTheDefault() throws {
        let dir = NSTemporaryDirectory() + "ordersync-config-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a.conf"
        try "port = 7421\n".write(toFile: path, atomically: true, encoding: .utf8)
        let never: (String) -> Bool = { _ in
            XCTFail("the default file was looked for"); return false
        }

        XCTAssertEqual(
            try ConfigArguments.configFile(arguments: ["master", "--config", path], environment: [:], defaultExists: never)?.path, path)
        XCTAssertEqual(
            try ConfigArguments.configFile(arguments: ["master", "--config=\(path)"], environment: [:], defaultExists: never)?.path, path)
        XCTAssertEqual(
            try ConfigArguments.configFile(arguments: ["master"], environment: ["ORDERSYNC_CONFIG": path], defaultExists: never)?.path, path
        )
        XCTAssertNil(try ConfigArguments.configFile(arguments: ["master"], environment: [:]) { $0 == "/nowhere" })
        XCTAssertThrowsError(
            try ConfigArguments.configFile(arguments: ["master", "--config", dir + "/missing"], environment: [:], defaultExists: never)
        ) {
            XCTAssertEqual("\($0)", "cannot read the configuration file \(dir)/missing: No such file or directory")
        }
    }

    func testTheTerminalLimitsAreTheConfiguredOnes() {
        var c = NodeConfiguration(
            role: .master, dataDirectory: "/tmp/x", store: "s", name: nil, serviceType: NodeDefaults.serviceType, port: 0,
            listenAddress: "127.0.0.1", masterURL: nil)
        let defaults = c.terminalLimits
        XCTAssertEqual(defaults.bytes, TerminalLimits().bytes)
        XCTAssertEqual(defaults.snapshots.capacity, 4)
        XCTAssertEqual(defaults.snapshots.perSecond, 1.0 / 15, accuracy: 1e-12)
        XCTAssertEqual(defaults.journalBytesPerHour, TerminalLimits().journalBytesPerHour)
        c.rateLimitBytesPerSecond = 2048
        c.rateBurstBytes = 1 << 20
        c.snapshotBurst = 2
        c.snapshotInterval = .milliseconds(2500)
        c.journalBudgetBytesPerHour = 3_600_000
        let limits = c.terminalLimits
        XCTAssertEqual(limits.bytes, Allowance(perSecond: 2048, capacity: 1_048_576))
        XCTAssertEqual(limits.snapshots.perSecond, 0.4, accuracy: 1e-12)
        XCTAssertEqual(limits.snapshots.capacity, 2)
        XCTAssertEqual(limits.journal, Allowance(perSecond: 1000, capacity: 3_600_000))
    }
}
