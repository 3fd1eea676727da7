/// A JSON object with member order preserved, so members this node does not understand are sent
/// on unchanged and in the order they arrived.
///
/// Keys are unique: the parser rejects a text that repeats a member name, and assigning to a key
/// that is present replaces its value in place. Keys compare as Swift strings do (canonical
/// equivalence), so `"\u00e9"` and `"e\u0301"` are the same key.
///
/// Looking a key up, inserting and replacing take expected constant time (`JSONMemberIndex`
/// keeps the position of each key beside the member array); removing a member is linear.
public struct JSONObject: Equatable, Sendable {
    /// Members in order.
    public private(set) var members: [(key: String, value: JSONValue)]

    /// Where each key sits in `members`.
    private var index = JSONMemberIndex()

    /// An empty object.
    public init() { members = [] }

    /// An object with the given members, in order. A key given twice keeps its first position
    /// and its last value, as assigning the members one by one would.
    public init(_ members: [(String, JSONValue)]) {
        self.members = []
        self.members.reserveCapacity(members.count)
        for (key, value) in members { self[key] = value }
    }

    /// The value for `key`, or nil. Setting a new key appends it; setting nil removes the member.
    public subscript(key: String) -> JSONValue? {
        get {
            var probes = 0
            guard let position = index.position(of: key, in: members, probes: &probes).position else {
                return nil
            }
            return members[position].value
        }
        set {
            var probes = 0
            let found = index.position(of: key, in: members, probes: &probes)
            switch (found.position, newValue) {
            case (let position?, let value?):
                members[position].value = value
            case (let position?, nil):
                members.remove(at: position)
                index.rebuild(for: members, probes: &probes)
            case (nil, let value?):
                members.append((key: key, value: value))
                index.recordAppend(freeSlot: found.freeSlot, in: members, probes: &probes)
            case (nil, nil):
                break
            }
        }
    }

    /// The keys, in order.
    public var keys: [String] { members.map(\.key) }

    /// True when there are no members.
    public var isEmpty: Bool { members.isEmpty }

    /// Objects are equal when they have the same members in the same order.
    public static func == (a: JSONObject, b: JSONObject) -> Bool {
        guard a.members.count == b.members.count else { return false }
        for (x, y) in zip(a.members, b.members) where x.key != y.key || x.value != y.value {
            return false
        }
        return true
    }
}

extension JSONObject {
    /// Appends a member unless `key` is already present; returns whether it appended. Adds the
    /// slots and keys the index inspected to `probes`.
    mutating func appendIfAbsent(_ key: String, _ value: JSONValue, probes: inout Int) -> Bool {
        let found = index.position(of: key, in: members, probes: &probes)
        guard found.position == nil else { return false }
        members.append((key: key, value: value))
        index.recordAppend(freeSlot: found.freeSlot, in: members, probes: &probes)
        return true
    }

    /// Replaces the value of the last member. The parser appends a member when it has read its
    /// key, so a repeated key is reported where it stands, and fills the value in once read.
    mutating func setLastValue(_ value: JSONValue) {
        precondition(!members.isEmpty, "setLastValue on an empty JSON object")
        members[members.count - 1].value = value
    }
}
