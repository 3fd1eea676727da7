import Foundation
import Glibc

/// `/etc/ordersync/ordersync.conf`: settings whose keys are the long flags of the commands
/// (`data-dir = /var/lib/ordersync`, `port = 7420`). Flags given on the command line win.
///
/// One `key = value` a line; `#` starts a comment line; blank lines are ignored. A value may be
/// put in double quotes (to keep leading or trailing spaces, or a `#`). Keys before any section
/// apply to every command that has the flag; keys under `[master]` or `[slave]` only to that
/// daemon. A list key (`storepos-allow`) may be repeated, one value a line; any other key may
/// be set once per section. An unknown key, section or a bad value is an error naming the file
/// and line.
public struct ConfigFile: Equatable, Sendable {
    /// A setting read from the file.
    public struct Entry: Equatable, Sendable {
        /// The key (a long flag without its dashes).
        public var key: String
        /// The value as written (unquoted).
        public var value: String
        /// Where it was set: `file:line`.
        public var location: String
        /// The daemon it is for; nil when it was set outside any section.
        public var section: ConfigKey.Role?
    }

    /// The file's path.
    public var path: String
    /// The settings in the order they appear.
    public var entries: [Entry]

    /// The default path of the configuration file.
    public static let defaultPath = "/etc/ordersync/ordersync.conf"

    /// Reads and checks the file at `path`.
    public init(path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw ConfigError("cannot read the configuration file \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR { continue }
                throw ConfigError("cannot read the configuration file \(path): \(String(cString: strerror(errno)))")
            }
            bytes += chunk[..<n]
            guard bytes.count <= 1 << 20 else { throw ConfigError("\(path): larger than 1 MiB, not a settings file") }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ConfigError("\(path): not UTF-8 text")
        }
        try self.init(path: path, text: text)
    }

    /// Parses and checks `text` as the file at `path`.
    public init(path: String, text: String) throws {
        self.path = path
        entries = []
        var section: ConfigKey.Role?
        var seen: [String: String] = [:]
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let location = "\(path):\(index + 1)"
            let line = rawLine.trimmingCharacters(in: .whitespaces.union(CharacterSet(charactersIn: "\r")))
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]") else { throw ConfigError("\(location): a section must look like [master] or [slave]") }
                let name = line.dropFirst().dropLast().trimmingCharacters(in: .whitespaces)
                guard let role = ConfigKey.Role(rawValue: name), role != .everyCommand else {
                    throw ConfigError("\(location): unknown section [\(name)]; use [master] or [slave]")
                }
                section = role
                continue
            }
            guard let equals = line.firstIndex(of: "=") else {
                throw ConfigError("\(location): expected `key = value`, got `\(line)`")
            }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = try Self.unquote(line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces), at: location)
            guard let definition = ConfigKey.named(key) else {
                throw ConfigError(
                    "\(location): unknown key '\(key)'" + (key.hasPrefix("-") ? " (write keys without their dashes)" : "")
                        + "; the keys are the long flags of `ordersync master` and `ordersync slave`, and data-dir")
            }
            if let section, !definition.applies(to: section) {
                throw ConfigError("\(location): '\(key)' is not an option of `ordersync \(section.rawValue)`")
            }
            try definition.check(value, at: location)
            let scope = "\(section?.rawValue ?? "")/\(key)"
            if !definition.isList, let first = seen[scope] {
                throw ConfigError("\(location): '\(key)' is already set at \(first)")
            }
            seen[scope] = location
            entries.append(Entry(key: key, value: value, location: location, section: section))
        }
    }

    private static func unquote(_ value: String, at location: String) throws -> String {
        guard value.hasPrefix("\"") else { return value }
        guard value.count >= 2, value.hasSuffix("\"") else { throw ConfigError("\(location): unterminated quoted value") }
        var result = ""
        var escaped = false
        for c in value.dropFirst().dropLast() {
            if escaped {
                result.append(c)
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else if c == "\"" {
                throw ConfigError("\(location): a quote inside a quoted value must be written \\\"")
            } else {
                result.append(c)
            }
        }
        guard !escaped else { throw ConfigError("\(location): a quoted value ends with a lone backslash") }
        return result
    }
}

/// A configuration file that cannot be read or has a mistake; the message names the file and
/// line.
public struct ConfigError: Error, Equatable, CustomStringConvertible {
    /// What is wrong, and where.
    public var message: String
    /// An error with `message`.
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A key of the configuration file: a long flag, the kind of value it takes and the commands
/// that have it.
public struct ConfigKey: Sendable {
    /// The commands a key applies to.
    public enum Role: String, Sendable {
        /// Every command that takes a data directory (only `data-dir`).
        case everyCommand = "*"
        /// `ordersync master`.
        case master
        /// `ordersync slave`.
        case slave
    }

