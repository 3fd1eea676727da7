/// Figures of one run, or summed over many.
struct SimStats {
    var seeds = 0
    var events = 0
    var virtualMillis: Int64 = 0
    var messages = 0
    var lostMessages = 0
    var connections = 0

    var writes = 0
    var acknowledged = 0
    var masterWrites = 0
    var localFailures = 0
    var clientRetries = 0
    var answeredPending = 0

    var cuts = 0
    var duplicates = 0
    var delays = 0
    var gracefulCloses = 0
    var masterCommitFailBefore = 0
    var masterCommitFailAfter = 0
    var rejectionFails = 0
    var terminalSaveFails = 0
    var slaveCommitFails = 0
    var masterCrashes = 0
    var slaveCrashes = 0

    var resyncs = 0
    var aborts = 0
    var snapshots = 0
    var provisionalDiscarded = 0
    var reappliedAfterCompaction = 0
    var clockJumps = 0
    var compactedRuns = 0
    var convergenceMax: Int64 = 0
    var convergenceTotal: Int64 = 0

    /// Adds another run's figures.
    mutating func add(_ o: SimStats) {
        seeds += o.seeds
        events += o.events
        virtualMillis += o.virtualMillis
        messages += o.messages
        lostMessages += o.lostMessages
        connections += o.connections
        writes += o.writes
        acknowledged += o.acknowledged
        masterWrites += o.masterWrites
        localFailures += o.localFailures
        clientRetries += o.clientRetries
        answeredPending += o.answeredPending
        cuts += o.cuts
        duplicates += o.duplicates
        delays += o.delays
        gracefulCloses += o.gracefulCloses
        masterCommitFailBefore += o.masterCommitFailBefore
        masterCommitFailAfter += o.masterCommitFailAfter
        rejectionFails += o.rejectionFails
        terminalSaveFails += o.terminalSaveFails
        slaveCommitFails += o.slaveCommitFails
        masterCrashes += o.masterCrashes
        slaveCrashes += o.slaveCrashes
        resyncs += o.resyncs
        aborts += o.aborts
        snapshots += o.snapshots
        provisionalDiscarded += o.provisionalDiscarded
        reappliedAfterCompaction += o.reappliedAfterCompaction
        clockJumps += o.clockJumps
        compactedRuns += o.compactedRuns
        convergenceMax = max(convergenceMax, o.convergenceMax)
        convergenceTotal += o.convergenceTotal
    }

    /// A few lines for people reading the test log.
    var summary: String {
        let tenthsOfHours = virtualMillis / 360_000
        return """
            seeds \(seeds), virtual time \(virtualMillis / 1000) s (\(tenthsOfHours / 10).\(tenthsOfHours % 10) h), events \(events), \
            messages delivered \(messages), lost \(lostMessages), connections \(connections)
            writes \(writes): acknowledged \(acknowledged) (master \(masterWrites)), refused locally or failed \(localFailures), \
            client retries \(clientRetries)
            faults: link cuts \(cuts), duplicated messages \(duplicates), long delays \(delays), graceful closes \(gracefulCloses), \
            master commit failed before \(masterCommitFailBefore) / after reaching disk \(masterCommitFailAfter), \
            rejection records failed \(rejectionFails), terminal saves failed \(terminalSaveFails), \
            slave commits failed \(slaveCommitFails), master crashes \(masterCrashes), slave crashes \(slaveCrashes)
            slave resyncs \(resyncs), aborts \(aborts), snapshots applied \(snapshots), answers 'retry later' \(answeredPending), \
            read-your-writes gaps explained by a refusal or a later change \(provisionalDiscarded), \
            clock jumps of 31 days \(clockJumps), runs whose journal was compacted \(compactedRuns), \
            operations applied again after their journal entry was compacted \(reappliedAfterCompaction)
            convergence after the faults stopped: max \(convergenceMax) ms, mean \(seeds > 0 ? convergenceTotal / Int64(seeds) : 0) ms
            """
    }
}
