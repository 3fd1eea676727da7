import Foundation
import SyncCore
import XCTest

@testable import OrderSyncNode

/// The settings file (`/etc/ordersync/ordersync.conf`) parsed into typed settings, its errors, and
/// how a daemon's section and the command line take over from the top of the file.
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

    func testAGoodFileGivesTypedSettingsPerSectionWithTheirLines() throws {
        let file = try ConfigFile(path: "/etc/x.conf", text: good)
        let at = { (key: ConfigKey, line: Int) in SettingOrigin.file(key: key, path: "/etc/x.conf", line: line) }
        XCTAssertEqual(file.top.dataDirectory, Setting("/var/lib/ordersync", at(.dataDir, 2)))
        XCTAssertEqual(file.top.name, Setting("  Front counter  ", at(.name, 3)))
        XCTAssertEqual(file.top.logLevel, Setting(.debug, at(.logLevel, 4)))
        let master = try XCTUnwrap(file.sections[.master])
        XCTAssertEqual(master.port, Setting(7500, at(.port, 7)))
        XCTAssertEqual(master.insecureStorePOS, Setting(true, at(.insecureStorePOS, 8)))
        XCTAssertEqual(
            master.storePOSAllow, [Setting("192.168.1.0/24", at(.storePOSAllow, 9)), Setting("fd00::/8", at(.storePOSAllow, 10))])
        XCTAssertNil(master.logLevel)
        let slave = try XCTUnwrap(file.sections[.slave])
        XCTAssertEqual(slave.master, Setting("ws://10.0.0.1:7420/", at(.master, 13)))
        XCTAssertEqual(slave.logLevel, Setting(.warning, at(.logLevel, 14)))
        XCTAssertEqual(at(.port, 7).note, " (port is set at /etc/x.conf:7)")
        XCTAssertEqual(SettingOrigin.commandLine.note, "")
    }

    func testTheMasterGetsItsSectionOverTheTopOfTheFile() throws {
        let file = try ConfigFile(path: "/etc/x.conf", text: good)
        let s = file.settings(for: .master)
        XCTAssertEqual(s.dataDirectory?.value, "/var/lib/ordersync")
        XCTAssertEqual(s.name?.value, "  Front counter  ")
        XCTAssertEqual(s.logLevel?.value, .debug)
        XCTAssertEqual(s.port?.value, 7500)
        XCTAssertEqual(s.insecureStorePOS?.value, true)
        XCTAssertEqual(s.storePOSAllow.map(\.value), ["192.168.1.0/24", "fd00::/8"])
        XCTAssertNil(s.master, "the slave's section is not the master's")
    }

    func testTheSlaveGetsItsOwnSectionBeforeTheTopOfTheFile() throws {
        let file = try ConfigFile(path: "/etc/x.conf", text: good)
        let s = file.settings(for: .slave)
        XCTAssertEqual(s.logLevel, Setting(.warning, .file(key: .logLevel, path: "/etc/x.conf", line: 14)))
        XCTAssertEqual(s.master?.value, "ws://10.0.0.1:7420/")
        XCTAssertEqual(s.dataDirectory?.value, "/var/lib/ordersync")
        XCTAssertNil(s.port)
        XCTAssertEqual(s.storePOSAllow, [])
    }

    func testOtherCommandsGetOnlyTheTopOfTheFile() throws {
        let file = try ConfigFile(path: "/etc/x.conf", text: good)
        XCTAssertEqual(file.settings(for: nil), file.top)
        XCTAssertNil(file.settings(for: nil).port)
        XCTAssertEqual(file.settings(for: nil).logLevel?.value, .debug)
    }

    func testFlagsWinOverTheFileFieldByField() throws {
        let file = try ConfigFile(path: "/etc/x.conf", text: good)
        var flags = NodeSettings()
        flags.port = Setting(7600, .commandLine)
        flags.storePOSAllow = [Setting("10.0.0.0/8", .commandLine)]
        let s = flags.over(file.settings(for: .master))
        XCTAssertEqual(s.port, Setting(7600, .commandLine))
        XCTAssertEqual(s.storePOSAllow, [Setting("10.0.0.0/8", .commandLine)], "a list is taken whole from one side")
        XCTAssertEqual(s.name?.value, "  Front counter  ")
        XCTAssertEqual(s.insecureStorePOS?.value, true)
        XCTAssertEqual(NodeSettings().over(s), s)
        XCTAssertEqual(s.over(NodeSettings()), s)
    }

    func testASectionsListReplacesTheTopsAndKeysMayBeSetOncePerSection() throws {
        let file = try ConfigFile(
            path: "c", text: "storepos-allow = 10.0.0.0/8\nport = 1\n[master]\nstorepos-allow = fd00::/8\nport = 2\n[slave]\n[master]\n")
        XCTAssertEqual(file.settings(for: .master).storePOSAllow.map(\.value), ["fd00::/8"])
        XCTAssertEqual(file.settings(for: .master).port?.value, 2)
        XCTAssertEqual(file.top.port?.value, 1)
        XCTAssertThrowsError(try ConfigFile(path: "c", text: "[master]\nport = 1\n[slave]\n[master]\nport = 2")) { error in
            XCTAssertEqual(error as? ConfigError, ConfigError(.alreadySet(.port, firstLine: 2), path: "c", line: 5))
            XCTAssertEqual("\(error)", "c:5: 'port' is already set at c:2")
        }
    }

    func testEveryKeySetsAFieldOfItsOwnAndRefusesAValueNotOfItsKind() throws {
        var fields: [String: ConfigKey] = [:]
        for key in ConfigKey.allCases {
            let good: String
            let bad: String?
            switch key.kind {
            case .text, .list: (good, bad) = ("x", nil)
            case .integer: (good, bad) = ("12", "1.5")
            case .number: (good, bad) = ("0.25", "inf")
            case .boolean: (good, bad) = ("yes", "maybe")
            case .choice(let words): (good, bad) = (words[0], "loud")
            }
            var s = NodeSettings()
            XCTAssertNoThrow(try s.set(key, good, path: "c", line: 1), key.rawValue)
            let set = Self.fieldsSet(in: s)
            XCTAssertEqual(set.count, 1, "\(key.rawValue) sets \(set)")
            for field in set {
                XCTAssertNil(fields[field], "\(key.rawValue) sets \(field), the field of \(fields[field]?.rawValue ?? "")")
                fields[field] = key
            }
            if let bad {
                XCTAssertThrowsError(try s.set(key, bad, path: "c", line: 1), key.rawValue) { error in
                    XCTAssertEqual(error as? ConfigError.Problem, .badValue(key, value: bad, expected: key.kind))
                }
            }
            var empty = NodeSettings()
            XCTAssertThrowsError(try empty.set(key, "", path: "c", line: 1), key.rawValue)
        }
    }

    /// The names of the fields of `settings` that hold a value.
    static func fieldsSet(in settings: NodeSettings) -> [String] {
        Mirror(reflecting: settings).children.compactMap { child in
            let inner = Mirror(reflecting: child.value)
            return inner.children.isEmpty ? nil : child.label
        }
    }

    func testTheKeysAreTheDaemonsFlagsEvenThoseTheFirstListMissed() throws {
        let file = try ConfigFile(
            path: "c",
            text:
                "[master]\nhandshake-rate = 4\nhandshake-burst-total = 9\nstorepos-keepalive = 12\nhttp-tls = off\n[slave]\npair-file = /p")
        XCTAssertEqual(file.sections[.master]?.handshakeRate?.value, 4)
        XCTAssertEqual(file.sections[.master]?.handshakeBurstTotal?.value, 9)
        XCTAssertEqual(file.sections[.master]?.storePOSKeepAlive?.value, 12)
        XCTAssertEqual(file.sections[.master]?.httpTLS?.value, .off)
        XCTAssertEqual(file.sections[.slave]?.pairFile?.value, "/p")
    }

    func testAnUnknownKeyNamesTheFileAndLine() {
        XCTAssertThrowsError(try ConfigFile(path: "/etc/x.conf", text: "data-dir = /d\nprot = 7420\n")) { error in
            XCTAssertEqual(error as? ConfigError, ConfigError(.unknownKey("prot"), path: "/etc/x.conf", line: 2))
            XCTAssertEqual(
                "\(error)",
                "/etc/x.conf:2: unknown key 'prot'; the keys are the long flags of `ordersync master` and `ordersync slave`, and data-dir")
        }
        XCTAssertThrowsError(try ConfigFile(path: "c", text: "--port = 1")) { error in
            XCTAssertEqual((error as? ConfigError)?.problem, .unknownKey("--port"))
            XCTAssertTrue("\(error)".hasPrefix("c:1: unknown key '--port' (write keys without their dashes)"), "\(error)")
        }
        XCTAssertThrowsError(try ConfigFile(path: "c", text: "[slave]\nsync-replicas = 1")) { error in
            XCTAssertEqual(error as? ConfigError, ConfigError(.notAnOption(.syncReplicas, of: .slave), path: "c", line: 2))
            XCTAssertEqual((error as? ConfigError)?.key, .syncReplicas)
            XCTAssertEqual("\(error)", "c:2: 'sync-replicas' is not an option of `ordersync slave`")
        }
        XCTAssertThrowsError(try ConfigFile(path: "c", text: "[pos]")) { error in
            XCTAssertEqual((error as? ConfigError)?.problem, .unknownSection("pos"))
            XCTAssertEqual("\(error)", "c:1: unknown section [pos]; use [master] or [slave]")
        }
    }

    func testABadValueNamesTheFileAndLine() {
        let levels = ConfigKey.Kind.choice(["trace", "debug", "info", "notice", "warning", "error", "critical"])
        let cases: [(String, ConfigError.Problem, Int, String)] = [
            ("port = 74x20", .badValue(.port, value: "74x20", expected: .integer), 1, "c:1: port = 74x20: expected a whole number"),
            ("port =", .badValue(.port, value: "", expected: .integer), 1, "c:1: port = : expected a whole number"),
            (
                "ping-interval = soon", .badValue(.pingInterval, value: "soon", expected: .number), 1,
                "c:1: ping-interval = soon: expected a number"
            ),
            (
                "insecure-storepos = maybe", .badValue(.insecureStorePOS, value: "maybe", expected: .boolean), 1,
                "c:1: insecure-storepos = maybe: expected true or false"
            ),
            (
                "log-level = loud", .badValue(.logLevel, value: "loud", expected: levels), 1,
                "c:1: log-level = loud: expected one of trace, debug, info, notice, warning, error, critical"
            ),
            (
                "[master]\nhttp-tls = maybe", .badValue(.httpTLS, value: "maybe", expected: .choice(["auto", "on", "off"])), 2,
                "c:2: http-tls = maybe: expected one of auto, on, off"
            ),
            (
                "log-format = xml", .badValue(.logFormat, value: "xml", expected: .choice(["text", "json"])), 1,
                "c:1: log-format = xml: expected one of text, json"
            ),
            ("name =", .emptyValue(.name), 1, "c:1: name = : the value is empty (comment the line out to use the default)"),
            ("name = \"Till", .unterminatedQuote, 1, "c:1: unterminated quoted value"),
            ("name = \"a\"b\"", .quoteInsideQuotes, 1, "c:1: a quote inside a quoted value must be written \\\""),
            ("name = \"a\\\"", .trailingBackslash, 1, "c:1: a quoted value ends with a lone backslash"),
            ("just words", .notKeyValue(line: "just words"), 1, "c:1: expected `key = value`, got `just words`"),
            ("[master", .malformedSection, 1, "c:1: a section must look like [master] or [slave]"),
            ("port = 1\nport = 2", .alreadySet(.port, firstLine: 1), 2, "c:2: 'port' is already set at c:1"),
            ("port = 1\nport = x", .badValue(.port, value: "x", expected: .integer), 2, "c:2: port = x: expected a whole number"),
        ]
        for (text, problem, line, message) in cases {
            XCTAssertThrowsError(try ConfigFile(path: "c", text: text), text) { error in
                XCTAssertEqual(error as? ConfigError, ConfigError(problem, path: "c", line: line), text)
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

        XCTAssertEqual(try ConfigFile.locate(arguments: ["master", "--config", path], environment: [:], defaultExists: never)?.path, path)
        XCTAssertEqual(
            try ConfigFile.locate(arguments: ["master", "--config=\(path)"], environment: [:], defaultExists: never)?.path, path)
        XCTAssertEqual(
            try ConfigFile.locate(arguments: ["master"], environment: ["ORDERSYNC_CONFIG": path], defaultExists: never)?.path, path)
        XCTAssertEqual(
            try ConfigFile.locate(arguments: ["master"], environment: ["ORDERSYNC_CONFIG": path], defaultExists: never)?.top.port?.value,
            7421)
        XCTAssertNil(try ConfigFile.locate(arguments: ["master"], environment: [:]) { $0 == "/nowhere" })
        XCTAssertNil(try ConfigFile.locate(arguments: ["order", "create", "--", "--config", path], environment: [:]) { _ in false })
        XCTAssertThrowsError(
            try ConfigFile.locate(arguments: ["master", "--config", dir + "/missing"], environment: [:], defaultExists: never)
        ) {
            XCTAssertEqual($0 as? ConfigError, ConfigError(.unreadable(reason: "No such file or directory"), path: dir + "/missing"))
            XCTAssertEqual("\($0)", "cannot read the configuration file \(dir)/missing: No such file or directory")
        }
        XCTAssertThrowsError(try ConfigFile.locate(arguments: ["master", "--config"], environment: [:], defaultExists: never)) {
            XCTAssertEqual($0 as? ConfigError, ConfigError(.noFileNamed, path: nil))
            XCTAssertEqual("\($0)", "--config needs a file")
        }
        let binary = dir + "/b.conf"
        try Data([0x70, 0x3D, 0xFF]).write(to: URL(fileURLWithPath: binary))
        XCTAssertThrowsError(try ConfigFile(path: binary)) {
            XCTAssertEqual($0 as? ConfigError, ConfigError(.notUTF8, path: binary))
            XCTAssertEqual("\($0)", "\(binary): not UTF-8 text")
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
