import Foundation
import Logging
import PostgresClient
import RollupCore

/// What `ordersync rollup` exits with (Docs/OPERATIONS.md, "Roll-up into head office").
public enum RollupExit: Int32, Sendable {
    case ok = 0
    /// verify found a difference.
    case different = 1
    /// A bad command line (as every other command: sysexits' EX_USAGE).
    case usage = 64
    /// A conflict or a gap (`--once`).
    case conflictOrGap = 65
    /// Head office unreachable (`--once`, verify).
    case unreachable = 69
    /// A bad URL, a data directory that is not a store, a server refused by the TLS check.
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
    private let reader: RollupReader
    private var office: HeadOffice?
    private var rolling: [UInt8] = []
    private let wakeup: RollupWakeup
    private var metrics: RollupMetricsServer?
    private var waitingForStable = false
    /// When the state file was last written (uptime, ns).
    private var stateWrittenAt: UInt64 = 0
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
        reader = RollupReader(dataDirectory: dataDirectory, identity: local.identity, limits: limits)
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
            // A stop (SIGTERM) broke the step in flight, or comes between two steps: no further one.
            if gate.isStopping { gate.park() }
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
            case .giveUp:
                // `--once`: a TLS check that failed (or another setting) is no reason to wait.
                return finish(status.lastError?.code == "config" ? .configuration : .unreachable)
            }
        }
    }

    private func finish(_ exit: RollupExit) -> RollupExit {
        reader.close()
        office?.close()
        status.running = false
        status.up = false
        publish()
        return exit
    }

    private func connect() -> RollupMachine.Action {
        do {
            office = try HeadOffice(url: url, storeId: status.storeId, lineage: status.lineage, interrupt: gate.interrupt)
            status.up = true
            return machine.connected()
        } catch {
            // Broken by a stop: not an error; the loop's head stops.
            if gate.isStopping { return .finish }
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
            // Broken by a stop: not an error; the loop's head stops.
            if gate.isStopping { return .finish }
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
        if case .caughtUp = range { status.recovered(atMillis: Self.nowMillis()) }
        let next = machine.planned(range)
        status.state = machine.phase.rawValue
        return next
    }

    /// Ships the batch after `checkpoint` (read ahead while the previous one was at head office,
    /// or read now), and starts reading the one after it before head office answers.
    private func ship(after checkpoint: Int64, first: Int64, last: Int64) throws -> RollupMachine.Action {
        let shipment = try reader.batch(RollupReader.Request(after: checkpoint, rolling: rolling, through: last))
        let batch = shipment.batch
        if batch.lastSeq < last {
            reader.prefetch(RollupReader.Request(after: batch.lastSeq, rolling: batch.lastRolling, through: last))
        }
        let started = DispatchTime.now().uptimeNanoseconds
        switch try office!.ship(shipment, after: checkpoint) {
        case .committed:
            let ms = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6
            rolling = batch.lastRolling
            status.recovered(atMillis: Self.nowMillis())
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
            publish(batch: true)
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

    /// The metrics, and the state file: after each error, each wait and at the end; after a
    /// batch (`batch`) only when the last write is `stateFileInterval` old, so that a catch-up
    /// of many batches writes it a few times a second, not per batch (whoever reads it, status or
    /// the journal's retention, sees a checkpoint at most that old, never one ahead).
    private func publish(batch: Bool = false) {
        status.state = machine.phase.rawValue
        let now = DispatchTime.now().uptimeNanoseconds
        if !batch || now &- stateWrittenAt >= Self.stateFileInterval {
            stateWrittenAt = now
            if let e = status.write(to: dataDirectory) {
                logger.warning("rollup.state_unwritten", metadata: ["error": "\(e)"])
            }
        }
        metrics?.publish(status.metricsText)
    }

    /// The state file's age after which a batch writes it again: 0.5 s.
    private static let stateFileInterval: UInt64 = 500_000_000

    static func nowMillis() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}