    /// The kind of value.
    public enum Kind: Sendable {
        case text
        case integer
        case number
        /// true/false (yes/no, on/off, 1/0): a flag that takes no value on the command line.
        case boolean
        /// Repeatable; each line adds a value.
        case list
        case choice([String])
    }

    /// The key, which is the long flag without its dashes.
    public var name: String
    public var kind: Kind
    /// The commands that have the flag.
    public var roles: [Role]

    var isList: Bool {
        if case .list = kind { return true }
        return false
    }

    func applies(to role: Role) -> Bool { roles.contains(role) || roles.contains(.everyCommand) }

    /// Every key. They mirror the daemons' long flags; the package test compares this list
    /// with `ordersync master --help` and `ordersync slave --help`.
    public static let all: [ConfigKey] = {
        let levels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
        let both: [Role] = [.master, .slave]
        return [
            ConfigKey(name: "data-dir", kind: .text, roles: [.everyCommand]),
            ConfigKey(name: "store", kind: .text, roles: both),
            ConfigKey(name: "name", kind: .text, roles: both),
            ConfigKey(name: "service-type", kind: .text, roles: both),
            ConfigKey(name: "log-level", kind: .choice(levels), roles: both),
            ConfigKey(name: "log-format", kind: .choice(["text", "json"]), roles: both),
            ConfigKey(name: "metrics-listen", kind: .text, roles: both),
            ConfigKey(name: "ping-interval", kind: .number, roles: both),
            ConfigKey(name: "peer-timeout", kind: .number, roles: both),
            ConfigKey(name: "handshake-timeout", kind: .number, roles: both),
            ConfigKey(name: "frame-timeout", kind: .number, roles: both),
            ConfigKey(name: "max-message-size", kind: .integer, roles: both),
            ConfigKey(name: "port", kind: .integer, roles: [.master]),
            ConfigKey(name: "listen", kind: .text, roles: [.master]),
            ConfigKey(name: "max-connections", kind: .integer, roles: [.master]),
            ConfigKey(name: "max-handshakes-per-address", kind: .integer, roles: [.master]),
            ConfigKey(name: "max-connections-per-address", kind: .integer, roles: [.master]),
            ConfigKey(name: "rate-limit", kind: .number, roles: [.master]),
            ConfigKey(name: "rate-burst", kind: .number, roles: [.master]),
            ConfigKey(name: "rate-limit-bytes", kind: .integer, roles: [.master]),
            ConfigKey(name: "rate-burst-bytes", kind: .integer, roles: [.master]),
            ConfigKey(name: "snapshot-burst", kind: .integer, roles: [.master]),
            ConfigKey(name: "snapshot-interval", kind: .number, roles: [.master]),
            ConfigKey(name: "journal-budget", kind: .integer, roles: [.master]),
            ConfigKey(name: "insecure-storepos", kind: .boolean, roles: [.master]),
            ConfigKey(name: "storepos-allow", kind: .list, roles: [.master]),
            ConfigKey(name: "http-listen", kind: .text, roles: [.master]),
            ConfigKey(name: "http-tls", kind: .choice(["auto", "on", "off"]), roles: [.master]),
            ConfigKey(name: "master", kind: .text, roles: [.slave]),
            ConfigKey(name: "pair", kind: .text, roles: [.slave]),
        ]
    }()

    /// The key called `name`.
    public static func named(_ name: String) -> ConfigKey? { all.first { $0.name == name } }

    /// The value of a boolean key: nil when `text` is not one.
    public static func boolean(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0": return false
        default: return nil
        }
    }

    func check(_ value: String, at location: String) throws {
        let bad = { (what: String) in ConfigError("\(location): \(name) = \(value): \(what)") }
        switch kind {
        case .text, .list:
            guard !value.isEmpty else { throw bad("the value is empty (comment the line out to use the default)") }
        case .integer:
            guard Int(value) != nil else { throw bad("expected a whole number") }
        case .number:
            guard let v = Double(value), v.isFinite else { throw bad("expected a number") }
        case .boolean:
            guard Self.boolean(value) != nil else { throw bad("expected true or false") }
        case .choice(let choices):
            guard choices.contains(value) else { throw bad("expected one of \(choices.joined(separator: ", "))") }
        }
    }
}
