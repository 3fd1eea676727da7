/// The local API's answers to operations received with an operation id: a repeat of the id
/// gets the first answer again, byte for byte (Docs/API.md). A master keeps each in the
/// operation's transaction; a slave once the master has answered (or it refused the operation
/// itself). The newest `maxAPIAnswers` are kept. The body is kept as the bytes that were sent,
/// and read back as bytes: a repeat is answered without parsing it again.
extension OrderDatabase {
    /// How many answers are kept.
    public static let maxAPIAnswers: Int64 = 10_000

    /// Keeps the answer to `opId` (in the caller's transaction when there is one, so it is on
    /// disk exactly when the operation is).
    public func saveAPIAnswer(opId: String, status: Int, body: String, atMillis: Int64) throws {
        try saveAPIAnswer(opId: opId, status: status, body: Array(body.utf8), atMillis: atMillis)
    }

    /// Keeps the answer to `opId` as the UTF-8 bytes of its JSON body, as sent.
    public func saveAPIAnswer(opId: String, status: Int, body: [UInt8], atMillis: Int64) throws {
        try requireWritable()
        try transaction {
            try connection.execute(
                "INSERT OR REPLACE INTO api_answers (op_id, status, body, answered_ms) VALUES (?, ?, ?, ?)",
                [.text(opId), .integer(Int64(status)), .utf8(body), .integer(atMillis)])
            try connection.execute(
                "DELETE FROM api_answers WHERE position <= (SELECT max(position) FROM api_answers) - ?",
                [.integer(Self.maxAPIAnswers)])
        }
    }

    /// The answer kept for `opId`, if any.
    public func apiAnswer(opId: String) throws -> (status: Int, body: String)? {
        try keptAPIAnswer(opId: opId).map { ($0.status, String(decoding: $0.body, as: UTF8.self)) }
    }

    /// The answer kept for `opId`, if any: its status and its body's bytes, as they were sent.
    public func keptAPIAnswer(opId: String) throws -> (status: Int, body: [UInt8])? {
        try connection.withStatement("SELECT status, body FROM api_answers WHERE op_id = ?", [.text(opId)]) { statement in
            guard try statement.step() else { return nil }
            return (Int(statement.int64(0)), statement.utf8(1))
        }
    }
}
