import HTTP1
import XCTest

/// The shared head parser under both strictness settings, every input fed whole and one byte
/// at a time.
final class HTTPHeadParserTests: XCTestCase {
    /// What feeding an input produced.
    private enum Outcome: Equatable {
        case needMoreData
        case complete(HTTPHead, consumed: Int)
        case failed(status: Int, message: String)
    }

    private static let crlfHead = "GET /a HTTP/1.1\r\nHost: x\r\nX-List: a, b\r\n\r\n"

    private func feedWhole(_ bytes: [UInt8], _ strictness: HTTPHeadStrictness, max: Int) -> Outcome {
        var parser = HTTPHeadParser(strictness: strictness, maxHeadBytes: max)
        return outcome { () throws(HTTPError) in try parser.parse(bytes) }
    }

    /// Feeds growing prefixes, as a socket shell does, and stops at the first verdict; also
    /// returns how many bytes had arrived when the verdict came.
    private func feedByteByByte(
        _ bytes: [UInt8], _ strictness: HTTPHeadStrictness,
        max: Int
    ) -> (Outcome, arrived: Int) {
        var parser = HTTPHeadParser(strictness: strictness, maxHeadBytes: max)
        for end in 1...Swift.max(1, bytes.count) {
            let prefix = Array(bytes.prefix(end))
            let result = outcome { () throws(HTTPError) in try parser.parse(prefix) }
            if result != .needMoreData {
                return (result, end)
            }
        }
        return (.needMoreData, bytes.count)
    }

    private func outcome(_ body: () throws(HTTPError) -> HTTPHeadParser.Result) -> Outcome {
        do {
            switch try body() {
            case .needMoreData: return .needMoreData
            case .complete(let head, let consumed): return .complete(head, consumed: consumed)
            }
        } catch {
            return .failed(status: error.status, message: error.message)
        }
    }

    /// Both ways of feeding agree; returns the outcome and when the byte-by-byte verdict came.
    @discardableResult
    private func parseBothWays(
        _ text: String, _ strictness: HTTPHeadStrictness, max: Int = 1024,
        file: StaticString = #filePath, line: UInt = #line
    ) -> (Outcome, arrived: Int) {
        let bytes = Array(text.utf8)
        let whole = feedWhole(bytes, strictness, max: max)
        let trickle = feedByteByByte(bytes, strictness, max: max)
        XCTAssertEqual(whole, trickle.0, "whole vs one byte at a time", file: file, line: line)
        return (whole, trickle.arrived)
    }

    private func assertFails(
        _ text: String, _ strictness: HTTPHeadStrictness, status: Int = 400,
        mentioning words: String, max: Int = 1024,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        let (result, _) = parseBothWays(text, strictness, max: max, file: file, line: line)
        guard case .failed(let actual, let message) = result else {
            return XCTFail("expected a failure, got \(result)", file: file, line: line)
        }
        XCTAssertEqual(actual, status, message, file: file, line: line)
        XCTAssertTrue(message.contains(words), message, file: file, line: line)
    }

    private func assertHead(
        _ result: (Outcome, arrived: Int), startLine: String, fields: [(String, String)],
        consumed: Int, file: StaticString = #filePath, line: UInt = #line
    ) {
        let expected = HTTPHead(startLine: Array(startLine.utf8), headers: HTTPHeaders(fields))
        XCTAssertEqual(result.0, .complete(expected, consumed: consumed), file: file, line: line)
    }

    // MARK: - What both settings share

    func testCRLFHeadParsesTheSameUnderBothSettings() {
        for strictness in [HTTPHeadStrictness.strict, .lenient] {
            let result = parseBothWays(Self.crlfHead + "frames", strictness)
            assertHead(
                result, startLine: "GET /a HTTP/1.1", fields: [("Host", "x"), ("X-List", "a, b")],
                consumed: Self.crlfHead.utf8.count)
            XCTAssertEqual(result.arrived, Self.crlfHead.utf8.count, "verdict as soon as the head ends")
        }
    }

