import MicroBenchCases
import XCTest

/// Each microbenchmark case does the work it names (the figures in Docs/PERFORMANCE.md count
/// that work, not an empty loop).
final class MicroBenchCaseTests: XCTestCase {
    func testEveryCaseDoesItsWork() throws {
        let frameBytes = MicroBenchCase.storePOSCreate(1).utf8.count
        for name in MicroBenchCase.names {
            let bench = try MicroBenchCase(name, capacity: 20)
            try bench.run(20)
            switch name {
            case "frame-parse": XCTAssertEqual(bench.checksum, 20 * frameBytes, "each iteration parses the whole frame")
            case "frame-encode": XCTAssertEqual(bench.checksum, 20 * (frameBytes + 4), "a 2-byte header and 2 bytes of length")
            case "message-decode": XCTAssertEqual(bench.checksum, 20, "one order per message")
            case "message-encode": XCTAssertGreaterThan(bench.checksum, 20 * 150)
            default:
                XCTAssertEqual(try bench.storedOrders(), 20, "\(name): every Create is stored")
                XCTAssertGreaterThan(bench.checksum, 0, "\(name): and broadcast")
            }
        }
        XCTAssertThrowsError(try MicroBenchCase("nothing", capacity: 1))
        let small = try MicroBenchCase("apply", capacity: 2)
        XCTAssertThrowsError(try small.run(3), "more iterations than orders made beforehand")
    }
}
