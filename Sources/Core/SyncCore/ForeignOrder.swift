/// An order a plain StorePOS app holds that the master's store does not have and never removed
/// (an iPad coming from StorePOS keeps its old `POSDatabase.realm`): seen when the app sends an
/// Update or Remove naming it (`not_found`). Operators list them (`ordersync storepos foreign`).
public struct ForeignOrder: Equatable, Sendable {
    /// What became of it.
    public enum State: String, Sendable, CaseIterable {
        /// Seen, nothing done yet.
        case seen
        /// Brought into the store.
        case adopted
        /// Removed from the apps.
        case cleared
    }

    /// The uuid as the app wrote it (the app compares uuids exactly).
    public var uuid: String
    /// The address of the app that last named it.
    public var address: String
    /// The order as the app last sent it (StorePOS sends the whole order in Update and Remove),
    /// as JSON text.
    public var content: String
    /// When it was first and last named (wall-clock milliseconds).
    public var firstSeenMillis: Int64
    public var lastSeenMillis: Int64
    /// How many times an app named it.
    public var count: Int64
    public var state: State

    /// A record from its fields.
    public init(
        uuid: String, address: String, content: String, firstSeenMillis: Int64, lastSeenMillis: Int64, count: Int64 = 1,
        state: State = .seen
    ) {
        self.uuid = uuid
        self.address = address
        self.content = content
        self.firstSeenMillis = firstSeenMillis
        self.lastSeenMillis = lastSeenMillis
        self.count = count
        self.state = state
    }
}
