/// The position of each key of a `JSONObject` in its member array, so a lookup or an insert
/// costs expected constant time instead of a scan of every member.
///
/// An open-addressing hash table with linear probing whose slots hold positions in the member
/// array, kept at most half full. Keys are hashed with the standard library's `Hasher`, which is
/// seeded randomly per process, so a peer cannot choose keys that all collide.
///
/// Small objects (an order's items, most nested objects) get no table: scanning at most
/// `scanLimit` keys costs about what hashing one does and allocates nothing.
///
/// Every function adds to `probes` the number of table slots and keys it inspected, so a test
/// can check the work done grows linearly with the number of members.
struct JSONMemberIndex: Sendable {
    /// Objects with at most this many members are scanned, not hashed.
    static let scanLimit = 8

    /// Each slot holds 0 when empty, otherwise a member's position plus one. Empty while the
    /// object has at most `scanLimit` members; otherwise a power of two at least twice the
    /// member count.
    private var slots: [Int32] = []

    /// The position of `key` in `members`, or nil; when nil, `freeSlot` is the empty slot where
    /// the key belongs (-1 when there is no table).
    func position(
        of key: String, in members: [(key: String, value: JSONValue)],
        probes: inout Int
    ) -> (position: Int?, freeSlot: Int) {
        if slots.isEmpty {
            for (position, member) in members.enumerated() {
                probes += 1
                if member.key == key { return (position, -1) }
            }
            return (nil, -1)
        }
        let mask = slots.count - 1
        var slot = key.hashValue & mask
        while true {
            probes += 1
            let entry = Int(slots[slot])
            if entry == 0 { return (nil, slot) }
            if members[entry - 1].key == key { return (entry - 1, slot) }
            slot = (slot + 1) & mask
        }
    }

    /// Records the member just appended to `members`, whose key was not present: `freeSlot` is
    /// what `position(of:in:probes:)` returned for it.
    mutating func recordAppend(
        freeSlot: Int, in members: [(key: String, value: JSONValue)],
        probes: inout Int
    ) {
        let count = members.count
        if count <= Self.scanLimit { return }
        if slots.isEmpty || count * 2 > slots.count {
            rebuild(for: members, probes: &probes)
            return
        }
        slots[freeSlot] = Self.entry(forPosition: count - 1)
    }

    /// Rebuilds the table from `members` (after a member was removed, or to grow it).
    mutating func rebuild(for members: [(key: String, value: JSONValue)], probes: inout Int) {
        guard members.count > Self.scanLimit else {
            slots = []
            return
        }
        var capacity = 16
        while capacity < members.count * 4 { capacity *= 2 }
        var table = [Int32](repeating: 0, count: capacity)
        let mask = capacity - 1
        for (position, member) in members.enumerated() {
            var slot = member.key.hashValue & mask
            probes += 1
            while table[slot] != 0 {
                slot = (slot + 1) & mask
                probes += 1
            }
            table[slot] = Self.entry(forPosition: position)
        }
        slots = table
    }

    private static func entry(forPosition position: Int) -> Int32 {
        guard let entry = Int32(exactly: position + 1) else {
            preconditionFailure("a JSON object with more than \(Int32.max - 1) members")
        }
        return entry
    }
}
