import JSON
import XCTest

@testable import SyncCore

/// The promise, vote, fetch and fetched messages (design.md, "Wire", part `election`).
final class ElectionMessageTests: XCTestCase {
    func decode(_ text: String) -> Result<ElectionMessage, WireError>? { ElectionMessage.decode(Array(text.utf8)) }

    func testEachMessageEncodesInTheDesignShapeAndDecodesBack() {
        let cases: [(ElectionMessage, String)] = [
            (.promise(term: 3), #"{"type":"promise","term":3}"#),
            (
                .vote(.init(term: 3, granted: true, position: LogPosition(lastSeq: 812, lastTerm: 2))),
                #"{"type":"vote","term":3,"granted":true,"lastSeq":812,"lastTerm":2}"#
            ),
            (
                .vote(.init(term: 3, granted: false, position: LogPosition(lastSeq: 0, lastTerm: 1), reason: "voted for A in term 3")),
                #"{"type":"vote","term":3,"granted":false,"lastSeq":0,"lastTerm":1,"reason":"voted for A in term 3"}"#
            ),
            (.fetch(after: 810), #"{"type":"fetch","after":810}"#),
            (.fetched(seq: 812), #"{"type":"fetched","seq":812}"#),
        ]
        for (message, text) in cases {
            XCTAssertEqual(String(decoding: message.encodedBytes(), as: UTF8.self), text)
            XCTAssertEqual(decode(text), .success(message), text)
        }
        XCTAssertEqual(
            decode(#"{"lastTerm":2,"reason":null,"granted":true,"type":"vote","term":3,"lastSeq":8}"#),
            .success(.vote(.init(term: 3, granted: true, position: LogPosition(lastSeq: 8, lastTerm: 2)))),
            "members in any order; a null reason is none")
    }

    func testOtherMessagesAreLeftToTheUsualParsers() {
        for text in [
            #"{"operation":0,"orders":[]}"#, #"{"type":"hello","terminal":"t"}"#, #"{"type":"ack","seq":3}"#,
            #"{"type":"ready","seq":3}"#, "not json", #"["type"]"#, #"{"type":7}"#,
        ] {
            XCTAssertNil(decode(text), text)
        }
    }

    func testBadMembersAreInvalidMessagesNamingTheMember() {
        let cases: [(String, String)] = [
            (#"{"type":"promise"}"#, #"promise needs "term""#),
            (#"{"type":"promise","term":"3"}"#, #"promise "term" must be an integer of 2 or more, got string"#),
            (#"{"type":"promise","term":1}"#, #"promise "term" must be an integer of 2 or more, got 1"#),
            (#"{"type":"promise","term":2.5}"#, #"promise "term" must be an integer of 2 or more, got 2.5"#),
            (#"{"type":"vote","term":3,"lastSeq":1,"lastTerm":1}"#, #"vote needs "granted": true or false"#),
            (#"{"type":"vote","term":3,"granted":1,"lastSeq":1,"lastTerm":1}"#, #"vote needs "granted": true or false"#),
            (
                #"{"type":"vote","term":3,"granted":true,"lastSeq":-1,"lastTerm":1}"#,
                #"vote "lastSeq" must be an integer of 0 or more, got -1"#
            ),
            (
                #"{"type":"vote","term":3,"granted":true,"lastSeq":1,"lastTerm":0}"#,
                #"vote "lastTerm" must be an integer of 1 or more, got 0"#
            ),
            (
                #"{"type":"vote","term":3,"granted":false,"lastSeq":1,"lastTerm":1,"reason":5}"#,
                #"vote "reason" must be a string of at most 512 bytes"#
            ),
            (#"{"type":"fetch"}"#, #"fetch needs "after""#),
            (#"{"type":"fetched","seq":null}"#, #"fetched "seq" must be an integer of 0 or more, got null"#),
        ]
        for (text, message) in cases {
            XCTAssertEqual(decode(text), .failure(WireError(.invalidMessage, message)), text)
        }
        let long = String(repeating: "x", count: ElectionMessage.maxReasonBytes + 1)
        let tooLong = #"{"type":"vote","term":3,"granted":false,"lastSeq":1,"lastTerm":1,"reason":"\#(long)"}"#
        XCTAssertEqual(decode(tooLong), .failure(WireError(.invalidMessage, #"vote "reason" must be a string of at most 512 bytes"#)))
    }
}
