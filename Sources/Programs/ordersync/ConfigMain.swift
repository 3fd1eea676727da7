import ArgumentParser
import Foundation
import NodePolicy
import OrderSyncNode

/// The settings file of this run, read before the command line is parsed and bound for the
/// parse and the run (`OrderSyncCommand.main()`): a command's `validate()` and `run()` take its
/// settings from here under their own flags.
enum SettingsFile {
    /// The file, if there is one.
    @TaskLocal static var current: ConfigFile? = nil

    /// The file's settings for `role`'s daemon (nil: another command, which gets the top of the
    /// file); none without a file.
    static func settings(for role: ConfigKey.Role?) -> NodeSettings {
        current?.settings(for: role) ?? NodeSettings()
    }
}

extension OrderSyncCommand {
    /// The settings file for `arguments` (see ``ConfigFile/locate(arguments:environment:defaultExists:)``).
    /// A file that cannot be read or has a mistake ends the command here with the file and
    /// line: exit 64 (usage), or UNKNOWN (3) for `check`.
    static func settingsFile(for arguments: [String]) -> ConfigFile? {
        do throws(ConfigError) {
            return try ConfigFile.locate(arguments: arguments, environment: ProcessInfo.processInfo.environment) {
                FileManager.default.fileExists(atPath: $0)
            }
        } catch {
            if arguments.first == "check" {
                let report = HealthReport(state: .unknown, summary: error.description)
                print(report.line)
                Foundation.exit(report.state.rawValue)
            }
            if let role = StartRefusal.daemonRole(arguments) {
                // The settings file is broken: the format can only come from the command line.
                let refusal = StartRefusal(failure: .settings, message: error.description, role: role)
                refusal.report(format: StartRefusal.format(arguments: arguments, role: role))
                exit(withError: ExitCode.validationFailure)
            }
            FileHandle.standardError.write(Data("ordersync: \(error)\n".utf8))
            exit(withError: ExitCode.validationFailure)
        }
    }
}
