import SyncCore

/// The wire carries messages as UTF-8 bytes; tests read and write them as text.
extension Array where Element == UInt8 {
    /// These bytes as UTF-8 text, for assertions on what was sent.
    public var text: String { String(decoding: self, as: UTF8.self) }
}

extension String {
    /// This text's UTF-8 bytes, as the wire carries a message.
    public var bytes: [UInt8] { Array(utf8) }
}

extension MasterEngine {
    /// A message from a terminal given as text (the engine takes the bytes a link delivers).
    public func received(_ text: String, from id: Int, now: Int64) -> [Action] {
        received(Array(text.utf8), from: id, now: now)
    }
}

extension SlaveEngine {
    /// A message from the master given as text (the engine takes the bytes a link delivers).
    public func received(_ text: String, now: Int64) -> [Action] {
        received(Array(text.utf8), now: now)
    }
}
