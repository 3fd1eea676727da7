import Logging
import SyncCore

extension Logger {
    /// Writes a record an engine produced, with its event name as the message. Nothing is
    /// built when the level drops it.
    func log(_ record: EngineLog) {
        let level: Logger.Level
        switch record.level {
        case .debug: level = .debug
        case .info: level = .info
        case .notice: level = .notice
        case .warning: level = .warning
        case .error: level = .error
        }
        guard level >= logLevel else { return }
        var meta: Logger.Metadata = [:]
        for (k, v) in record.metadata { meta[k] = .string(v) }
        log(level: level, "\(record.event)", metadata: meta)
    }
}
