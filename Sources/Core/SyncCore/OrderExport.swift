import JSON

/// Rows for `ordersync export` (Docs/OPERATIONS.md, "Export for accounting"). Pure: an order in,
/// text out; the caller streams the orders from the store.
///
/// CSV per RFC 4180: "Each record is located on a separate line, delimited by a line break
/// (CRLF)"; "Fields containing line breaks (CRLF), double quotes, and commas should be enclosed
/// in double-quotes"; "a double-quote appearing inside a field must be escaped by preceding it
/// with another double quote"; an optional header line first. UTF-8, no byte order mark.
///
/// Text a terminal typed (names, table, shipping method, note, item name and SKU) that starts
/// like a formula (`=`, `+`, `-`, `@`, tab or CR) gets a leading `'`, so a spreadsheet opening
/// the file shows it as text instead of evaluating it (OWASP, "CSV Injection").
public enum OrderExport {
    /// One row per order (the default), or one row per line item.
    public enum Layout: Sendable {
        case orders, items
    }

    /// The CSV header line of a layout.
    public static func csvHeader(_ layout: Layout) -> String {
        switch layout {
        case .orders:
            return csvLine([
                "uuid", "created", "status", "customer_name", "table", "table_size", "shipping_method", "note", "item_lines",
                "item_quantity", "total_cents", "total", "version",
            ])
        case .items:
            return csvLine([
                "uuid", "created", "status", "customer_name", "line", "sku", "name", "quantity", "unit_price_cents", "unit_price",
                "line_total_cents", "line_total",
            ])
        }
    }

    /// The CSV lines of one order: one, or one per line item (none for an order without items).
    public static func csvRows(_ o: Order, _ layout: Layout) -> String {
        let items = o.items ?? []
        switch layout {
        case .orders:
            let total = totalCents(o)
            return csvLine([
                o.uuid, o.created.storePOSText, o.status.rawValue, cellText(o.customerName), cellText(o.tableName ?? ""),
                o.tableSize.map(String.init) ?? "", cellText(o.shippingMethod ?? ""), cellText(o.note ?? ""), String(items.count),
                String(items.reduce(Int64(0)) { $0 + $1.quantity }), String(total), money(total), String(o.version),
            ])
        case .items:
            var text = ""
            for (i, item) in items.enumerated() {
                let line = item.quantity * item.unitPrice
                text += csvLine([
                    o.uuid, o.created.storePOSText, o.status.rawValue, cellText(o.customerName), String(i + 1), cellText(item.sku ?? ""),
                    cellText(item.name),
                    String(item.quantity), String(item.unitPrice), money(item.unitPrice), String(line), money(line),
                ])
            }
            return text
        }
    }

    /// The order as exported in JSON: the order (as the API shows it) with `totalCents` and `total`.
    public static func jsonObject(_ o: Order) -> JSONObject {
        var j = o.json
        let total = totalCents(o)
        j["totalCents"] = .int(total)
        j["total"] = .string(money(total))
        return j
    }

    /// Sum of quantity times unit price over the order's items, in minor units.
    public static func totalCents(_ o: Order) -> Int64 {
        (o.items ?? []).reduce(Int64(0)) { $0 + $1.quantity * $1.unitPrice }
    }

    /// Minor units as a decimal with two places: 1234 -> "12.34", -5 -> "-0.05".
    public static func money(_ cents: Int64) -> String {
        let negative = cents < 0
        let m = cents.magnitude
        let frac = m % 100
        return (negative ? "-" : "") + "\(m / 100)." + (frac < 10 ? "0\(frac)" : "\(frac)")
    }

    /// Text from a terminal as a spreadsheet should show it: with a leading `'` when it starts
    /// with a character a spreadsheet reads as the start of a formula.
    public static func cellText(_ s: String) -> String {
        guard let first = s.utf8.first, [0x3D, 0x2B, 0x2D, 0x40, 0x09, 0x0D].contains(first) else { return s }
        return "'" + s
    }

    /// One CSV record ending in CRLF.
    public static func csvLine(_ fields: [String]) -> String {
        fields.map(csvField).joined(separator: ",") + "\r\n"
    }

    /// A field, quoted when it holds a comma, a double quote, CR or LF (or starts or ends with
    /// a space, which some spreadsheets trim).
    public static func csvField(_ s: String) -> String {
        let needs = s.utf8.contains { $0 == 0x2C || $0 == 0x22 || $0 == 0x0D || $0 == 0x0A } || s.first == " " || s.last == " "
        guard needs else { return s }
        return "\"" + s.replacingQuotes() + "\""
    }
}

extension String {
    fileprivate func replacingQuotes() -> String {
        var out = ""
        out.reserveCapacity(utf8.count + 2)
        for c in self {
            if c == "\"" { out += "\"\"" } else { out.append(c) }
        }
        return out
    }
}