    func testMalformedFieldLinesAreRefusedUnderBothSettings() {
        for strictness in [HTTPHeadStrictness.strict, .lenient] {
            assertFails("GET / HTTP/1.1\r\nHost : x\r\n\r\n", strictness, mentioning: "field name")
            assertFails("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", strictness, mentioning: "folding")
            assertFails("GET / HTTP/1.1\r\nNoColon\r\n\r\n", strictness, mentioning: "colon")
            assertFails("GET / HTTP/1.1\r\nX: a\u{1}b\r\n\r\n", strictness, mentioning: "control character")
            assertFails("GET / HTTP/1.1\r\nX: a\u{7F}\r\n\r\n", strictness, mentioning: "control character")
            assertFails("GET / HTTP/1.1\r\nX: a\0b\r\n\r\n", strictness, mentioning: "control character")
        }
    }

    func testBareCRIsRefusedUnderBothSettingsAsSoonAsItIsSeen() {
        for strictness in [HTTPHeadStrictness.strict, .lenient] {
            let text = "GET / HTTP/1.1\r\nX: a\rb\r\n\r\n"
            assertFails(text, strictness, mentioning: "bare CR")
            let (_, arrived) = parseBothWays(text, strictness)
            XCTAssertEqual(arrived, Array(text.utf8).firstIndex(of: UInt8(ascii: "b"))! + 1)
        }
    }

    func testHeadEndingExactlyAtTheLimitIsAcceptedOneByteMoreIs431() {
        let size = Self.crlfHead.utf8.count
        for strictness in [HTTPHeadStrictness.strict, .lenient] {
            assertHead(
                parseBothWays(Self.crlfHead + "x", strictness, max: size), startLine: "GET /a HTTP/1.1",
                fields: [("Host", "x"), ("X-List", "a, b")], consumed: size)
            assertFails(Self.crlfHead, strictness, status: 431, mentioning: "exceeds \(size - 1)", max: size - 1)
            // An endless line is refused once the limit is reached, not when a terminator comes.
            let endless = "GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 100)
            let (result, arrived) = parseBothWays(endless, strictness, max: 64)
            XCTAssertEqual(result, .failed(status: 431, message: "message head exceeds 64 bytes"))
            XCTAssertEqual(arrived, 64)
        }
    }

    func testAFailedParserKeepsFailingAndACompleteOneStartsOver() throws {
        var parser = HTTPHeadParser(strictness: .strict, maxHeadBytes: 256)
        XCTAssertThrowsError(try parser.parse(Array("GET / HTTP/1.1\nHost: x\r\n\r\n".utf8)))
        XCTAssertThrowsError(try parser.parse(Array(Self.crlfHead.utf8)))

        var reused = HTTPHeadParser(strictness: .lenient, maxHeadBytes: 256)
        let twice = Array((Self.crlfHead + Self.crlfHead).utf8)
        guard case .complete(_, let first) = try reused.parse(twice) else {
            return XCTFail("first head not found")
        }
        guard case .complete(let head, let second) = try reused.parse(twice[first...]) else {
            return XCTFail("second head not found")
        }
        XCTAssertEqual(first + second, twice.count)
        XCTAssertEqual(head.startLineText, "GET /a HTTP/1.1")
    }

    func testStartLineIsAvailableAsSoonAsItsTerminatorArrives() throws {
        var parser = HTTPHeadParser(strictness: .strict, maxHeadBytes: 256)
        let partial = Array("POST /x HTTP/1.1\r".utf8)
        XCTAssertEqual(try parser.parse(partial), .needMoreData)
        XCTAssertNil(parser.startLine(in: partial[...]))
        let more = partial + Array("\nHost".utf8)
        XCTAssertEqual(try parser.parse(more), .needMoreData)
        XCTAssertEqual(parser.startLine(in: more[...]).map { Array($0) }, Array("POST /x HTTP/1.1".utf8))
    }

