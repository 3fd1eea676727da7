import JSON
import SyncCore

/// Orders: one row per order, keyed by the lower-cased UUID.
///
/// An order's UUID is compared case-insensitively: `uuid_key` (the UUID in lower case) is the
/// primary key, `uuid` keeps it as it was written. `created` is kept exactly as
/// `created_ms` + `created_offset_min` (and as StorePOS text, for people reading the file);
/// lists are ordered by `created_ms`, then `uuid_key`, which the index `orders_by_created`
/// serves directly.
extension OrderDatabase {
    /// The columns every order query selects, in the order `decodeOrder` reads them.
    static let orderColumns = """
        uuid, customer_name, created_ms, created_offset_min, shipping_method, table_name, table_size, \
        extra_json, version, status, items_json, note
        """

    /// The order with this UUID (any case), or nil.
    public func order(uuid: String) throws -> Order? {
        try connection.withStatement(
            "SELECT \(Self.orderColumns) FROM orders WHERE uuid_key = ?",
            [.text(uuid.lowercased())]
        ) { statement in
            try statement.step() ? try decodeOrder(statement) : nil
        }
    }

    /// Stores a new order. Throws `.duplicate` when an order with the same UUID (in any case)
    /// exists.
    public func insertOrder(_ order: Order) throws {
        try requireWritable()
        do {
            try connection.execute(
                """
                INSERT INTO orders (uuid_key, uuid, customer_name, created_text, created_ms, created_offset_min,
                                    shipping_method, table_name, table_size, extra_json, version, status, items_json, note)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, Self.values(of: order))
        } catch var error as StoreError where error.kind == .duplicate {
            error.message = "an order with uuid \(order.uuid) already exists (\(error.message))"
            throw error
        }
    }

    /// Replaces the stored order with the same UUID (any case) by `order`, including its `uuid`
    /// spelling and `version`. Throws `.notFound` when there is none.
    public func updateOrder(_ order: Order) throws {
        try requireWritable()
        var values = Array(Self.values(of: order).dropFirst())
        values.append(.text(order.key))
        let changed = try connection.execute(
            """
            UPDATE orders SET uuid = ?, customer_name = ?, created_text = ?, created_ms = ?, created_offset_min = ?,
                              shipping_method = ?, table_name = ?, table_size = ?, extra_json = ?, version = ?,
                              status = ?, items_json = ?, note = ?
            WHERE uuid_key = ?
            """, values)
        if changed == 0 { throw StoreError.notFound(uuid: order.uuid, path: path) }
    }

    /// Stores `order`, inserting it or replacing the order with the same UUID (any case). For a
    /// replica applying what its master decided.
    public func upsertOrder(_ order: Order) throws {
        try requireWritable()
        try connection.execute(
            """
            INSERT INTO orders (uuid_key, uuid, customer_name, created_text, created_ms, created_offset_min,
                                shipping_method, table_name, table_size, extra_json, version, status, items_json, note)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (uuid_key) DO UPDATE SET
                uuid = excluded.uuid, customer_name = excluded.customer_name, created_text = excluded.created_text,
                created_ms = excluded.created_ms, created_offset_min = excluded.created_offset_min,
                shipping_method = excluded.shipping_method, table_name = excluded.table_name,
                table_size = excluded.table_size, extra_json = excluded.extra_json, version = excluded.version,
                status = excluded.status, items_json = excluded.items_json, note = excluded.note
            """, Self.values(of: order))
    }

    /// Removes the order with this UUID (any case). Throws `.notFound` when there is none.
    public func deleteOrder(uuid: String) throws {
        try requireWritable()
        let changed = try connection.execute("DELETE FROM orders WHERE uuid_key = ?", [.text(uuid.lowercased())])
        if changed == 0 { throw StoreError.notFound(uuid: uuid, path: path) }
    }

    /// One page of orders, ordered by `created`, then UUID (lower case), with the total count.
    /// `page` starts at 1; both come from one snapshot of the database.
    public func orders(page: Int, per: Int) throws -> (total: Int, orders: [Order]) {
        try orders(page: page, per: per, status: nil)
    }

    /// One page of the orders with `status` (all when nil), ordered like `orders(page:per:)`,
    /// or the other way round with `newestFirst` (by `created`, then UUID, both descending).
    public func orders(
        page: Int, per: Int, status: OrderStatus?, newestFirst: Bool = false
    ) throws -> (total: Int, orders: [Order]) {
        guard page >= 1, per >= 1 else {
            throw StoreError(
                kind: .invalidArgument,
                message: "page and per must be at least 1 (got page \(page), per \(per))", path: path)
        }
        let (offset, overflow) = (page - 1).multipliedReportingOverflow(by: per)
        return try reading {
            let total: Int
            if let s = status {
                total = Int(
                    try connection.withStatement("SELECT count(*) FROM orders WHERE status = ?", [.text(s.rawValue)]) {
                        try $0.step() ? $0.int64(0) : 0
                    })
            } else {
                total = try orderCount()
            }
            if overflow || offset >= total { return (total, []) }
            let filter = status == nil ? "" : "WHERE status = ?"
            let sort = newestFirst ? "created_ms DESC, uuid_key DESC" : "created_ms, uuid_key"
            var values: [SQLiteValue] = status.map { [.text($0.rawValue)] } ?? []
            values += [.integer(Int64(per)), .integer(Int64(offset))]
            let orders = try connection.withStatement(
                """
                SELECT \(Self.orderColumns) FROM orders \(filter) ORDER BY \(sort) LIMIT ? OFFSET ?
                """, values
            ) { statement in
                try decodeOrders(statement)
            }
            return (total, orders)
        }
    }

    /// Every order, ordered by `created`, then UUID (lower case).
    public func allOrders() throws -> [Order] {
        try connection.withStatement("SELECT \(Self.orderColumns) FROM orders ORDER BY created_ms, uuid_key") {
            try decodeOrders($0)
        }
    }

    /// The number of orders.
    public func orderCount() throws -> Int {
        Int(try connection.scalarInt("SELECT count(*) FROM orders") ?? 0)
    }

    /// Replaces every order by `orders` (a snapshot received by a replica). Atomic: it runs as a
    /// transaction, or as a savepoint inside the caller's. Throws `.duplicate` when two of
    /// `orders` share a UUID (in any case), leaving the stored orders as they were.
    public func replaceAllOrders(with orders: [Order]) throws {
        try transaction {
            try connection.execute("DELETE FROM orders")
            for order in orders {
                try insertOrder(order)
            }
        }
    }

    /// The bound values of `order` for an INSERT, in column order (key first).
    static func values(of order: Order) -> [SQLiteValue] {
        [
            .text(order.key),
            .text(order.uuid),
            .text(order.customerName),
            .text(order.created.storePOSText),
            .integer(order.created.epochMillis),
            .integer(Int64(order.created.offsetMinutes)),
            .text(order.shippingMethod),
            .text(order.tableName),
            .integer(order.tableSize),
            .text(JSONValue.object(order.extra).serialized()),
            .integer(order.version),
            .text(order.status.rawValue),
            .text(order.items.map { JSONValue.array($0.map { .object($0.json) }).serialized() }),
            .text(order.note),
        ]
    }

    /// Reads every remaining row of `statement` as an order.
    private func decodeOrders(_ statement: SQLiteStatement) throws -> [Order] {
        var orders: [Order] = []
        while try statement.step() {
            orders.append(try decodeOrder(statement))
        }
        return orders
    }

    /// The order in the current row of a statement selecting `orderColumns`.
    func decodeOrder(_ statement: SQLiteStatement) throws -> Order {
        let uuid = statement.text(0)
        let extraText = statement.text(7)
        let extra: JSONObject
        do {
            guard let object = try JSONParser.parse(extraText).objectValue else {
                throw StoreError(
                    kind: .corruptRow, message: "extra_json of order \(uuid) is not a JSON object",
                    path: path)
            }
            extra = object
        } catch let error as JSONParseError {
            throw StoreError(
                kind: .corruptRow, message: "extra_json of order \(uuid) is not JSON: \(error)",
                path: path)
        }
        guard let status = OrderStatus(rawValue: statement.text(9)) else {
            throw StoreError(kind: .corruptRow, message: "order \(uuid) has an unknown status \(statement.text(9))", path: path)
        }
        var items: [LineItem]?
        if let itemsText = statement.optionalText(10) {
            guard let list = try? JSONParser.parse(itemsText).arrayValue else {
                throw StoreError(kind: .corruptRow, message: "items_json of order \(uuid) is not a JSON array", path: path)
            }
            items = try list.map { v in
                guard let o = v.objectValue, let name = o["name"]?.stringValue, let q = o["quantity"]?.intValue,
                    let p = o["unitPrice"]?.intValue
                else {
                    throw StoreError(kind: .corruptRow, message: "a line item of order \(uuid) is malformed", path: path)
                }
                return LineItem(sku: o["sku"]?.stringValue, name: name, quantity: q, unitPrice: p)
            }
        }
        return Order(
            uuid: uuid,
            customerName: statement.text(1),
            created: OrderTimestamp(epochMillis: statement.int64(2), offsetMinutes: Int(statement.int64(3))),
            shippingMethod: statement.optionalText(4),
            tableName: statement.optionalText(5),
            tableSize: statement.optionalInt64(6),
            extra: extra,
            version: statement.int64(8),
            status: status,
            items: items,
            note: statement.optionalText(11))
    }
}
