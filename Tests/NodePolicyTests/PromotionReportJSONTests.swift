import JSON
import SyncCore
import XCTest

@testable import NodePolicy

/// `POST /v1/promote`'s answers as JSON (design.md, "Promotion").
final class PromotionReportJSONTests: XCTestCase {
    func text(_ r: PromotionReport) -> String { r.jsonValue.serialized() }

    func testAPromotionAnswersInTheDesignShape() throws {
        let r = PromotionReport(
            term: 3, seq: 812, voters: ["master", "till-a", "till-b"], promised: ["till-a", "till-b"], unreachable: ["master"],
            fetched: .init(from: "till-b", entries: 2), tookMs: 1234)
        XCTAssertEqual(
            text(r),
            #"{"promoted":true,"term":3,"seq":812,"voters":["master","till-a","till-b"],"promised":["till-a","till-b"],"#
                + #""unreachable":["master"],"refused":[],"fetched":{"from":"till-b","entries":2},"forced":false,"tookMs":1234}"#)
        XCTAssertEqual(try PromotionReport(jsonBytes: Array(text(r).utf8)), r)
        var plain = r
        plain.fetched = nil
        plain.forced = true
        XCTAssertTrue(text(plain).contains(#""fetched":null,"forced":true"#))
        XCTAssertEqual(try PromotionReport(jsonBytes: Array(text(plain).utf8)), plain)
    }

    func testARefusalIsTheLocalAPIErrorWithItsBallot() throws {
        let r = PromotionReport(
            term: 3, seq: 10, voters: ["master", "till-a", "till-b"], promised: ["till-a"], unreachable: ["master"],
            refused: [.init(name: "till-b", reason: "voted for C in term 3")], tookMs: 10_002,
            refusal: .init(.noMajority, "1 of 3 voters promised, 2 needed"))
        XCTAssertEqual(
            text(r),
            #"{"error":{"code":"no_majority","message":"1 of 3 voters promised, 2 needed","term":3,"#
                + #""voters":["master","till-a","till-b"],"promised":["till-a"],"unreachable":["master"],"#
                + #""refused":[{"name":"till-b","reason":"voted for C in term 3"}],"forced":false,"tookMs":10002}}"#)
        var back = r
        back.seq = 0
        XCTAssertEqual(try PromotionReport(jsonBytes: Array(text(r).utf8)), back, "a refusal does not say its seq")
        let busy = PromotionReport.refused(.promoting, "a promotion is running")
        XCTAssertEqual(text(busy), #"{"error":{"code":"promoting","message":"a promotion is running"}}"#)
        XCTAssertEqual(try PromotionReport(jsonBytes: Array(text(busy).utf8)), busy)
    }

    func testBadAnswersNameTheMember() {
        let cases: [(String, String)] = [
            (#"{"promoted":false}"#, #""promoted": a refused promotion answers with "error""#),
            (#"{"promoted":true,"term":"3"}"#, #""term": expected an integer, got string"#),
            (#"{"error":{"code":"nope","message":"m"}}"#, #""error.code": unknown value "nope""#),
            (
                #"{"promoted":true,"term":3,"seq":1,"voters":[1],"promised":[],"unreachable":[],"refused":[],"forced":false,"tookMs":1}"#,
                #""voters[0]": expected a string, got number"#
            ),
        ]
        for (json, message) in cases {
            XCTAssertThrowsError(try PromotionReport(jsonBytes: Array(json.utf8)), json) {
                XCTAssertEqual(($0 as? NodeJSONError)?.description, message, json)
            }
        }
    }
}
