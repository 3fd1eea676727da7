import Foundation
import JSON
import OrderStore
import SyncCore
import XCTest

@testable import OrderSyncNode

/// A master store whose commits fail while `failCommits` is set (nothing reaches the disk).
final class FailingCommitStore: MasterStore {
    let base: any MasterStore
    var failCommits = false
    init(_ base: any MasterStore) { self.base = base }
    struct Failure: Error, CustomStringConvertible { var description: String { "disk I/O error (test)" } }
    func order(uuid: String) throws -> Order? { try base.order(uuid: uuid) }
    func hasTombstone(uuid: String) throws -> Bool { try base.hasTombstone(uuid: uuid) }
    func allOrders() throws -> [Order] { try base.allOrders() }
    func lastJournalSeq() throws -> Int64 { try base.lastJournalSeq() }
    func firstJournalSeq() throws -> Int64? { try base.firstJournalSeq() }
    func journal(since seq: Int64, limit: Int) throws -> [JournalEntry] { try base.journal(since: seq, limit: limit) }
    func journalEntry(opId: String) throws -> JournalEntry? { try base.journalEntry(opId: opId) }
    func rejections(opId: String) throws -> [Rejection] { try base.rejections(opId: opId) }
    func commit(_ changes: [OrderChange], entry: JournalEntry) throws {
        if failCommits { throw Failure() }
        try base.commit(changes, entry: entry)
    }
    func appendRejection(_ rejection: Rejection) throws { try base.appendRejection(rejection) }
    func saveTerminals(_ terminals: [KnownTerminal]) throws { try base.saveTerminals(terminals) }
    func knownTerminals() throws -> [KnownTerminal] { try base.knownTerminals() }
    func forgetTerminals(lastSeenBefore millis: Int64) throws -> Int { try base.forgetTerminals(lastSeenBefore: millis) }
    func compactTombstones(through seq: Int64) throws -> Int { try base.compactTombstones(through: seq) }
    func compactJournal(through seq: Int64, recordedBefore millis: Int64) throws -> Int {
        try base.compactJournal(through: seq, recordedBefore: millis)
    }
}
