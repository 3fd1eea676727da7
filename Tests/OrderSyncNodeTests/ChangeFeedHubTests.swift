import XCTest

@testable import OrderSyncNode

/// The change feed's long-poll answer, as the hub writes it.
final class ChangeFeedHubTests: XCTestCase {
    func testLongPollBody() {
        XCTAssertEqual(String(decoding: ChangeFeedHub.body([], since: 5), as: UTF8.self), "{\"changes\":[],\"last\":5}")
        XCTAssertEqual(
            String(decoding: ChangeFeedHub.body([(6, "{\"seq\":6}"), (7, "{\"seq\":7}")], since: 5), as: UTF8.self),
            "{\"changes\":[{\"seq\":6},{\"seq\":7}],\"last\":7}")
    }
}
