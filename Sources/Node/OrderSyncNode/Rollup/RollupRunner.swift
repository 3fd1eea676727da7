import Foundation
import Logging
import PostgresClient
import RollupCore

/// What `ordersync rollup` exits with (Docs/OPERATIONS.md, "Roll-up into head office").
public enum RollupExit: Int32, Sendable {
    case ok = 0
    /// verify found a difference.
    case different = 1
    case usage = 2
    /// A conflict or a gap (`--once`).
    case conflictOrGap = 65
    /// Head office unreachable (`--once`, verify).
    case unreachable = 69
    /// A bad URL, a data directory that is not a store.
    case configuration = 78
}

/// `ordersync rollup`: ships the local journal's stable entries to head office, batch by batch,
/// driven by `RollupMachine`; `once` ships what there is and returns.
public final class RollupRunner {
    private let dataDirectory: String
    private let url: String
    private let once: Bool
    private let logger: Logger
    private let limits = RollupBatchLimits()
    private var machine: RollupMachine
    private var status: RollupStatus
    private let local: RollupLocalJournal
    private var office: HeadOffice?
    private var rolling: [UInt8] = []
    private let wakeup: RollupWakeup
    private var metrics: RollupMetricsServer?
    private var waitingForStable = false
    private let gate = RollupStopGate()

    /// What stops this roll-up from another thread (SIGTERM): see `RollupStopGate`.
    public var stopHandle: RollupStopHandle { RollupStopHandle(gate: gate) }

    /// A roll-up of the store in `dataDirectory` into `databaseURL`. Throws `RollupFailure`
    /// (configuration) when either is unusable, or the metrics address cannot be bound.
    public init(dataDirectory: String, databaseURL: String, once: Bool, metrics: MetricsAddress?, logger: Logger) throws {
        do { try PostgresConnection.validate(url: databaseURL) } catch { throw RollupFailure.configuration(error.message) }
        self.dataDirectory = dataDirectory
        url = databaseURL
        self.once = once
        self.logger = logger
        machine = RollupMachine(once: once)
        local = try RollupLocalJournal(dataDirectory: dataDirectory)
        wakeup = RollupWakeup(dataDirectory: dataDirectory)
        status = RollupStatus(
            running: true, pid: getpid(), storeId: local.identity.storeId, lineage: local.identity.lineage, checkpointSeq: 0,
            checkpointAtMillis: nil, stableSeq: 0, localLastSeq: 0, lagEntries: 0, lagSeconds: 0, lastError: nil,
            state: "shipping", up: false)
        if let metrics { self.metrics = try RollupMetricsServer.start(address: metrics, logger: logger) }
        gate.onStop = { [unowned self] in _ = self.finish(.ok) }
    }

    /// The message of a failure to start (for the CLI), and its exit status.
    public static func describe(_ error: Error) -> (message: String, exit: RollupExit) {
        if let f = error as? RollupFailure { return (f.description, f.code == "config" ? .configuration : .unreachable) }
        return ("\(error)", .configuration)
    }

    /// Runs until done (`--once`) or stopped; returns the exit status. Every step runs under the
    /// stop gate's lock, every wait without it (`RollupStopGate`).
    public func run() -> RollupExit {
        gate.lock.lock()
        logger.info(
            "rollup.started",
            metadata: [
                "store": "\(status.storeId)", "lineage": "\(status.lineage)", "role": "\(local.identity.role)",
                "once": "\(once)",
            ])
        if !once { wakeup.arm() }
        var action = machine.start()
        while true {
            switch action {
            case .connect: action = connect()
            case .readCheckpoint:
                action = attempt {
                    let c = try office!.checkpoint()
                    rolling = c.rolling
                    status.checkpointSeq = c.seq
                    return machine.checkpointRead(seq: c.seq)
                }
            case .plan(let checkpoint): action = attempt { try plan(checkpoint: checkpoint) }
            case .ship(let checkpoint, let first, let last):
                action = attempt { try ship(after: checkpoint, first: first, last: last) }
            case .wait(let announce):
                if announce { logger.info("rollup.caught_up", metadata: ["seq": "\(status.checkpointSeq)"]) }
                publish()
                if !once { wakeup.arm() }
                gate.unlocked { wakeup.wait(feed: !waitingForStable) }
                action = machine.woke() ?? action
            case .backoff(let seconds, let attempt):
                office?.close()
                office = nil
                status.up = false
                logger.warning(
                    "rollup.backoff", metadata: ["attempt": "\(attempt)", "delay_s": "\(String(format: "%.2f", seconds))"])
                publish()
                gate.unlocked { Thread.sleep(forTimeInterval: seconds) }
                action = machine.backoffElapsed()
            case .stop(let reason):
                publish()
                if once { return finish(.conflictOrGap) }
                logger.error("rollup.stopped", metadata: ["reason": "\(reason)"])
                // An error state that stays visible (status, metrics) until an operator acts.
                gate.lock.unlock()
                while true { Thread.sleep(forTimeInterval: 3600) }
            case .finish: return finish(.ok)
            case .giveUp: return finish(.unreachable)
            }
        }
    }

