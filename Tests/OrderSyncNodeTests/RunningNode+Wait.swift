import Foundation
import NodePolicy
import XCTest

/// Polls `node`'s status until `condition` holds (a node changes on its own threads), for at
/// most `timeout` seconds; then fails the test, naming `what` and the last status.
func waitForStatus<T>(
    _ node: RunningNode, _ what: String, timeout: TimeInterval = 10, _ condition: (NodeStatus) -> T?
) throws -> T {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        if let status = try? node.status(), let value = condition(status) { return value }
        if Date() > deadline {
            XCTFail("timed out waiting for \(what): \(String(describing: try? node.status()))")
            throw CancellationError()
        }
        usleep(20_000)
    }
}
