import Foundation
import Glibc

/// `/etc/ordersync/ordersync.conf`: settings whose keys are the long flags of the daemons
/// (`data-dir = /var/lib/ordersync`, `port = 7420`), parsed into typed ``NodeSettings``, one per
/// section. Flags given on the command line win, field by field.
///
/// One `key = value` a line; `#` starts a comment line; blank lines are ignored. A value may be
/// put in double quotes (to keep leading or trailing spaces, or a `#`). Keys before any section
/// apply to every command that has the flag; keys under `[master]` or `[slave]` only to that
/// daemon. A list key (`storepos-allow`) may be repeated, one value a line; any other key may
/// be set once per section. An unknown key, section or a bad value is a ``ConfigError`` naming
/// the file and line.
public struct ConfigFile: Equatable, Sendable {
    /// The file's path.
    public var path: String
    /// The settings before any section.
    public var top: NodeSettings
    /// The settings under `[master]` and `[slave]`.
    public var sections: [ConfigKey.Role: NodeSettings]

    /// The default path of the configuration file.
    public static let defaultPath = "/etc/ordersync/ordersync.conf"

    /// The environment variable naming the configuration file (as `--config` does).
    public static let environmentVariable = "ORDERSYNC_CONFIG"

    /// The settings of the file for `role`'s daemon: its own section over the top of the file,
    /// key by key (a list is taken whole from one of them). Nil: a command that is not a daemon,
    /// which gets the top of the file only.
    public func settings(for role: ConfigKey.Role?) -> NodeSettings {
        guard let role, let own = sections[role] else { return top }
        return own.over(top)
    }

    /// Reads and checks the file at `path`.
    public init(path: String) throws(ConfigError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ConfigError(.unreadable(reason: String(cString: strerror(errno))), path: path) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR { continue }
                throw ConfigError(.unreadable(reason: String(cString: strerror(errno))), path: path)
            }
            bytes += chunk[..<n]
            guard bytes.count <= 1 << 20 else { throw ConfigError(.tooLarge, path: path) }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw ConfigError(.notUTF8, path: path) }
        try self.init(path: path, text: text)
    }

    /// Parses and checks `text` as the file at `path`.
    public init(path: String, text: String) throws(ConfigError) {
        self.path = path
        top = NodeSettings()
        sections = [:]
        var section: ConfigKey.Role?
        var seen: [ConfigKey.Role?: [ConfigKey: Int]] = [:]
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            let fail = { (problem: ConfigError.Problem) in ConfigError(problem, path: path, line: number) }
            let line = rawLine.trimmingCharacters(in: .whitespaces.union(CharacterSet(charactersIn: "\r")))
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]") else { throw fail(.malformedSection) }
                let name = line.dropFirst().dropLast().trimmingCharacters(in: .whitespaces)
                guard let role = ConfigKey.Role(rawValue: name) else { throw fail(.unknownSection(name)) }
                section = role
                continue
            }
            guard let equals = line.firstIndex(of: "=") else { throw fail(.notKeyValue(line: line)) }
            let name = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value: String
            do throws(ConfigError.Problem) {
                value = try Self.unquote(line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces))
            } catch {
                throw fail(error)
            }
            guard let key = ConfigKey(rawValue: name) else { throw fail(.unknownKey(name)) }
            if let section, !key.roles.contains(section) { throw fail(.notAnOption(key, of: section)) }
            do throws(ConfigError.Problem) {
                if let section {
                    try sections[section, default: NodeSettings()].set(key, value, path: path, line: number)
                } else {
                    try top.set(key, value, path: path, line: number)
                }
            } catch {
                throw fail(error)
            }
            // Checked after the value, as a bad value is the first thing to mend.
            if key.kind != .list, let first = seen[section]?[key] { throw fail(.alreadySet(key, firstLine: first)) }
            seen[section, default: [:]][key] = number
        }
    }

    /// The value without its double quotes, with `\"` and `\\` unescaped.
    private static func unquote(_ value: String) throws(ConfigError.Problem) -> String {
        guard value.hasPrefix("\"") else { return value }
        guard value.count >= 2, value.hasSuffix("\"") else { throw .unterminatedQuote }
        var result = ""
        var escaped = false
        for c in value.dropFirst().dropLast() {
            if escaped {
                result.append(c)
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else if c == "\"" {
                throw .quoteInsideQuotes
            } else {
                result.append(c)
            }
        }
        guard !escaped else { throw .trailingBackslash }
        return result
    }

    /// The settings file for a command line: `--config FILE` (or `--config=FILE`) among
    /// `arguments` before any `--`, else `ORDERSYNC_CONFIG`, else ``defaultPath`` when it exists.
    /// Nil: no file. A file named by the option or the environment must exist; the default one
    /// may be missing.
    public static func locate(
        arguments: [String], environment: [String: String], defaultExists: (String) -> Bool
    ) throws(ConfigError) -> ConfigFile? {
        var named: String?
        var index = 0
        while index < arguments.count, arguments[index] != "--" {
            let a = arguments[index]
            if a == "--config" {
                guard index + 1 < arguments.count else { throw ConfigError(.noFileNamed, path: nil) }
                named = arguments[index + 1]
                index += 1
            } else if a.hasPrefix("--config=") {
                named = String(a.dropFirst("--config=".count))
            }
            index += 1
        }
        if named == nil, let fromEnvironment = environment[environmentVariable], !fromEnvironment.isEmpty {
            named = fromEnvironment
        }
        if let named {
            guard !named.isEmpty else { throw ConfigError(.noFileNamed, path: nil) }
            return try ConfigFile(path: named)
        }
        return defaultExists(defaultPath) ? try ConfigFile(path: defaultPath) : nil
    }
}
