import ArgumentParser
import Foundation
import OrderSyncNode

extension OrderSyncCommand {
    /// Parses the command line with the configuration file's settings added (flags win; see
    /// ``ConfigArguments``), then runs the command. A mistake in the file is a usage error that
    /// names the file and line.
    static func main() {
        let given = Array(CommandLine.arguments.dropFirst())
        let environment = ProcessInfo.processInfo.environment
        let expanded: ConfigArguments
        do {
            let file = try ConfigArguments.configFile(arguments: given, environment: environment) {
                FileManager.default.fileExists(atPath: $0)
            }
            expanded = ConfigArguments(given, file: file, environment: environment, groups: groupCommands)
        } catch {
            usageFailure("\(error)")
        }
        var command: ParsableCommand
        do {
            command = try parseAsRoot(expanded.arguments)
        } catch {
            let text = message(for: error)
            if let origin = expanded.origin(mentionedIn: text) {
                usageFailure("\(text) (\(origin.flag.dropFirst(2)) is set at \(origin.location))")
            }
            exit(withError: error)
        }
        do {
            try command.run()
        } catch {
            exit(withError: error)
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
