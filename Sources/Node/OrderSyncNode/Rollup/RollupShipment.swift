import PostgresClient
import RollupCore

/// A batch made ready to go to head office: its rows and hashes (`RollupBatch`) and the rows of
/// `HeadOffice.ship`'s two `COPY`s in PostgreSQL's COPY text format, built once, off the
/// runner's thread (`RollupReader`), so that the runner's own work per batch is the PostgreSQL
/// round trips.
struct RollupShipment: Sendable {
    /// The entries, their hashes and the rolling hash at the last one.
    let batch: RollupBatch
    /// The journal's rows, the columns of `HeadOffice.journalStage` in order: seq, term, op_id,
    /// origin, operation, message, recorded_at (ms since the epoch), hash, rolling.
    let journalRows: PostgresCopyText
    /// The orders the batch leaves behind (`OrderRow.collapse`), one row each, the columns of
    /// `HeadOffice.ordersStage` in order: uuid, customer_name, created, shipping_method,
    /// table_name, table_size, status, note, order (its JSON: `items` is taken from it at head
    /// office, so that each order is parsed into `jsonb` once), version, removed, seq.
    let orderRows: PostgresCopyText
    /// How many of `orderRows` are removals, and how many are not.
    let removedOrders: Int
    let liveOrders: Int

    /// The shipment of `batch`: each order's last state in it (`OrderRow.collapse`) and the
    /// rows of both COPYs.
    init(_ batch: RollupBatch) {
        self.batch = batch
        var journal = PostgresCopyText(capacity: batch.bytes + batch.rows.count * 200)
        for row in batch.rows {
            let e = row.entry
            journal.int(e.seq)
            journal.int(e.term)
            journal.text(e.opId)
            journal.text(e.origin)
            journal.int(Int64(e.operation))
            journal.text(String(decoding: e.message, as: UTF8.self))
            journal.int(e.recordedAtMillis)
            journal.bytea(row.hash)
            journal.bytea(row.rolling)
            journal.endRow()
        }
        journalRows = journal
        let orders = OrderRow.collapse(batch.rows.map(\.entry))
        var copy = PostgresCopyText(capacity: batch.bytes + orders.count * 64)
        for o in orders {
            copy.text(o.uuid)
            for key in ["customerName", "created", "shippingMethod", "tableName"] { copy.text(o.text(key)) }
            copy.int(o.int("tableSize"))
            copy.text(o.text("status"))
            copy.text(o.text("note"))
            copy.text(JSONValueText.object(o.order))
            copy.int(o.version)
            copy.bool(o.removed)
            copy.int(o.seq)
            copy.endRow()
        }
        orderRows = copy
        removedOrders = orders.count { $0.removed }
        liveOrders = orders.count - removedOrders
    }
}
