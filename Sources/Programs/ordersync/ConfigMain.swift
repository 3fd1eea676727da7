import ArgumentParser
import Foundation
import OrderSyncNode

extension OrderSyncCommand {
    /// The command line with the settings file's values added (flags win; see
    /// ``ConfigArguments``). A file that cannot be read or has a mistake ends the command here
    /// with the file and line: exit 64 (usage), or UNKNOWN (3) for `check`.
    static func argumentsWithSettings() -> ConfigArguments {
        let given = Array(CommandLine.arguments.dropFirst())
        let environment = ProcessInfo.processInfo.environment
        do {
            let file = try ConfigArguments.configFile(arguments: given, environment: environment) {
                FileManager.default.fileExists(atPath: $0)
            }
            return ConfigArguments(given, file: file, environment: environment, groups: groupCommands)
        } catch {
            if given.first == "check" {
                let report = HealthReport(state: .unknown, summary: "\(error)")
                print(report.line)
                Foundation.exit(report.state.rawValue)
            }
            usageFailure("\(error)")
        }
    }

    /// For a bad value that came from the settings file (`--port must be 0-65535.`), says where
    /// it was set and exits with the usage status; returns for any other error.
    static func exitNamingTheSetting(of error: any Error, _ settings: ConfigArguments) {
        guard exitCode(for: error) == .validationFailure else { return }
        let text = message(for: error)
        if let origin = settings.origin(mentionedIn: text) {
            usageFailure("\(text) (\(origin.flag.dropFirst(2)) is set at \(origin.location))")
        }
    }

    /// Prints `message` and exits with the usage status (64), as a bad flag does.
    private static func usageFailure(_ message: String) -> Never {
        FileHandle.standardError.write(Data("ordersync: \(message)\n".utf8))
        exit(withError: ExitCode.validationFailure)
    }

    /// The commands that only group subcommands (`order`, `terminal`, `key`).
    static var groupCommands: Set<String> {
        Set(
            configuration.subcommands.filter { !$0.configuration.subcommands.isEmpty }.map {
                $0.configuration.commandName ?? $0._commandName
            })
    }
}
