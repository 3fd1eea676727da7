import PostgresClient
import RollupCore

/// A batch made ready to go to head office: its rows and hashes (`RollupBatch`) and the column
/// arrays of `HeadOffice.ship`'s statements, built once, off the runner's thread
/// (`RollupReader`), so that the runner's own work per batch is the PostgreSQL round trips.
struct RollupShipment: Sendable {
    /// The entries, their hashes and the rolling hash at the last one.
    let batch: RollupBatch
    /// The journal insert's column arrays, its parameters $3…$11 in order: seq, term, op_id,
    /// origin, operation, message, recorded_at (ms), hash, rolling.
    let journalColumns: [PostgresValue]
    /// The orders' upserts (created or updated ones, then removed ones, each present only when
    /// not empty): the column arrays, parameters $3…$15 in order: uuid, customer_name,
    /// created, shipping_method, table_name, table_size, status, note, items, order, version,
    /// removed, seq.
    let orderParts: [(removed: Bool, columns: [PostgresValue])]

    /// The shipment of `batch`: each order's last state in it (`OrderRow.collapse`) and the
    /// column arrays.
    init(_ batch: RollupBatch) {
        self.batch = batch
        let e = batch.rows.map(\.entry)
        journalColumns = [
            .intArray(e.map(\.seq)), .intArray(e.map(\.term)), .textArray(e.map(\.opId)), .textArray(e.map(\.origin)),
            .intArray(e.map { Int64($0.operation) }), .textArray(e.map { String(decoding: $0.message, as: UTF8.self) }),
            .intArray(e.map(\.recordedAtMillis)), .bytesArray(batch.rows.map(\.hash)), .bytesArray(batch.rows.map(\.rolling)),
        ]
        let rows = OrderRow.collapse(e)
        orderParts = [false, true].compactMap { removed in
            let part = rows.filter { $0.removed == removed }
            guard !part.isEmpty else { return nil }
            return (
                removed,
                [
                    .textArray(part.map(\.uuid)), .textArray(part.map { $0.text("customerName") }),
                    .textArray(part.map { $0.text("created") }), .textArray(part.map { $0.text("shippingMethod") }),
                    .textArray(part.map { $0.text("tableName") }), .intArray(part.map { $0.int("tableSize") }),
                    .textArray(part.map { $0.text("status") }), .textArray(part.map { $0.text("note") }),
                    .textArray(part.map { $0.order["items"].map { $0.serialized() } }),
                    .textArray(part.map { JSONValueText.object($0.order) }), .intArray(part.map(\.version)),
                    .boolArray(part.map(\.removed)), .intArray(part.map(\.seq)),
                ]
            )
        }
    }
}
