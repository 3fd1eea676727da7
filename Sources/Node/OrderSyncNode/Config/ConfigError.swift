/// A settings file that cannot be read or has a mistake: the file, the line, the key when there
/// is one, and what is wrong. Its description is the message the CLI prints
/// (`/etc/ordersync/ordersync.conf:12: port = 74x20: expected a whole number`).
public struct ConfigError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What is wrong.
    public enum Problem: Error, Equatable, Sendable {
        /// `--config` (or `ORDERSYNC_CONFIG`) without a file name.
        case noFileNamed
        /// The file cannot be opened or read (the system's reason).
        case unreadable(reason: String)
        /// More than 1 MiB.
        case tooLarge
        /// Not UTF-8.
        case notUTF8
        /// A line starting with `[` that does not end with `]`.
        case malformedSection
        /// A section other than `[master]` and `[slave]`.
        case unknownSection(String)
        /// A line that is neither a section, a comment nor `key = value`.
        case notKeyValue(line: String)
        /// A key that is not a long flag of the daemons.
        case unknownKey(String)
        /// A key under the section of a daemon that does not have the flag.
        case notAnOption(ConfigKey, of: ConfigKey.Role)
        /// An empty value.
        case emptyValue(ConfigKey)
        /// A value that is not of the key's kind.
        case badValue(ConfigKey, value: String, expected: ConfigKey.Kind)
        /// A key that is not a list, set twice in one section.
        case alreadySet(ConfigKey, firstLine: Int)
        /// A value opened with `"` and not closed.
        case unterminatedQuote
        /// A bare `"` inside a quoted value.
        case quoteInsideQuotes
        /// A quoted value ending with `\`.
        case trailingBackslash
    }

    /// The file; nil when none was named.
    public var path: String?
    /// The line (from 1); nil for a problem of the whole file.
    public var line: Int?
    /// What is wrong.
    public var problem: Problem

    /// An error at `line` of `path` (or of the whole file).
    public init(_ problem: Problem, path: String?, line: Int? = nil) {
        self.problem = problem
        self.path = path
        self.line = line
    }

    /// The key the error is about, if any.
    public var key: ConfigKey? {
        switch problem {
        case .notAnOption(let k, _), .emptyValue(let k), .badValue(let k, _, _), .alreadySet(let k, _): return k
        default: return nil
        }
    }

    /// The message, naming the file and line.
    public var description: String {
        let place = [path, line.map(String.init)].compactMap { $0 }.joined(separator: ":")
        switch problem {
        case .noFileNamed: return "--config needs a file"
        case .unreadable(let reason): return "cannot read the configuration file \(place): \(reason)"
        case .tooLarge: return "\(place): larger than 1 MiB, not a settings file"
        case .notUTF8: return "\(place): not UTF-8 text"
        default: return "\(place): \(what)"
        }
    }

    /// What is wrong with a line.
    private var what: String {
        switch problem {
        case .malformedSection: return "a section must look like [master] or [slave]"
        case .unknownSection(let name): return "unknown section [\(name)]; use [master] or [slave]"
        case .notKeyValue(let line): return "expected `key = value`, got `\(line)`"
        case .unknownKey(let key):
            return "unknown key '\(key)'" + (key.hasPrefix("-") ? " (write keys without their dashes)" : "")
                + "; the keys are the long flags of `ordersync master` and `ordersync slave`, and data-dir"
        case .notAnOption(let key, let role): return "'\(key.rawValue)' is not an option of `ordersync \(role.rawValue)`"
        case .emptyValue(let key): return "\(key.rawValue) = : the value is empty (comment the line out to use the default)"
        case .badValue(let key, let value, let kind): return "\(key.rawValue) = \(value): \(Self.expectation(kind))"
        case .alreadySet(let key, let first): return "'\(key.rawValue)' is already set at \(path ?? ""):\(first)"
        case .unterminatedQuote: return "unterminated quoted value"
        case .quoteInsideQuotes: return "a quote inside a quoted value must be written \\\""
        case .trailingBackslash: return "a quoted value ends with a lone backslash"
        case .noFileNamed, .unreadable, .tooLarge, .notUTF8: return ""
        }
    }

    private static func expectation(_ kind: ConfigKey.Kind) -> String {
        switch kind {
        case .text, .list: return "expected a value"
        case .integer: return "expected a whole number"
        case .number: return "expected a number"
        case .boolean: return "expected true or false"
        case .choice(let words): return "expected one of \(words.joined(separator: ", "))"
        }
    }
}
