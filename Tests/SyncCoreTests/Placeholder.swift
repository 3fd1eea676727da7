import XCTest
final class SyncCoreTestsPlaceholder: XCTestCase { func testNothing() {} }
