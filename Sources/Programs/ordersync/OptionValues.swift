import ArgumentParser
import Logging
import OrderSyncNode
import SyncCore

// The options that take one of a few words, as their types: `--help` lists the words, and any
// other word gets ArgumentParser's usage error naming them.

/// `--log-level trace|debug|info|notice|warning|error|critical`.
extension Logger.Level: @retroactive ExpressibleByArgument {}

/// `--log-format text|json`.
extension EventLogFormat.Syntax: ExpressibleByArgument {}

/// `--http-tls auto|on|off`.
extension DashboardTLSMode: ExpressibleByArgument {}

/// `export --format csv|json|ndjson`.
extension OrderExporter.Format: ExpressibleByArgument {}

/// `--status open|in_progress|completed|cancelled` of `order update`, `order list` and `export`.
extension OrderStatus: ExpressibleByArgument {}
