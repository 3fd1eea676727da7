import JSON
import SyncCore
import XCTest

@testable import NodePolicy

/// `POST /v1/promote`: the request decoded, the answer and the refusals as sent and printed, and
/// the terms masters announce (a non-member's never counted).
final class PromoteRouteTests: XCTestCase {
    private func decode(_ method: String, _ path: String, _ body: String = "") -> Result<PromoteRequest, LocalAPIRoute.Failure>? {
        PromoteRequest.decode(method: method, path: path, body: Array(body.utf8))
    }

    func testDecodesForceAndRefusesWhatIsNotARequest() {
        XCTAssertNil(decode("POST", "/v1/orders"))
        XCTAssertEqual(try decode("POST", "/v1/promote")?.get(), PromoteRequest(force: false))
        XCTAssertEqual(try decode("POST", "/v1/promote/", #"{"force":true}"#)?.get(), PromoteRequest(force: true))
        XCTAssertEqual(try decode("POST", "/v1/promote", #"{"force":null}"#)?.get(), PromoteRequest(force: false))
        for (method, body, status, code) in [
            ("GET", "", 405, "method_not_allowed"), ("POST", #"{"force":"yes"}"#, 400, "invalid_field"),
            ("POST", "[]", 400, "invalid_message"), ("POST", "{", 400, "malformed_json"),
        ] {
            guard case .failure(let f)? = decode(method, "/v1/promote", body) else { return XCTFail("\(method) \(body) was taken") }
            XCTAssertEqual(f.status, status, body)
            XCTAssertEqual(f.code, code, body)
        }
        XCTAssertEqual(LocalAPIExchange.allowedMethods(path: "/v1/promote"), ["POST"])
    }

    func testTheAnswerRoundTripsAndPrintsOneLinePerFact() throws {
        let answer = PromotionReport(
            term: 2, seq: 812, voters: ["front", "bar-2", "patio"], promised: ["bar-2", "patio"], unreachable: ["front"],
            fetched: .init(from: "patio", entries: 3), forced: false, tookMs: 840)
        XCTAssertEqual(
            answer.jsonValue.serialized(),
            #"{"promoted":true,"term":2,"seq":812,"voters":["front","bar-2","patio"],"promised":["bar-2","patio"],"#
                + #""unreachable":["front"],"refused":[],"fetched":{"from":"patio","entries":3},"forced":false,"tookMs":840}"#)
        XCTAssertEqual(try PromotionReport(json: answer.jsonValue), answer)
        XCTAssertEqual(
            answer.lines,
            [
                "promoted:    term 2, seq 812", "voters:      front, bar-2, patio", "promised:    bar-2, patio",
                "unreachable: front", "fetched:     3 entries from patio", "took:        840 ms",
            ])
        var alone = answer
        alone.fetched = nil
        alone.unreachable = []
        XCTAssertEqual(try PromotionReport(json: alone.jsonValue).fetched, nil)
        XCTAssertEqual(alone.lines[3], "unreachable: -")
        alone.refused = [.init(name: "patio", reason: "already voted in term 2")]
        XCTAssertEqual(alone.lines[4], "refused:     patio (already voted in term 2)")
    }

    func testARefusalNamesTheVotersOnlyForNoMajority() throws {
        let refusal = PromoteRefusal(
            .noMajority, message: "no majority", unreachable: ["front"], voters: ["front", "bar-2", "patio"], promised: ["bar-2"])
        XCTAssertEqual(refusal.httpStatus, 409)
        let error = try XCTUnwrap(refusal.jsonValue.objectValue?["error"]?.objectValue)
        XCTAssertEqual(error["code"], .string("no_majority"))
        XCTAssertEqual(
            PromoteRefusal.lines(error),
            [
                "refused:     no majority [no_majority]", "voters:      front, bar-2, patio", "promised:    bar-2", "unreachable: front",
            ])
        let busy = PromoteRefusal(.promoting, message: "busy")
        XCTAssertEqual(busy.httpStatus, 503)
        XCTAssertNil(busy.jsonValue.objectValue?["error"]?.objectValue?["voters"])
    }

    func testTheHighestTermCountsMembersOnly() {
        func service(_ name: String, id: String?, term: String?, role: String? = nil) -> MasterCandidate {
            var txt = ["proto": "ordersync/1", "store": "shop1", "epoch": "e1"]
            txt["id"] = id
            txt["term"] = term
            txt["role"] = role
            return MasterCandidate(
                name: name, type: "_pos._tcp", domain: "local", hostName: "\(name).local", address: "10.0.0.\(name.count)", port: 7420,
                txt: txt, interfaceIndex: 2)
        }
        var candidates = MasterCandidates()
        _ = candidates.found(service("old", id: "A", term: nil))
        _ = candidates.found(service("rogue", id: "R", term: "999"))
        _ = candidates.found(service("bar", id: "B", term: "3", role: "candidate"))
        _ = candidates.found(service("junk", id: "C", term: "-4"))
        XCTAssertEqual(candidates.highestTerm(members: ["A"]), 1)
        XCTAssertEqual(candidates.highestTerm(members: ["A", "B", "C"]), 3)
        XCTAssertEqual(candidates.highestTerm(members: []), 1)
        XCTAssertTrue(candidates.seen.first { $0.name == "bar" }!.isCandidate)
        XCTAssertNil(candidates.seen.first { $0.name == "junk" }!.term)
    }

    func testARivalRefusalReadsBackAndCountsAsARefusedPromotion() throws {
        // `ordersync promote` exits 1 for the codes `PromoteRefusal.Code` knows.
        XCTAssertEqual(PromoteRefusal.Code(rawValue: "rival_candidate"), .rivalCandidate)
        var report = PromotionReport(term: 1026, seq: 9, voters: ["a", "b", "c"], promised: ["a"], unreachable: ["c"])
        report.refusal = .init(.rivalCandidate, "b answered that c holds term 1027")
        let decoded = try PromotionReport(json: report.jsonValue)
        XCTAssertEqual(decoded.refusal, report.refusal)
        XCTAssertEqual(decoded.term, 1026)
    }
}
