import JSON
import SyncCore

// Feeds arbitrary text to the sync message decoders and the JSON parser, and checks what must
// hold whatever a terminal or a master sends:
//
// - nothing traps (the decoders promise a `WireError` for every problem);
// - JSON round-trips: any parsed value serializes to text that parses back to an equal value
//   (numbers compared by value: `1.0` is written as `1`);
// - messages round-trip: a decoded client or server message, encoded and decoded again, is the
//   same message;
// - planning an operation against a small store judges every order exactly once (changed,
//   unchanged or rejected), within the per-message limit, and every change is well-formed.

/// libFuzzer's entry point: the input as JSON bytes and as a message's bytes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    checkJSON(input)
    // The decoders take a message's bytes as the link delivers them.
    checkClientMessage(input)
    checkServerMessage(input)
    return 0
}

/// Traps with `message` (libFuzzer records the input as a crash) unless `condition` holds.
private func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() {
        fatalError("fuzz invariant violated: \(message())")
    }
}

// MARK: - JSON

private func checkJSON(_ input: [UInt8]) {
    guard let value = try? JSONParser.parse(input) else { return }
    let text = value.serialized()
    let again: JSONValue
    do {
        again = try JSONParser.parse(text)
    } catch {
        fatalError("fuzz invariant violated: serialized JSON does not parse (\(error)): \(text)")
    }
    require(sameJSON(value, again), "JSON round-trip changed \(text) into \(again.serialized())")
    require(again.serialized() == text, "serialization is not stable: \(text)")
}

/// Equality of JSON values with numbers compared by value, since the writer prints an integral
/// double such as `1.0` as `1`, which parses back as an integer.
private func sameJSON(_ a: JSONValue, _ b: JSONValue) -> Bool {
    switch (a, b) {
    case (.int(let x), .double(let y)), (.double(let y), .int(let x)):
        return Double(x) == y
    case (.array(let x), .array(let y)):
        return x.count == y.count && zip(x, y).allSatisfy(sameJSON)
    case (.object(let x), .object(let y)):
        return x.members.count == y.members.count
            && zip(x.members, y.members).allSatisfy { $0.key == $1.key && sameJSON($0.value, $1.value) }
    default:
        return a == b
    }
}

/// `value` as it reads back after serialization: an integral double the writer prints without
/// a fraction becomes an integer.
private func normalized(_ value: JSONValue) -> JSONValue {
    switch value {
    case .double(let d) where d.rounded() == d && abs(d) < 1e15:
        return .int(Int64(d))
    case .array(let items):
        return .array(items.map(normalized))
    case .object(let object):
        return .object(normalized(object))
    default:
        return value
    }
}

private func normalized(_ object: JSONObject) -> JSONObject {
    JSONObject(object.members.map { ($0.key, normalized($0.value)) })
}

/// `message` with the unknown order members normalized like `normalized(_: JSONValue)`.
private func normalized(_ message: ServerMessage) -> ServerMessage {
    guard case let .applied(operation, orders, seq, opId, origin, snapshot, part) = message else { return message }
    let plain = orders.map { order -> Order in
        var copy = order
        copy.extra = normalized(order.extra)
        return copy
    }
    return .applied(operation: operation, orders: plain, seq: seq, opId: opId, origin: origin, snapshot: snapshot, part: part)
}

// MARK: - Terminal to master

/// A fixed clock for `OperationPlanner.plan`.
private let now = OrderTimestamp(epochMillis: 1_452_605_716_250, offsetMinutes: 480)

/// The small store the planner reads: two orders from the StorePOS example (upper-case UUIDs,
/// stored as written) and one in lower case.
private let store: [String: Order] = {
    let orders = [
        Order(
            uuid: "9437C8F5-D742-46CB-9847-737C5809392C", customerName: "Kevin",
            created: OrderTimestamp(parsing: "2016-01-12T21:35:16+0800")!, shippingMethod: "DHL", tableSize: -1),
        Order(
            uuid: "E1CF0738-9400-4335-98AD-F882096C23C1", customerName: "Kevin",
            created: OrderTimestamp(parsing: "2016-01-09T22:41:37+0800")!, shippingMethod: "DHL", tableSize: -1,
            version: 3),
        Order(
            uuid: "0f8fad5b-d9cb-469f-a165-70867728950e", customerName: "Ann",
            created: OrderTimestamp(parsing: "2024-03-01T12:00:00Z")!, tableName: "T4", tableSize: 4),
    ]
    return Dictionary(uniqueKeysWithValues: orders.map { ($0.key, $0) })
}()

