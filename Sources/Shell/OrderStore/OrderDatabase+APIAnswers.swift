/// The local API's answers to operations received with an operation id: a repeat of the id
/// gets the first answer again, byte for byte (Docs/API.md). A master keeps each in the
/// operation's transaction; a slave once the master has answered (or it refused the operation
/// itself). The newest `maxAPIAnswers` are kept.
extension OrderDatabase {
    /// How many answers are kept.
    public static let maxAPIAnswers: Int64 = 10_000

    /// Keeps the answer to `opId` (in the caller's transaction when there is one, so it is on
    /// disk exactly when the operation is).
    public func saveAPIAnswer(opId: String, status: Int, body: String, atMillis: Int64) throws {
        try requireWritable()
        try transaction {
            try connection.execute(
                "INSERT OR REPLACE INTO api_answers (op_id, status, body, answered_ms) VALUES (?, ?, ?, ?)",
                [.text(opId), .integer(Int64(status)), .text(body), .integer(atMillis)])
            try connection.execute(
                "DELETE FROM api_answers WHERE position <= (SELECT max(position) FROM api_answers) - ?",
                [.integer(Self.maxAPIAnswers)])
        }
    }

    /// The answer kept for `opId`, if any.
    public func apiAnswer(opId: String) throws -> (status: Int, body: String)? {
        try connection.withStatement("SELECT status, body FROM api_answers WHERE op_id = ?", [.text(opId)]) { statement in
            guard try statement.step() else { return nil }
            return (Int(statement.int64(0)), statement.text(1))
        }
    }
}
