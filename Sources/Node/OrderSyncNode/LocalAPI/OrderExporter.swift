import Foundation
import JSON
import OrderStore
import SyncCore

/// `ordersync export`: the master's orders for accounting, read-only straight from the SQLite
/// file (a running master keeps writing; the export sees one consistent moment), written as it
/// is read, in chunks, so memory stays flat for any number of orders.
public struct OrderExporter {
    public enum Format: String, CaseIterable, Sendable {
        /// RFC 4180 CSV with a header row.
        case csv
        /// One JSON array, written element by element.
        case json
        /// One JSON object per line.
        case ndjson
    }

    public var format: Format
    public var layout: OrderExport.Layout = .orders
    public var fromMillis: Int64?
    public var toMillis: Int64?
    public var status: OrderStatus?

    public init(format: Format) { self.format = format }

    /// Writes the export of the data directory's store to `fd`; returns the number of orders.
    public func run(dataDirectory: String, to fd: Int32) throws -> Int {
        try OfflineStore.read(dataDirectory) { db in
            if try db.metadata("node.role") == "slave" {
                throw LocalAPIClientError.refused(
                    "\(dataDirectory) holds a slave's replica (with changes its master may still refuse); export on the master's data directory"
                )
            }
            var out = ChunkedWriter(fd: fd)
            var count = 0
            switch format {
            case .csv: try out.write(OrderExport.csvHeader(layout))
            case .json: try out.write("[")
            case .ndjson: break
            }
            try db.forEachOrder(fromMillis: fromMillis, toMillis: toMillis, status: status) { order in
                switch format {
                case .csv:
                    try out.write(OrderExport.csvRows(order, layout))
                case .json:
                    try out.write((count == 0 ? "\n" : ",\n") + JSONValue.object(OrderExport.jsonObject(order)).serialized())
                case .ndjson:
                    try out.write(JSONValue.object(OrderExport.jsonObject(order)).serialized() + "\n")
                }
                count += 1
            }
            if format == .json { try out.write(count == 0 ? "]\n" : "\n]\n") }
            try out.flush()
            return count
        }
    }
}

/// The export's output could not be written (disk full, a closed pipe...).
public struct ExportWriteError: Error, CustomStringConvertible {
    public var reason: String
    public var description: String { "could not write the export: \(reason)" }
}

/// Collects text and writes it to a descriptor in 64 KiB chunks.
struct ChunkedWriter {
    let fd: Int32
    private var buffer: [UInt8] = []
    static let chunk = 64 * 1024

    init(fd: Int32) {
        self.fd = fd
        buffer.reserveCapacity(Self.chunk * 2)
    }

    mutating func write(_ text: String) throws {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= Self.chunk { try flush() }
    }

    mutating func flush() throws {
        var offset = 0
        while offset < buffer.count {
            let n = buffer.withUnsafeBytes { Foundation.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ExportWriteError(reason: String(cString: strerror(errno)))
            }
            offset += n
        }
        buffer.removeAll(keepingCapacity: true)
    }
}
