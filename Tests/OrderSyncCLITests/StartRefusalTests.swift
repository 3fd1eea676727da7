import ArgumentParser
import Foundation
import NodePolicy
import OrderSyncNode
import XCTest

@testable import ordersync

/// Start-up refusals: each kind has its event, exit status and restart verdict, as
/// Docs/OPERATIONS.md's "Start-up refusals" table lists them; a typo of a command is named.
final class StartRefusalTests: XCTestCase {
    /// The rows of the table: event -> (exit status, restart mends it).
    private func documentedRefusals() throws -> [String: (Int32, Bool)] {
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: repo.appendingPathComponent("Docs/OPERATIONS.md"), encoding: .utf8)
        let section = try XCTUnwrap(text.components(separatedBy: "\n## Start-up refusals\n").dropFirst().first)
            .components(separatedBy: "\n## ")[0]
        var rows: [String: (Int32, Bool)] = [:]
        for line in section.split(separator: "\n") where line.hasPrefix("| `start.") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let event = cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            XCTAssertEqual(cells[1], "err (3)", event)
            rows[event] = (try XCTUnwrap(Int32(cells[2]), event), cells[3] == "yes")
        }
        return rows
    }

    func testEveryKindIsDocumentedWithItsExitStatusAndRestartVerdict() throws {
        let rows = try documentedRefusals()
        XCTAssertEqual(Set(rows.keys), Set(StartupFailure.allCases.map(\.event)), "one row per kind, no other")
        for failure in StartupFailure.allCases {
            let row = try XCTUnwrap(rows[failure.event], failure.event)
            XCTAssertEqual(row.0, ExitStatus(failure).rawValue, failure.event)
            XCTAssertEqual(row.1, failure.restartMends, failure.event)
            XCTAssertFalse(failure.fix.isEmpty, failure.event)
        }
        // A restart never mends what it is prevented from retrying, and the reverse.
        let never = Set(StartupFailure.allCases.filter { !$0.restartMends }.map { ExitStatus($0).rawValue })
        let always = Set(StartupFailure.allCases.filter(\.restartMends).map { ExitStatus($0).rawValue })
        XCTAssertTrue(never.isDisjoint(with: always))
        XCTAssertEqual(never, [64, 65, 66, 73, 74, 77, 78])
    }

    func testTheEventLineCarriesThePriorityTheFixAndTheCode() {
        let refusal = StartRefusal(
            NodeStartupError("cannot listen on 0.0.0.0:7420: in use", failure: .portInUse), role: .master)
        XCTAssertEqual(refusal.exitStatus, .tryAgain)
        XCTAssertEqual(refusal.fix, StartupFailure.portInUse.fix)
        let precise = StartRefusal(NodeStartupError("x", failure: .permission, fix: "run `chmod 700 /d`"), role: .slave)
        XCTAssertEqual(precise.fix, "run `chmod 700 /d`")
        XCTAssertEqual(precise.exitStatus, .permissionDenied)
    }

    func testTheFormatComesFromTheCommandLineElseText() {
        let json = StartRefusal.format(arguments: ["master", "--log-format", "json"], role: .master)
        XCTAssertEqual(json.syntax, .json)
        XCTAssertEqual(StartRefusal.format(arguments: ["slave", "--log-format=json"], role: .slave).syntax, .json)
        XCTAssertEqual(StartRefusal.format(arguments: ["slave", "--", "--log-format=json"], role: .slave).syntax, .text)
        XCTAssertEqual(StartRefusal.format(arguments: ["slave"], role: .slave).syntax, .text)
        XCTAssertEqual(StartRefusal.daemonRole(["slave", "--port", "1"]), .slave)
        XCTAssertNil(StartRefusal.daemonRole(["status"]))
    }

    func testADaemonsBadSettingIsABadSettingsRefusalAndHelpIsNot() {
        do {
            _ = try OrderSyncCommand.parseAsRoot(["master", "--data-dir", "/d", "--port", "99999"])
            XCTFail("--port 99999 parsed")
        } catch {
            let refusal = StartRefusal.forParseError(error, arguments: ["master", "--port", "99999"])
            XCTAssertEqual(refusal?.failure, .settings)
            XCTAssertEqual(refusal?.exitStatus, .usage)
            XCTAssertTrue(refusal?.message.contains("--port must be 0-65535") == true, "\(String(describing: refusal))")
        }
        XCTAssertNil(StartRefusal.forParseError(CleanExit.helpRequest(MasterCommand.self), arguments: ["master", "--help"]))
        XCTAssertNil(StartRefusal.forParseError(ValidationError("x"), arguments: ["order", "list"]))
    }

    func testATypoOfACommandIsNamedWithTheNearestOne() {
        XCTAssertEqual(UnknownCommand(arguments: ["stauts"])?.message, "unknown command 'stauts'; did you mean 'status'?")
        XCTAssertEqual(UnknownCommand(arguments: ["mastre", "--port", "1"])?.suggestion, "master")
        XCTAssertEqual(UnknownCommand(arguments: ["Slave"])?.suggestion, "slave")
        XCTAssertNil(UnknownCommand(arguments: ["frobnicate"])?.suggestion)
        XCTAssertTrue(UnknownCommand(arguments: ["frobnicate"])?.message.contains("ordersync --help") == true)
        for fine in [["status"], ["help", "master"], ["--version"], ["--help"], []] {
            XCTAssertNil(UnknownCommand(arguments: fine), "\(fine)")
        }
        XCTAssertEqual(UnknownCommand.editDistance("stauts", "status"), 1, "a swap of neighbours counts one")
        XCTAssertEqual(UnknownCommand.editDistance("", "abc"), 3)
    }
}
