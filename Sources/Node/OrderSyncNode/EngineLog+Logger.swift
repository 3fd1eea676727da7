import Logging
import SyncCore

extension Logger {
    /// Writes a record an engine produced, with its event name as the message.
    func log(_ record: EngineLog) {
        var meta: Logger.Metadata = [:]
        for (k, v) in record.metadata { meta[k] = "\(v)" }
        let level: Logger.Level
        switch record.level {
        case .debug: level = .debug
        case .info: level = .info
        case .warning: level = .warning
        case .error: level = .error
        }
        log(level: level, "\(record.event)", metadata: meta)
    }
}
