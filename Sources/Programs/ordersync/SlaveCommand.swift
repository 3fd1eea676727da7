import ArgumentParser
import Foundation
import Logging
import OrderSyncNode
import SecureLink
import SyncCore

/// `ordersync slave`.
struct SlaveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "slave",
        abstract: "Run a terminal's replica: find the master on the LAN, keep a synced copy, forward local changes.")

    @OptionGroup var node: NodeOptions

    @OptionGroup var served: ServedPortsOptions

    @Option(name: .long, help: ArgumentHelp("Connect to this master (ws://HOST:PORT/) instead of discovering one.", valueName: "url"))
    var master: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Pair with the master using this code from `ordersync pair` (needed once; ignored when already paired with it). "
                + "`-` reads it from standard input, so that it never shows in `ps`.",
            valueName: "code|-"))
    var pair: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Pair with the code written in this file (its first line), so that it never shows in `ps`.", valueName: "file"))
    var pairFile: String?

    /// The environment variable a pairing code may come from instead of `--pair`.
    static let pairCodeVariable = "ORDERSYNC_PAIR_CODE"

    /// The slave's settings: the flags given, over the settings file's `[slave]` section, over
    /// the top of the file.
    func settings() -> NodeSettings {
        var s = node.flags()
        served.flags(into: &s)
        s.master = master.given
        s.pair = pair.given
        s.pairFile = pairFile.given
        return s.over(SettingsFile.settings(for: .slave))
    }

    func validate() throws {
        _ = try nodeConfiguration(dataDirectory: "")
        let s = settings()
        let sources = [s.pair != nil, s.pairFile != nil, ProcessInfo.processInfo.environment[Self.pairCodeVariable] != nil]
        guard sources.filter({ $0 }).count <= 1 else {
            throw problem(
                "give the pairing code one way only: --pair, --pair-file or \(Self.pairCodeVariable).",
                s.pair?.origin ?? .commandLine, s.pairFile?.origin ?? .commandLine)
        }
        if let code = s.pair, code.value != "-" {
            do { _ = try Self.parseCode(code.value, from: "--pair") } catch { throw problem("\(error)", code.origin) }
        }
    }

    /// The slave's configuration from its settings (flags, file, defaults), checked; the
    /// pairing code is read in `run()`.
    func nodeConfiguration(dataDirectory: String) throws -> NodeConfiguration {
        let s = settings()
        let url = try s.master.map { m in
            guard let url = MasterURL(parsing: m.value) else {
                throw problem("--master must look like ws://HOST:PORT/ (got '\(m.value)').", m.origin)
            }
            return url
        }
        return try NodeOptions.configuration(role: .slave, dataDirectory: dataDirectory, s, masterURL: url)
    }

    /// The pairing code from `--pair CODE`, `--pair -` (standard input's first line),
    /// `--pair-file FILE` (its first line) or `ORDERSYNC_PAIR_CODE`, if any. A code that is not
    /// one fails with what is wrong and where it came from.
    func pairingCode() throws -> PairingCode? {
        let s = settings()
        let (pair, pairFile) = (s.pair?.value, s.pairFile?.value)
        if let code = pair, code != "-" { return try Self.parseCode(code, from: "--pair") }
        if pair == "-" {
            guard let line = readLine(strippingNewline: true) else {
                throw ValidationError("--pair -: standard input ended before a pairing code.")
            }
            return try Self.parseCode(line, from: "standard input")
        }
        if let path = pairFile {
            let text: String
            do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
                throw ValidationError("--pair-file: cannot read \(path): \(error.localizedDescription)")
            }
            return try Self.parseCode(String(text.split(whereSeparator: \.isNewline).first ?? ""), from: path)
        }
        if let code = ProcessInfo.processInfo.environment[Self.pairCodeVariable] {
            // Not passed on to anything this process starts.
            unsetenv(Self.pairCodeVariable)
            return try Self.parseCode(code, from: Self.pairCodeVariable)
        }
        return nil
    }

    /// A typed code, or a validation error naming where it came from.
    static func parseCode(_ text: String, from source: String) throws -> PairingCode {
        do {
            return try PairingCode(parsing: text.trimmingCharacters(in: .whitespaces))
        } catch {
            throw ValidationError("\(source): \(error.message)")
        }
    }

    func run() throws {
        try runDaemon(.slave, data: node.data, settings: settings()) { dir in
            var config = try nodeConfiguration(dataDirectory: dir)
            config.pairingCode = try pairingCode()
            return config
        }
    }
}
