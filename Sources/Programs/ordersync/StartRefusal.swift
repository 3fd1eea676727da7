import ArgumentParser
import Foundation
import Logging
import NodePolicy
import OrderSyncNode

/// A daemon (`ordersync master`, `ordersync slave`) that refuses to start: one log event in the
/// daemon's own format (`--log-format`), led by its syslog priority when stderr is the journal,
/// so `journalctl -p warning` shows it. logfmt:
/// `ts=… level=error event=start.port_in_use error="cannot listen on 0.0.0.0:7420: …"
/// fix="stop the other program on the port, or choose --port (0 picks a free one)" exit_code=75
/// restart_mends=true role=master`. The exit status is the failure's (`ExitStatus`);
/// Docs/OPERATIONS.md, "Start-up refusals", lists them.
struct StartRefusal {
    /// The kind of refusal: its event, exit status and whether a restart can mend it.
    var failure: StartupFailure
    /// What went wrong.
    var message: String
    /// What to do, in one line.
    var fix: String
    /// `master` or `slave`.
    var role: ConfigKey.Role

    /// The refusal of a node that could not start.
    init(_ error: NodeStartupError, role: ConfigKey.Role) {
        self.init(failure: error.failure, message: error.message, fix: error.fix, role: role)
    }

    /// A refusal of a kind, with the kind's fix unless a more precise one is given.
    init(failure: StartupFailure, message: String, fix: String? = nil, role: ConfigKey.Role) {
        self.failure = failure
        self.message = message
        self.fix = fix ?? failure.fix
        self.role = role
    }

    /// The exit status of the refusal.
    var exitStatus: ExitStatus { ExitStatus(failure) }

    /// Writes the event on standard error in `format`.
    func report(format: EventLogFormat) {
        let metadata: Logger.Metadata = [
            "error": .string(message), "fix": .string(fix), "role": .string(role.rawValue),
            "exit_code": .stringConvertible(exitStatus.rawValue), "restart_mends": .stringConvertible(failure.restartMends),
        ]
        let line = format.line(ts: EventLogFormat.timestamp(), level: .error, event: failure.event, metadata: metadata)
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// Reports the refusal in `format` and returns the exit code to throw.
    func reported(format: EventLogFormat) -> ExitCode {
        report(format: format)
        return exitStatus.exitCode
    }

    /// The daemon role `arguments` start (`master` or `slave` first), if any.
    static func daemonRole(_ arguments: [String]) -> ConfigKey.Role? {
        arguments.first.flatMap { ConfigKey.Role(rawValue: $0) }
    }

    /// The log format of a daemon whose settings did not all parse: `--log-format` on the
    /// command line (`--log-format json`, `--log-format=json`), else the settings file's for
    /// `role` (when it was read), else text; with the priority prefix when stderr is the
    /// journal.
    static func format(arguments: [String], role: ConfigKey.Role) -> EventLogFormat {
        var syntax = SettingsFile.settings(for: role).logFormat?.value ?? .text
        for (index, argument) in arguments.enumerated() {
            if argument == "--" { break }
            let value: String?
            if argument == "--log-format" {
                value = index + 1 < arguments.count ? arguments[index + 1] : nil
            } else if argument.hasPrefix("--log-format=") {
                value = String(argument.dropFirst("--log-format=".count))
            } else {
                value = nil
            }
            if let value, let given = EventLogFormat.Syntax(rawValue: value) { syntax = given }
        }
        return EventLogFormat(syntax: syntax, priorityPrefix: EventLogFormat.standardErrorIsJournal())
    }

    /// A daemon's command line or settings that do not parse (`error`, from ArgumentParser or a
    /// `validate()`), as a `start.bad_settings` refusal; nil for other commands, for help and
    /// version requests, and for errors that are not about the settings.
    static func forParseError(_ error: any Error, arguments: [String]) -> StartRefusal? {
        guard let role = daemonRole(arguments), OrderSyncCommand.exitCode(for: error) == .validationFailure else { return nil }
        let message = OrderSyncCommand.message(for: error).trimmingCharacters(in: .whitespacesAndNewlines)
        return StartRefusal(
            failure: .settings, message: message.isEmpty ? "the command line does not parse" : message,
            fix: "correct the setting named; `ordersync \(role.rawValue) --help` lists them", role: role)
    }
}

/// Runs a daemon (`role`) with `settings` until SIGINT/SIGTERM: resolves its data directory,
/// installs the log backend, builds its configuration (`configuration`, given the data
/// directory) and runs the node. A refusal (a ``NodeStartupError``, or a setting found wrong
/// here) is reported as its `start.…` event in the format of `settings`, and the command exits
/// with its status (`ExitStatus`; 66 for a missing parent of the data directory, 74 for an
/// unusable store, 75 for a port in use …).
func runDaemon(
    _ role: ConfigKey.Role, data: DataDirOption, settings: NodeSettings, configuration: (String) throws -> NodeConfiguration
) throws {
    let format = EventLogFormat(
        syntax: settings.logFormat.or(.text).value, priorityPrefix: EventLogFormat.standardErrorIsJournal())
    do {
        let dir = try data.resolved(for: role)
        let errors = NodeErrorLog()
        let logger = LoggingOptions.bootstrap(label: "ordersync.\(role.rawValue)", errors: errors, settings: settings)
        var config = try configuration(dir)
        config.errorLog = errors
        config.enableAutoFailover(settings.autoFailover.or(false).value)
        try Node(configuration: config, logger: logger).run()
    } catch let e as NodeStartupError {
        throw StartRefusal(e, role: role).reported(format: format)
    } catch let e as ValidationError {
        throw StartRefusal(failure: .settings, message: e.message, role: role).reported(format: format)
    }
}
