import XCTest
final class PosixTestsPlaceholder: XCTestCase { func testNothing() {} }
