/// The orders a snapshot sends, as they stood at one sequence, handed out a page at a time.
///
/// The engine asks for pages in order while a terminal's link has room (`SnapshotStream`); a
/// source may not have a page yet (the node reads them on a thread of their own, off the loop):
/// it answers nil and tells its owner once the page is there, and the engine is asked again. A
/// source serves every terminal that joins at its sequence; it stands at that sequence for as
/// long as it lives, whatever the master applies meanwhile (`Docs/PROTOCOL.md` 4.2).
public protocol SnapshotPages: AnyObject, Sendable {
    /// Orders per page: every page holds this many but the last, which holds the rest (an
    /// empty store has one empty page).
    var pageSize: Int { get }
    /// How many orders the snapshot holds; nil while the read is still opening.
    var orderCount: Int? { get }
    /// The orders the journal records as removed that the snapshot does not hold, as first
    /// written, newest removal first (a StorePOS app's Removes after those of the orders); nil
    /// while the read is still opening.
    var removedUUIDs: [String]? { get }
    /// Why the read failed, once it did: no page will come.
    var failure: String? { get }
    /// The orders of page `index` (0-based, in `created` then key order), or nil while it is
    /// being read.
    func page(_ index: Int) -> [Order]?
}

extension SnapshotPages {
    /// How many pages the snapshot takes once open (at least one).
    public var pageCount: Int? {
        orderCount.map { max(1, ($0 + pageSize - 1) / pageSize) }
    }
}

/// A snapshot read whole, at once (the simulation, tests, and a master without a paged reader):
/// every page is there from the start.
public final class LoadedSnapshotPages: SnapshotPages {
    public let pageSize: Int
    private let orders: [Order]
    private let removed: [String]

    /// `orders` as `MasterStore.allOrders()` lists them, cut into pages of `pageSize`;
    /// `removed` the removed orders the snapshot does not hold.
    public init(orders: [Order], removed: [String] = [], pageSize: Int) {
        self.orders = orders
        self.removed = removed
        self.pageSize = max(1, pageSize)
    }

    public var orderCount: Int? { orders.count }
    public var removedUUIDs: [String]? { removed }
    public var failure: String? { nil }

    public func page(_ index: Int) -> [Order]? {
        let start = min(orders.count, index * pageSize)
        return Array(orders[start..<min(orders.count, start + pageSize)])
    }

    /// The position of the order with this key (`Order.key`), if the snapshot holds it.
    func index(ofKey key: String) -> Int? { orders.firstIndex { $0.key == key } }
}
