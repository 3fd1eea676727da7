/// The command line with the configuration file's settings added as flags: a setting is added
/// only when its flag is not on the command line already, so flags win over the file (and
/// `ORDERSYNC_DATA_DIR` wins over the file's `data-dir`).
public struct ConfigArguments: Equatable, Sendable {
    /// The arguments to parse (without the program name).
    public var arguments: [String]
    /// The flags taken from the file, each with where it was set (`file:line`).
    public var origins: [Origin]

    /// A flag taken from the file.
    public struct Origin: Equatable, Sendable {
        /// The flag as added (`--port`).
        public var flag: String
        /// The file and line that set it.
        public var location: String
    }

    /// The environment variable naming the configuration file (as `--config` does).
    public static let environmentVariable = "ORDERSYNC_CONFIG"

    /// Arguments that only ask for help or the version: no settings are added to them.
    static let informational: Set<String> = [
        "-h", "--help", "--version", "--generate-completion-script", "--experimental-dump-help",
    ]

    /// The configuration file for `arguments`: `--config FILE` (or `--config=FILE`), else
    /// `ORDERSYNC_CONFIG`, else ``ConfigFile/defaultPath`` when it exists. Nil: no file. A file
    /// named by the option or the environment must exist; the default one may be missing.
    public static func configFile(arguments: [String], environment: [String: String], defaultExists: (String) -> Bool) throws -> ConfigFile?
    {
        var named: String?
        var index = 0
        while index < arguments.count, arguments[index] != "--" {
            let a = arguments[index]
            if a == "--config" {
                guard index + 1 < arguments.count else { throw ConfigError("--config needs a file") }
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
            guard !named.isEmpty else { throw ConfigError("--config needs a file") }
            return try ConfigFile(path: named)
        }
        return defaultExists(ConfigFile.defaultPath) ? try ConfigFile(path: ConfigFile.defaultPath) : nil
    }

    /// `arguments` with the settings of `file` that apply to their command added. `groups`
    /// names the commands that only group subcommands (`order`, `terminal`, `key`).
    public init(_ arguments: [String], file: ConfigFile?, environment: [String: String], groups: Set<String>) {
        self.arguments = arguments
        origins = []
        guard let file, let command = arguments.first, !command.hasPrefix("-"), command != "help" else { return }
        let given = arguments.prefix { $0 != "--" }
        guard !given.contains(where: Self.informational.contains) else { return }
        if groups.contains(command) {
            guard arguments.count > 1, !arguments[1].hasPrefix("-") else { return }
        }
        let role = ConfigKey.Role(rawValue: command).flatMap { $0 == .everyCommand ? nil : $0 }
        var added: [String] = []
        for key in ConfigKey.all {
            let flag = "--" + key.name
            if given.contains(where: { $0 == flag || $0.hasPrefix(flag + "=") }) { continue }
            if key.name == "data-dir", let d = environment["ORDERSYNC_DATA_DIR"], !d.isEmpty { continue }
            let entries = Self.entries(of: key, in: file, for: role)
            for entry in entries {
                if case .boolean = key.kind {
                    guard ConfigKey.boolean(entry.value) == true else { continue }
                    added.append(flag)
                } else {
                    added += [flag, entry.value]
                }
                origins.append(Origin(flag: flag, location: entry.location))
            }
        }
        let end = arguments.firstIndex(of: "--") ?? arguments.count
        self.arguments.insert(contentsOf: added, at: end)
    }

    /// The file's values of `key` for `role` (nil: a command that is not a daemon): a daemon's
    /// own section wins over the top of the file; a non-list key gives its last value.
    private static func entries(of key: ConfigKey, in file: ConfigFile, for role: ConfigKey.Role?) -> [ConfigFile.Entry] {
        let applies = role.map(key.applies(to:)) ?? key.roles.contains(.everyCommand)
        guard applies else { return [] }
        let all = file.entries.filter { $0.key == key.name }
        let own = role.map { r in all.filter { $0.section == r } } ?? []
        let chosen = own.isEmpty ? all.filter { $0.section == nil } : own
        return key.isList ? chosen : Array(chosen.suffix(1))
    }

    /// Where the flag named in `message` was set, when it came from the file: for an error about
    /// a value, which the file may have given.
    public func origin(mentionedIn message: String) -> Origin? {
        origins.first { origin in
            // "--port must be ..." but not "--port-range"
            var rest = Substring(message)
            while let r = rest.range(of: origin.flag) {
                let next = rest[r.upperBound...].first
                if next == nil || !(next!.isLetter || next!.isNumber || next! == "-") { return true }
                rest = rest[r.upperBound...]
            }
            return false
        }
    }
}
