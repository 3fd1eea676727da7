import Foundation
import HTTP1
import SyncCore

/// `GET` (or `HEAD`) `/v1/changes?since=SEQ&limit=N&timeout=S&epoch=E` (Docs/API.md, "Change feed"), with
/// `Accept: text/event-stream` for server-sent events and `Last-Event-ID` to resume. Pure.
public struct ChangesRequest: Equatable {
    /// Changes after this cursor.
    public var since: Int64 = 0
    /// Most changes in one JSON answer.
    public var limit = ChangeFeed.defaultLimit
    /// Long-poll: seconds to wait for a change when there is none yet (0: answer at once).
    public var timeout = 0
    /// The epoch the reader's cursor belongs to, when it gives one.
    public var epoch: String?
    /// Server-sent events instead of one JSON answer.
    public var stream = false

    /// The feed's path.
    public static let path = "/v1/changes"
    /// The methods the feed answers (`Allow` on its 405).
    public static let allowed = "GET, HEAD"

    /// nil when the request is not for the change feed; else the request or why it is refused.
    public static func decode(method: String, path: String, query: [(String, String)], headers: HTTPHeaders)
        -> Result<ChangesRequest, LocalAPIRoute.Failure>?
    {
        guard path == Self.path || path == Self.path + "/" else { return nil }
        // HEAD is answered as GET would be at once, with no body (a long-poll does not wait, an
        // event stream ends after its head).
        guard method == "GET" || method == "HEAD" else {
            return .failure(.init(status: 405, code: "method_not_allowed", message: "\(method) is not allowed on \(path)"))
        }
        func value(_ name: String) -> String? { query.last(where: { $0.0 == name })?.1 }
        func invalid(_ message: String) -> Result<ChangesRequest, LocalAPIRoute.Failure> {
            .failure(.init(status: 400, code: "invalid_query", message: message))
        }
        var r = ChangesRequest()
        r.stream = headers.listElements("Accept").contains { $0.lowercased().hasPrefix("text/event-stream") }
        // Both are checked; the EventSource resumes with "Last-Event-ID" (HTML, 9.2.4), which
        // wins over `since`.
        if let raw = value("since") {
            guard let n = Int64(raw), n >= 0 else { return invalid("'since' must be an integer, 0 or more") }
            r.since = n
        }
        if let raw = headers["Last-Event-ID"]?.trimmingCharacters(in: .whitespaces), !raw.isEmpty {
            guard raw.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
                return invalid("'Last-Event-ID' must be a change's seq (an integer, 0 or more)")
            }
            // Digits past Int64 name a change no node has made yet: ahead of the feed (410).
            r.since = Int64(raw) ?? Int64.max
        }
        if let raw = value("limit") {
            guard let n = Int(raw), (1...ChangeFeed.maxLimit).contains(n) else {
                return invalid("'limit' must be an integer in 1...\(ChangeFeed.maxLimit)")
            }
            r.limit = n
        }
        if let raw = value("timeout") {
            guard let n = Int(raw), (0...ChangeFeed.maxTimeoutSeconds).contains(n) else {
                return invalid("'timeout' must be seconds in 0...\(ChangeFeed.maxTimeoutSeconds)")
            }
            r.timeout = n
        }
        if let e = value("epoch"), !e.isEmpty { r.epoch = e }
        return .success(r)
    }
}
