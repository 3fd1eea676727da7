import JSON

/// The order handling of the StorePOS app (its `OrderService`, `OrderNotification` and
/// `DBService`), as its source has it, for checking what a plain StorePOS terminal shows:
///
/// * the screen's list is in memory; at start it is loaded from the persisted orders;
/// * a received Create appends every order, without looking for its uuid; the persisted insert
///   of a uuid already stored raises an exception the app does not catch: it crashes (`crashed`);
/// * a received Update replaces the first order with the uuid, and is dropped when there is none;
/// * a received Remove naming k uuids does nothing while the list holds fewer than k orders,
///   else removes the first order with each uuid it finds;
/// * uuids are compared exactly (case included); unknown members are ignored, a message without
///   `orders` changes nothing (an `error` has none);
/// * its own change is applied first, then sent; the master relays, it never answers.
///
/// The app processes each received order on a concurrent queue; the model applies them in the
/// order received (`Tests/lan/test_storepos_connect_model.py` checks the other orders the
/// queue may take; `Docs/PROTOCOL.md` 4.2.1).
struct StorePOSAppModel {
    /// One order as the app keeps it.
    struct Row: Equatable {
        var uuid: String
        var customerName: String
    }

    /// The list the screen shows.
    private(set) var list: [Row] = []
    /// The orders persisted (Realm, keyed by uuid).
    private(set) var persisted: [String: Row] = [:]
    /// A received Create named a uuid already persisted: the real app would have crashed.
    private(set) var crashed = false

    /// A fresh install: nothing persisted.
    init() {}

    /// The app restarted: the list is what was persisted.
    mutating func restart() {
        list = persisted.values.sorted { $0.uuid < $1.uuid }
    }

    /// A message from the master.
    mutating func receive(_ text: String) {
        guard let message = try? JSONParser.parse(Array(text.utf8)).objectValue else { return }
        let operation = message["operation"]?.intValue ?? 0
        let rows: [Row] = (message["orders"]?.arrayValue ?? []).compactMap { value in
            guard let o = value.objectValue, let uuid = o["uuid"]?.stringValue else { return nil }
            return Row(uuid: uuid, customerName: o["customerName"]?.stringValue ?? "")
        }
        switch operation {
        case 0:
            for row in rows {
                list.append(row)
                if persisted[row.uuid] == nil { persisted[row.uuid] = row } else { crashed = true }
            }
        case 1:
            for row in rows {
                guard let index = list.firstIndex(where: { $0.uuid == row.uuid }) else { continue }
                list[index] = row
                if persisted[row.uuid] != nil { persisted[row.uuid] = row }
            }
        case 2:
            guard list.count >= rows.count else { return }
            var indexes: Set<Int> = []
            for row in rows {
                if let index = list.firstIndex(where: { $0.uuid == row.uuid }) { indexes.insert(index) }
            }
            for index in indexes.sorted(by: >) {
                persisted[list[index].uuid] = nil
                list.remove(at: index)
            }
        default:
            break
        }
    }

    /// The user takes an order: applied, then the message to send.
    mutating func create(_ uuid: String, _ customerName: String) -> String {
        let row = Row(uuid: uuid, customerName: customerName)
        list.append(row)
        if persisted[uuid] == nil { persisted[uuid] = row }
        return Self.message(0, row)
    }

    /// The user edits an order it shows: applied, then the message to send.
    mutating func update(_ uuid: String, _ customerName: String) -> String? {
        guard let index = list.firstIndex(where: { $0.uuid == uuid }) else { return nil }
        list[index].customerName = customerName
        if persisted[uuid] != nil { persisted[uuid] = list[index] }
        return Self.message(1, list[index])
    }

    /// The user removes an order it shows: applied, then the message to send.
    mutating func remove(_ uuid: String) -> String? {
        guard let index = list.firstIndex(where: { $0.uuid == uuid }) else { return nil }
        let row = list.remove(at: index)
        persisted[uuid] = nil
        return Self.message(2, row)
    }

    private static func message(_ operation: Int64, _ row: Row) -> String {
        let order = JSONObject([
            ("uuid", .string(row.uuid)), ("customerName", .string(row.customerName)),
            ("created", .string("2016-01-12T21:35:16+0800")), ("tableSize", .int(-1)),
        ])
        return JSONValue.object(JSONObject([("operation", .int(operation)), ("orders", .array([.object(order)]))])).serialized()
    }
}