    private func finish(_ exit: RollupExit) -> RollupExit {
        office?.close()
        status.running = false
        status.up = false
        publish()
        return exit
    }

    private func connect() -> RollupMachine.Action {
        do {
            office = try HeadOffice(url: url, storeId: status.storeId, lineage: status.lineage)
            status.up = true
            return machine.connected()
        } catch {
            logger.warning("rollup.connect_failed", metadata: ["error": "\(error)"])
            record(HeadOffice.failure(error))
            return machine.failed(unit: Double.random(in: 0..<1))
        }
    }

    /// Runs one step; a failure is recorded and backs off (or gives up with `--once`).
    private func attempt(_ step: () throws -> RollupMachine.Action) -> RollupMachine.Action {
        do {
            return try step()
        } catch {
            let failure = HeadOffice.failure(error)
            logger.warning("rollup.failed", metadata: ["error": "\(failure)", "code": "\(failure.code)"])
            record(failure)
            return machine.failed(unit: Double.random(in: 0..<1))
        }
    }

    private func plan(checkpoint: Int64) throws -> RollupMachine.Action {
        let extent: RollupLocalJournal.Extent
        do { extent = try local.extent() } catch { throw RollupFailure.local("cannot read the local journal: \(error)") }
        status.stableSeq = extent.stable
        status.localLastSeq = extent.newest
        status.lagEntries = max(0, extent.newest - checkpoint)
        if status.lagEntries > 0, let at = try? local.recordedMillis(seq: checkpoint + 1) {
            status.lagSeconds = max(0, Double(Self.nowMillis() - at) / 1000)
        } else {
            status.lagSeconds = 0
        }
        waitingForStable = extent.stable < extent.newest
        let range = RollupRange.decide(checkpoint: checkpoint, oldest: extent.oldest, newest: extent.newest, stable: extent.stable)
        if case .gap(let first, let last) = range {
            let detail = "the local journal no longer holds seq \(first)-\(last) (head office's checkpoint is \(checkpoint))"
            logger.error("rollup.gap", metadata: ["first": "\(first)", "last": "\(last)", "checkpoint": "\(checkpoint)"])
            status.lastError = ("gap", detail, Self.nowMillis())
            try? office?.alarm(kind: "gap", seq: first, detail: detail)
        }
        let next = machine.planned(range)
        status.state = machine.phase.rawValue
        return next
    }

    private func ship(after checkpoint: Int64, first: Int64, last: Int64) throws -> RollupMachine.Action {
        let candidates: [RollupEntry]
        do {
            candidates = try local.entries(after: checkpoint, through: last, limit: limits.maxEntries)
        } catch { throw RollupFailure.local("cannot read the local journal: \(error)") }
        let entries = Array(candidates.prefix(limits.count(sizes: candidates.map(\.byteCount))))
        guard let batch = RollupBatch(entries: entries, after: checkpoint, rolling: rolling), !batch.rows.isEmpty else {
            throw RollupFailure.local("the local journal has a hole after seq \(checkpoint)")
        }
        let started = DispatchTime.now().uptimeNanoseconds
        switch try office!.ship(batch, after: checkpoint) {
        case .committed:
            let ms = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6
            rolling = batch.lastRolling
            status.checkpointSeq = batch.lastSeq
            status.checkpointAtMillis = Self.nowMillis()
            status.batches += 1
            status.entries += Int64(batch.rows.count)
            status.lagEntries = max(0, status.localLastSeq - batch.lastSeq)
            logger.info(
                "rollup.batch_committed",
                metadata: [
                    "first": "\(batch.firstSeq)", "last": "\(batch.lastSeq)", "entries": "\(batch.rows.count)",
                    "bytes": "\(batch.bytes)", "ms": "\(String(format: "%.1f", ms))",
                ])
            publish()
            return machine.committed(through: batch.lastSeq)
        case .conflict(let seq):
            let detail = "head office holds another entry at seq \(seq) of store \(status.storeId), lineage \(status.lineage)"
            logger.error("rollup.conflict", metadata: ["seq": "\(seq)", "store": "\(status.storeId)"])
            status.conflicts += 1
            status.lastError = ("conflict", detail, Self.nowMillis())
            try? office?.alarm(kind: "conflict", seq: seq, detail: detail)
            let next = machine.conflict(seq: seq)
            status.state = machine.phase.rawValue
            return next
        case .moved:
            return machine.checkpointMoved()
        }
    }

    private func record(_ failure: RollupFailure) {
        status.errors[failure.code, default: 0] += 1
        status.lastError = (failure.code, failure.description, Self.nowMillis())
        status.up = office != nil
        status.state = machine.phase.rawValue
        publish()
    }

    /// The state file and the metrics, after each batch and each error.
    private func publish() {
        status.state = machine.phase.rawValue
        if let e = status.write(to: dataDirectory) {
            logger.warning("rollup.state_unwritten", metadata: ["error": "\(e)"])
        }
        metrics?.publish(status.metricsText)
    }

    static func nowMillis() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}
