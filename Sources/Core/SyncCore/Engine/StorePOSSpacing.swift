/// What keeps two messages naming the same order far enough apart on a StorePOS app's queue.
///
/// The app handles each order it receives as a promise of its own on a concurrent dispatch
/// queue (`Docs/PROTOCOL.md` 4.2.1), so a change that follows another change of the same order
/// closely may be applied first: an Update before the Create it edits is dropped, a Remove
/// before the Create it removes leaves the order on the screen. The master counts the promises
/// each message gives the app (one per order of a Create or an Update, one per Remove) and,
/// before a message naming an order that one of the last `distance` promises named, sends as
/// many empty Removes (one promise each, no effect) as it takes to put `distance` promises in
/// between. Pure.
public struct StorePOSSpacing: Sendable, Equatable {
    /// How many promises must separate two messages naming the same order.
    public let distance: Int
    /// The promises sent so far.
    public private(set) var promises = 0
    /// The promise count at which each recent order was last named, by the order's key (`keys`).
    private var lastNamed: [Key: Int] = [:]

    /// An empty Remove: one promise on the app that changes nothing.
    public static let fenceMessage: [UInt8] = Array(#"{"operation":2,"orders":[]}"#.utf8)

    public init(distance: Int) {
        self.distance = max(0, distance)
    }

    /// The keys `fencesBefore(keys:promises:)` takes for orders named by `uuids`: a hash of each
    /// uuid lowercased. Computed once per message, not once per terminal (with 64 StorePOS
    /// terminals, lowercasing the uuid again and hashing a string per terminal was a fifth of the
    /// master's CPU). Two uuids of the same hash (one chance in 2^64 for a pair) count as one order:
    /// that can only add an empty Remove, never leave one out.
    public static func keys(naming uuids: [String]) -> [Int] {
        uuids.map { $0.lowercased().hashValue }
    }

    /// The empty Removes to send before a message naming `uuids` that gives the app `promises`
    /// promises; records the message as sent after them.
    public mutating func fencesBefore(naming uuids: [String], promises count: Int) -> Int {
        fencesBefore(keys: Self.keys(naming: uuids), promises: count)
    }

    /// `fencesBefore(naming:promises:)` with the orders' keys (`keys(naming:)`) computed already.
    public mutating func fencesBefore(keys: [Int], promises count: Int) -> Int {
        guard distance > 0 else { return 0 }
        var fences = 0
        for key in keys {
            if let at = lastNamed[Key(key)] { fences = max(fences, at + distance - promises) }
        }
        promises += fences
        for key in keys { lastNamed[Key(key)] = promises + count - 1 }
        promises += count
        if lastNamed.count > 2 * distance {
            // Kept in a table large enough for the next distance orders (growing it again from
            // half full rehashed every entry once more), and no larger: with fifty terminals the
            // tables are read for every operation, and at four times the distance (32 KiB each)
            // they no longer stayed in the core's cache (Docs/PERFORMANCE.md, "The spacing tables
            // kept small").
            var kept = [Key: Int](minimumCapacity: 2 * distance + 1)
            for (key, at) in lastNamed where promises - at < distance { kept[key] = at }
            lastNamed = kept
        }
        return fences
    }

    /// An order's key in `lastNamed`. The keys are already hashes (`keys(naming:)`, seeded afresh
    /// by each process, so no terminal can choose colliding ones): the table uses them as they
    /// are, mixed with its seed, instead of hashing each again (Hasher's SipHash on every lookup
    /// and insert, once per StorePOS terminal and operation, was a tenth of a master's CPU with
    /// fifty terminals).
    struct Key: Hashable {
        let value: Int
        init(_ value: Int) { self.value = value }
        func hash(into hasher: inout Hasher) { hasher.combine(value) }
        // swift-format-ignore: AlwaysUseLowerCamelCase
        func _rawHashValue(seed: Int) -> Int { value ^ seed }
    }

    /// The promises a message gives the app: one per order of a Create or an Update, one for a
    /// Remove (however many uuids it names).
    public static func promises(of operation: OperationKind, orders: Int) -> Int {
        operation == .remove ? 1 : orders
    }
}
