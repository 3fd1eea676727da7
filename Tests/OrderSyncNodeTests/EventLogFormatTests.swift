import Foundation
import Glibc
import Logging
import XCTest

@testable import OrderSyncNode

/// The log line formatter: syslog priorities for journald and typed JSON (the summary of repeated
/// failures: FailureSummaryTests).
final class EventLogFormatTests: XCTestCase {
    private let ts = "2026-11-25T02:00:00.000Z"

    func testEachLevelHasItsSyslogPriority() {
        let expected: [(Logger.Level, Int)] = [
            (.trace, 7), (.debug, 7), (.info, 6), (.notice, 5), (.warning, 4), (.error, 3), (.critical, 2),
        ]
        for (level, priority) in expected {
            XCTAssertEqual(EventLogFormat.priority(level), priority, "\(level)")
            let line = EventLogFormat(syntax: .text, priorityPrefix: true).line(ts: ts, level: level, event: "x.y", metadata: [:])
            XCTAssertEqual(line, "<\(priority)>ts=\(ts) level=\(level.rawValue) event=x.y")
        }
    }

    func testWithoutTheJournalLinesHaveNoPrefix() {
        let text = EventLogFormat(syntax: .text, priorityPrefix: false)
            .line(ts: ts, level: .warning, event: "master.connect_failed", metadata: ["reason": "connection refused"])
        XCTAssertEqual(text, "ts=\(ts) level=warning event=master.connect_failed reason=\"connection refused\"")
        let json = EventLogFormat(syntax: .json, priorityPrefix: true).line(ts: ts, level: .error, event: "a", metadata: [:])
        XCTAssertEqual(json, "<3>{\"ts\":\"\(ts)\",\"level\":\"error\",\"event\":\"a\"}")
    }

    func testJSONKeepsNumbersAndBooleansTyped() throws {
        let metadata: Logger.Metadata = [
            "count": .stringConvertible(11), "ratio": .stringConvertible(0.5), "live": .stringConvertible(true),
            "seq": "42", "port": "7420", "name": "1234", "order": "0E5C", "peers": "not a number", "rate": "200.0",
        ]
        let line = EventLogFormat(syntax: .json, priorityPrefix: false).line(
            ts: ts, level: .info, event: "order.applied", metadata: metadata)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        XCTAssertEqual(object["count"] as? Int, 11)
        XCTAssertEqual(object["ratio"] as? Double, 0.5)
        XCTAssertEqual(object["seq"] as? Int, 42, "a number key written as text is a number")
        XCTAssertEqual(object["port"] as? Int, 7420)
        XCTAssertEqual(object["rate"] as? Double, 200)
        XCTAssertEqual(object["name"] as? String, "1234", "a name that looks like a number stays a string")
        XCTAssertEqual(object["order"] as? String, "0E5C")
        XCTAssertEqual(object["peers"] as? String, "not a number")
        XCTAssertTrue(line.contains("\"count\":11,"), line)
        XCTAssertTrue(line.contains("\"live\":true"), line)
        XCTAssertTrue(line.contains("\"name\":\"1234\""), line)
        // logfmt is unchanged by the types.
        let text = EventLogFormat(syntax: .text, priorityPrefix: false).line(
            ts: ts, level: .info, event: "e", metadata: ["count": .stringConvertible(11), "live": .stringConvertible(false)])
        XCTAssertEqual(text, "ts=\(ts) level=info event=e count=11 live=false")
    }

    func testTheJournalIsRecognisedByTheDeviceAndInodeOfStandardError() {
        var st = stat()
        XCTAssertEqual(fstat(2, &st), 0)
        let mine = "\(st.st_dev):\(st.st_ino)"
        XCTAssertTrue(EventLogFormat.standardErrorIsJournal(environment: ["JOURNAL_STREAM": mine]))
        XCTAssertFalse(EventLogFormat.standardErrorIsJournal(environment: ["JOURNAL_STREAM": "\(st.st_dev):\(st.st_ino + 1)"]))
        XCTAssertFalse(EventLogFormat.standardErrorIsJournal(environment: ["JOURNAL_STREAM": "garbage"]))
        XCTAssertFalse(EventLogFormat.standardErrorIsJournal(environment: [:]))
    }
}