private func checkClientMessage(_ bytes: [UInt8]) {
    guard case .success(let message) = ClientMessage.decode(bytes) else { return }
    switch message {
    case .hello(let hello):
        require(!hello.terminalId.isEmpty && hello.lastSeq >= 0 && (hello.outbox ?? 0) >= 0, "accepted hello \(hello)")
        let again = ClientMessage.decode(hello.encodedBytes())
        require(again == .success(.hello(hello)), "hello round-trip gave \(again)")
    case .ack(let seq, let outbox, let held, let clock):
        require(
            seq >= 0 && (outbox ?? 0) >= 0 && (held ?? 0) >= 0,
            "accepted ack of \(seq) with outbox \(String(describing: outbox)), held \(String(describing: held))")
        require(
            ClientMessage.decode(ClientMessage.encodeAck(seq: seq, outbox: outbox, held: held, clock: clock))
                == .success(.ack(seq: seq, outbox: outbox, held: held, clock: clock)),
            "ack round-trip")
    case .operation(let operation):
        if let id = operation.opId {
            require(!id.isEmpty && id.utf8.count <= 128, "accepted opId of \(id.utf8.count) bytes")
        }
        switch ClientMessage.decode(operation.encodedBytes()) {
        case .success(.operation(let again)):
            require(
                again.operation == operation.operation && again.opId == operation.opId
                    && sameJSON(.array(again.orders), .array(operation.orders)),
                "operation round-trip changed \(operation.encoded())")
        case let other:
            fatalError("fuzz invariant violated: operation round-trip gave \(other)")
        }
        checkPlan(operation)
    }
}

private func checkPlan(_ operation: OperationMessage) {
    let plan = OperationPlanner.plan(operation, now: now, lookup: { store[$0.lowercased()] })
    let judged = plan.changes.count + plan.unchanged.count + plan.errors.count
    if operation.orders.count > OperationPlanner.maxOrdersPerMessage {
        require(
            plan.changes.isEmpty && plan.unchanged.isEmpty && plan.errors.count == 1,
            "an oversized message was planned")
        return
    }
    require(judged == operation.orders.count, "\(operation.orders.count) orders judged \(judged) times")
    for change in plan.changes {
        let order = change.order
        require(Order.isValidUUID(order.uuid), "planned an order with uuid \(order.uuid)")
        for field in [order.customerName, order.shippingMethod ?? "", order.tableName ?? ""] {
            require(field.utf8.count <= OrderFields.maxTextBytes, "planned a text field over the limit")
        }
        require(order.tableSize.map { $0 >= -1 && $0 <= 100_000 } ?? true, "planned tableSize \(order.tableSize!)")
        require(order.created.epochMillis % 1000 == 0, "planned a created time with a fraction of a second")
        switch change {
        case .insert(let inserted):
            require(operation.operation == .create && inserted.version == 1, "insert \(inserted)")
        case .update(let updated):
            require(operation.operation == .update && updated.version >= 2, "update \(updated)")
        case .delete:
            require(operation.operation == .remove, "delete from \(operation.operation)")
        }
        // What the master broadcasts must be readable by a slave.
        let broadcast = ServerMessage.applied(
            operation: operation.operation, orders: [order], seq: 1,
            opId: operation.opId, origin: "fuzz", snapshot: nil)
        let decoded = ServerMessage.decode(broadcast.encodedBytes()).map(normalized)
        require(
            decoded == .success(normalized(broadcast)),
            "a slave reads the broadcast \(broadcast.encoded()) as \(decoded)")
    }
    for error in plan.errors {
        require(error.index.map { $0 >= 0 && $0 < operation.orders.count } ?? true, "error index \(error)")
    }
}

// MARK: - Master to terminal

private func checkServerMessage(_ bytes: [UInt8]) {
    guard case .success(let message) = ServerMessage.decode(bytes) else { return }
    let encoded = message.encodedBytes()
    let again = ServerMessage.decode(encoded)
    guard case .success(let decoded) = again else {
        fatalError("fuzz invariant violated: server message round-trip: \(message.encoded()) decodes as \(again)")
    }
    require(normalized(decoded) == normalized(message), "server message round-trip: \(message.encoded()) decodes as \(decoded)")
    require(decoded.encodedBytes() == encoded, "server message encoding is not stable: \(message.encoded())")
    if case .applied(_, let orders, _, _, _, _, _) = message {
        for order in orders {
            require(Order.isValidUUID(order.uuid) && order.version >= 1, "slave accepted \(order)")
        }
    }
}