    // MARK: - Where the settings differ

    func testStrictRefusesABareLFAsSoonAsItArrives() {
        let text = "GET / HTTP/1.1\r\nHost: x\nX: y\r\n\r\n"
        assertFails(text, .strict, mentioning: "bare LF")
        let (_, arrived) = parseBothWays(text, .strict)
        XCTAssertEqual(arrived, "GET / HTTP/1.1\r\nHost: x\n".utf8.count)
        assertFails("GET / HTTP/1.1\n\n", .strict, mentioning: "bare LF")
        assertFails("GET / HTTP/1.1\r\nHost: x\r\n\n", .strict, mentioning: "bare LF")
    }

    func testLenientAcceptsBareLFAnywhereAndIgnoresACRBeforeIt() {
        let fields = [("Host", "x"), ("X", "y")]
        for text in [
            "GET / HTTP/1.1\nHost: x\nX: y\n\n", "GET / HTTP/1.1\r\nHost: x\nX: y\r\n\n",
            "GET / HTTP/1.1\nHost: x\r\nX: y\n\r\n",
        ] {
            assertHead(
                parseBothWays(text + "body", .lenient), startLine: "GET / HTTP/1.1", fields: fields,
                consumed: text.utf8.count)
        }
    }

    func testStrictRefusesEmptyLinesBeforeTheStartLine() {
        assertFails("\r\n" + Self.crlfHead, .strict, mentioning: "empty line before the start line")
        let (_, arrived) = parseBothWays("\r\n" + Self.crlfHead, .strict)
        XCTAssertEqual(arrived, 2)
    }

    func testLenientSkipsEmptyLinesBeforeTheStartLine() {
        let text = "\r\n\n\r\n" + Self.crlfHead
        assertHead(
            parseBothWays(text, .lenient), startLine: "GET /a HTTP/1.1",
            fields: [("Host", "x"), ("X-List", "a, b")], consumed: text.utf8.count)
        // Skipped lines count towards the limit.
        assertFails(String(repeating: "\r\n", count: 40), .lenient, status: 431, mentioning: "exceeds", max: 64)
    }

    func testCustomSettingMixesTheRules() {
        let lfOnly = HTTPHeadStrictness(acceptsBareLF: true, skipsLeadingEmptyLines: false)
        assertFails("\n" + Self.crlfHead, lfOnly, mentioning: "empty line")
        assertHead(
            parseBothWays("GET / HTTP/1.1\nHost: x\n\n", lfOnly), startLine: "GET / HTTP/1.1",
            fields: [("Host", "x")], consumed: 24)
    }

    // MARK: - The message parsers pass the setting on

    func testRequestAndResponseParsersApplyTheirStrictness() throws {
        var lenient = HTTPRequestParser()
        lenient.append(Array("GET / HTTP/1.1\nHost: x\n\n".utf8))
        XCTAssertEqual(try lenient.nextRequest()?.path, "/")

        var strict = HTTPRequestParser(strictness: .strict)
        strict.append(Array("GET / HTTP/1.1\nHost: x\n\n".utf8))
        XCTAssertThrowsError(try strict.nextRequest()) { error in
            XCTAssertEqual((error as? HTTPError)?.status, 400)
        }

        var strictResponse = HTTPResponseParser(strictness: .strict)
        strictResponse.append(Array("HTTP/1.1 204 No Content\n\n".utf8))
        XCTAssertThrowsError(try strictResponse.nextResponse()) { error in
            XCTAssertEqual((error as? HTTPError)?.status, 502)
        }
        var lenientResponse = HTTPResponseParser()
        lenientResponse.append(Array("HTTP/1.1 204 No Content\n\n".utf8))
        XCTAssertEqual(try lenientResponse.nextResponse()?.status, 204)
    }
}
