import ArgumentParser
import Foundation
import NodePolicy
import OrderSyncNode

/// `ordersync check`: one line and an exit code for Nagios, Icinga, Zabbix or a shell script.
struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check the node's health like a monitoring plugin: one line, exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.",
        discussion: """
            CRITICAL: no daemon answers, the store cannot be read or its last commit failed, another \
            master of the store is on the LAN, a slave has had no live link to its master for longer \
            than --max-silence, or its master refuses it. WARNING: a master not published on the LAN; \
            lag, outbox or a paired terminal's time away above the warning threshold (a master's lag \
            counts its away terminals too). UNKNOWN: bad arguments, \
            permission denied, an unexpected answer. Thresholds are WARN[,CRIT]: a value above WARN is \
            a WARNING, above CRIT a CRITICAL (--max-silence 30,60; a single --max-silence value is \
            the CRITICAL one).
            """)

    @OptionGroup var data: DataDirOption

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Operations a slave (on a master: its most lagging paired terminal, connected or away) may be behind.",
            valueName: "warn[,crit]"))
    var maxLag = "1000"

    @Option(name: .long, help: ArgumentHelp("Local changes a slave may hold in its outbox.", valueName: "warn[,crit]"))
    var maxOutbox = "100"

    @Option(
        name: .long,
        help: ArgumentHelp("Seconds a slave may be without a live link to its master (one value: critical).", valueName: "[warn,]crit"))
    var maxSilence = "60"

    @Option(
        name: .long,
        help: ArgumentHelp("Seconds a master's paired terminal may be away (no link open).", valueName: "warn[,crit]"))
    var maxAway = "600"

    @Option(name: .long, help: ArgumentHelp("How long to wait for the daemon's answer (1-3600).", valueName: "seconds"))
    var timeout = 10

    /// The thresholds, or a usage error naming the bad one.
    func thresholds() throws -> HealthThresholds {
        func parse(_ text: String, _ flag: String, singleIsCritical: Bool = false) throws -> HealthThreshold {
            guard let t = HealthThreshold(parsing: text, singleIsCritical: singleIsCritical) else {
                throw ValidationError("\(flag) must be WARN[,CRIT] with whole numbers 0 or more, WARN not above CRIT (got '\(text)').")
            }
            return t
        }
        return HealthThresholds(
            lag: try parse(maxLag, "--max-lag"), outbox: try parse(maxOutbox, "--max-outbox"),
            silence: try parse(maxSilence, "--max-silence", singleIsCritical: true), away: try parse(maxAway, "--max-away"))
    }

    func validate() throws {
        _ = try thresholds()
        guard (1...3600).contains(timeout) else { throw ValidationError("--timeout must be 1-3600 seconds.") }
    }

    func run() throws {
        let report = Self.report(dataDirectory: try data.resolved(), thresholds: try thresholds(), timeout: .seconds(timeout))
        print(report.line)
        throw ExitCode(report.state.rawValue)
    }

    /// Asks the daemon and judges its answer; every failure to ask is a report too.
    static func report(dataDirectory dir: String, thresholds: HealthThresholds, timeout: Duration) -> HealthReport {
        do {
            return HealthCheck.evaluate(try LocalAPIClient(dataDirectory: dir, timeout: timeout).status(), thresholds: thresholds)
        } catch let e as LocalAPIClientError {
            switch e {
            case .noDaemon, .timeout, .noStore: return HealthReport(state: .critical, summary: e.description)
            case .permissionDenied, .noDataDirectory, .badResponse, .refused, .apiError:
                return HealthReport(state: .unknown, summary: e.description)
            }
        } catch {
            return HealthReport(state: .unknown, summary: "\(error)")
        }
    }

    /// A command line `check` could not parse, as the plugin guidelines want it: UNKNOWN (3)
    /// with the reason on stdout, instead of ArgumentParser's usage exit (64). Nil for
    /// anything else (help, other commands).
    static func unknownForBadArguments(_ arguments: [String], error: any Error) -> HealthReport? {
        guard arguments.first == "check", OrderSyncCommand.exitCode(for: error) == .validationFailure else { return nil }
        let message = OrderSyncCommand.message(for: error).split(separator: "\n").first.map(String.init) ?? "bad arguments"
        return HealthReport(state: .unknown, summary: message)
    }
}
