import XCTest
final class WebSocketTestsPlaceholder: XCTestCase { func testNothing() {} }
