import XCTest
final class OrderStoreTestsPlaceholder: XCTestCase { func testNothing() {} }
