import Foundation
import NodePolicy
import SyncCore

/// What the dashboard reads from a request: the session cookie, the journal search's filters.
extension DashboardServer {
    /// The value of cookie `name` in a `Cookie` header.
    static func cookie(_ name: String, in header: String?) -> String? {
        guard let header else { return nil }
        for part in header.split(separator: ";") {
            let pair = part.trimmingCharacters(in: .whitespaces)
            if pair.hasPrefix(name + "=") { return String(pair.dropFirst(name.count + 1)) }
        }
        return nil
    }

    /// `order`, `terminal`, `from`, `to` (milliseconds), `before` (seq), `limit` (1-1000).
    static func journalQuery(_ query: [(String, String)]) -> Result<DashboardJournalQuery, LocalAPIRoute.Failure> {
        func value(_ name: String) -> String? {
            query.last { $0.0 == name }.map(\.1).flatMap { $0.isEmpty ? nil : $0 }
        }
        func invalid(_ message: String) -> Result<DashboardJournalQuery, LocalAPIRoute.Failure> {
            .failure(.init(status: 400, code: "invalid_query", message: message))
        }
        var q = DashboardJournalQuery()
        if let o = value("order") {
            guard Order.isValidUUID(o) else { return invalid("'order' must be an order's UUID") }
            q.order = o
        }
        if let t = value("terminal") {
            guard t.utf8.count <= 200 else { return invalid("'terminal' is too long") }
            q.terminal = t
        }
        for (name, keyPath) in [("from", \DashboardJournalQuery.fromMillis), ("to", \.toMillis), ("before", \.beforeSeq)] {
            guard let raw = value(name) else { continue }
            guard let n = Int64(raw), n >= 0 else { return invalid("'\(name)' must be a non-negative integer") }
            q[keyPath: keyPath] = n
        }
        if let raw = value("limit") {
            guard let n = Int(raw), (1...1000).contains(n) else { return invalid("'limit' must be an integer in 1...1000") }
            q.limit = n
        }
        return .success(q)
    }
}
