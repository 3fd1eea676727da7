import ArgumentParser
import NodePolicy
import OrderStore
import OrderSyncNode
import XCTest

@testable import ordersync

/// Every failure of the CLI maps to a documented, distinct exit status.
final class ExitStatusTests: XCTestCase {
    func testCodesAreTheDocumentedSysexitsNumbers() {
        XCTAssertEqual(
            ExitStatus.allCases.map(\.rawValue), [0, 1, 64, 65, 66, 69, 70, 73, 74, 75, 76, 77, 78])
        XCTAssertEqual(Set(ExitStatus.allCases.map(\.rawValue)).count, ExitStatus.allCases.count)
        XCTAssertEqual(ExitStatus.storageFailure.rawValue, 74)
        XCTAssertEqual(ExitStatus.usage.exitCode, ExitCode.validationFailure)
    }

    func testAPIErrorsMapByCodeThenByHTTPStatus() {
        let cases: [(String, Int, ExitStatus)] = [
            ("not_found", 404, .notFound), ("conflict", 409, .refused), ("already_exists", 409, .refused),
            ("invalid_transition", 409, .refused), ("removed", 410, .refused), ("not_master", 404, .refused),
            ("no_journal", 404, .refused), ("ambiguous", 409, .refused), ("storage_failed", 500, .storageFailure),
            ("invalid_field", 400, .dataError), ("invalid_uuid", 400, .dataError), ("malformed_json", 400, .dataError),
            ("too_large", 413, .dataError), ("rate_limited", 429, .tryAgain), ("starting", 503, .tryAgain),
            ("request_timeout", 408, .tryAgain), ("no_route", 404, .protocolError), ("method_not_allowed", 405, .protocolError),
            ("internal", 500, .software), ("http_418", 418, .protocolError), ("something_new", 404, .notFound),
        ]
        for (code, status, expected) in cases {
            XCTAssertEqual(ExitStatus.forAPIError(code: code, httpStatus: status), expected, code)
        }
    }

    func testClientErrorsMap() {
        let owner = FileOwnerFixture.owner
        XCTAssertEqual(ExitStatus.forClientError(.noDaemon(dataDirectory: "/d")), .unavailable)
        XCTAssertEqual(ExitStatus.forClientError(.noDataDirectory("/d")), .notFound)
        XCTAssertEqual(ExitStatus.forClientError(.noStore(dataDirectory: "/d")), .notFound)
        XCTAssertEqual(ExitStatus.forClientError(.permissionDenied(path: "/d/ordersync.sock", owner: owner)), .permissionDenied)
        XCTAssertEqual(ExitStatus.forClientError(.timeout(seconds: 30)), .tryAgain)
        XCTAssertEqual(ExitStatus.forClientError(.badResponse("x")), .protocolError)
        XCTAssertEqual(ExitStatus.forClientError(.refused("slave")), .refused)
        XCTAssertEqual(ExitStatus.forClientError(.apiError(status: 409, code: "conflict", message: "m")), .refused)
    }

    func testPermissionDeniedSaysWhomToRunAs() {
        let e = LocalAPIClientError.permissionDenied(path: "/var/lib/ordersync/ordersync.sock", owner: FileOwnerFixture.owner)
        XCTAssertEqual(
            e.description,
            "permission denied on /var/lib/ordersync/ordersync.sock (run as a member of group ordersync or as the service user ordersync)")
    }

    func testStoreErrorsMap() {
        XCTAssertEqual(ExitStatus.forStoreError(StoreError(kind: .missingDatabase, message: "m")), .notFound)
        XCTAssertEqual(ExitStatus.forStoreError(StoreError(kind: .corruptRow, message: "m")), .storageFailure)
        XCTAssertEqual(ExitStatus.forStoreError(StoreError(kind: .sqlite, code: 11, message: "malformed")), .storageFailure)
        XCTAssertEqual(ExitStatus.forStoreError(StoreError(kind: .busy, message: "m")), .tryAgain)
        XCTAssertEqual(ExitStatus.forStoreError(StoreError(kind: .schemaTooNew, message: "m")), .refused)
    }

    func testCheckTurnsBadArgumentsIntoUnknown() throws {
        for bad in [["check", "--max-lag", "x"], ["check", "--no-such-flag"], ["check", "--max-outbox", "10,5"]] {
            var report: HealthReport?
            do {
                _ = try OrderSyncCommand.parseAsRoot(bad)
                XCTFail("\(bad) parsed")
            } catch {
                report = CheckCommand.unknownForBadArguments(bad, error: error)
            }
            let r = try XCTUnwrap(report, "\(bad)")
            XCTAssertEqual(r.state, .unknown)
            XCTAssertTrue(r.line.hasPrefix("ORDERSYNC UNKNOWN - "), r.line)
        }
        // Other commands keep ArgumentParser's usage exit.
        do {
            _ = try OrderSyncCommand.parseAsRoot(["status", "--no-such-flag"])
            XCTFail("parsed")
        } catch {
            XCTAssertNil(CheckCommand.unknownForBadArguments(["status", "--no-such-flag"], error: error))
        }
    }
}

enum FileOwnerFixture {
    static let owner = FileOwner(user: "ordersync", group: "ordersync")
}
