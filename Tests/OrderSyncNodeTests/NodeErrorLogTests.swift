import Foundation
import Logging
import NodePolicy
import XCTest

@testable import OrderSyncNode

/// The node's last warning, as `lastError` in status shows it.
final class NodeErrorLogTests: XCTestCase {
    func testErrorLogKeepsTheLastWarningWithItsTime() throws {
        let errors = NodeErrorLog()
        var handler = NodeErrorLogHandler(errors: errors)
        handler.logLevel = .debug
        var logger = Logger(label: "t") { _ in handler }
        logger.logLevel = .debug
        logger.info("node.started")
        XCTAssertNil(errors.lastError)
        logger.warning("master.disconnected", metadata: ["reason": "connection reset", "master.address": "ws://x/"])
        logger.notice("master.connected")
        let e = try XCTUnwrap(errors.lastError)
        XCTAssertEqual(e.event, "master.disconnected")
        XCTAssertEqual(e.message, "connection reset")
        XCTAssertNotNil(ISO8601DateFormatter.withMillis.date(from: e.at), e.at)
        logger.error("store.group_failed", metadata: ["n": "1"])
        XCTAssertEqual(errors.lastError?.message, "n=1")
    }
}

extension ISO8601DateFormatter {
    static var withMillis: ISO8601DateFormatter {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f
    }
}
