import XCTest
final class DiscoveryTestsPlaceholder: XCTestCase { func testNothing() {} }
