import Dispatch
import OrderStore
import SyncCore

/// The master's paged snapshot reads (`PagedSnapshotRead`): made when the engine starts a
/// snapshot, pinned to the store at the engine's sequence, and the terminals waiting on them
/// woken when they have more.
struct SnapshotReads {
    /// The one thread every snapshot read runs on: terminals joining at once (a power cut)
    /// queue behind each other here instead of adding reader threads.
    let queue = DispatchQueue(label: "ordersync.master.snapshot-read", qos: .utility)
    /// Reads made while a group was collecting: the store does not hold what the engine applied
    /// yet, so they are pinned once that group's commit ends, before anything else is applied.
    var waiting: [PagedSnapshotRead] = []

    /// True while a read waits for the group in flight: the group takes nothing more (what
    /// follows must not be in the store when the read begins).
    var waitsForStore: Bool { !waiting.isEmpty }
}

extension MasterNode {
    /// The engine's `pagedSnapshots`: a read of the orders at `seq`. Begun now when the store is
    /// idle (it then holds exactly what the engine applied: a StorePOS app connects only then);
    /// during a group (a slave's hello), once the group's commit ends (`pinSnapshotReads`).
    func openSnapshotRead(at seq: Int64) -> any SnapshotPages {
        let read = PagedSnapshotRead(
            seq: seq, pageSize: engine.snapshotChunk, loop: loop, queue: snapshotReads.queue
        ) { [weak self] in self?.snapshotReadProgressed() }
        if writer.phase == .idle {
            read.pin(writer)
        } else {
            snapshotReads.waiting.append(read)
        }
        return read
    }

    /// The group's commit ended (on the loop, the store idle, nothing applied since): the reads
    /// made during it begin now, at the group's last sequence, which is theirs. A group rolled
    /// back with operations in it leaves the store short of their sequence: they are given up
    /// (their terminals are closed, and get a fresh snapshot when they reconnect).
    func pinSnapshotReads(storeHoldsGroup: Bool) {
        let waiting = snapshotReads.waiting
        snapshotReads.waiting = []
        for read in waiting {
            if storeHoldsGroup { read.pin(writer) } else { read.abandon("the group it stands on was rolled back") }
        }
    }

    /// A read opened, failed or brought a page: the terminals waiting on their snapshot go on.
    private func snapshotReadProgressed() {
        for s in sessions.values.sorted(by: { $0.id < $1.id }) where engine.isReceivingSnapshot(s.id) {
            sendSnapshotParts(to: s)
        }
    }
}
