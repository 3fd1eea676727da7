import EventLoopIO
import Foundation
import Glibc

/// Where a group's time goes, for measuring latency (Docs/PERFORMANCE.md, "Quiet-hour
/// latency"). With `ORDERSYNC_STAGE_TRACE=FILE` in its environment a master appends one line
/// per group to FILE: the `CLOCK_MONOTONIC` instants, in nanoseconds, of
///
///     read queued applying handed_off commit_began commit_ended loop_woke finished sent messages operations
///
/// `read`: the loop woke (`epoll_wait` returned) in the turn that read the group's first work;
/// `queued`: that work joined the group queue; `applying`: the group opened; `handed_off`: its
/// COMMIT handed to the commit thread; `commit_began` / `commit_ended`: the commit thread ran
/// the COMMIT; `loop_woke`: the loop woke in the turn that took the COMMIT back; `finished`:
/// the master was told; `sent`: every held answer and broadcast was handed to the kernel.
/// Without the variable nothing is stamped (no clock is read for it) and nothing is written.
struct GroupStageTrace {
    /// The environment variable naming the file.
    static let variable = "ORDERSYNC_STAGE_TRACE"

    private let descriptor: Int32
    /// The first work waiting for the next group: the turn it was read in and when it was queued.
    private var waiting: (read: MonotonicInstant, queued: MonotonicInstant)?
    /// The group being committed: its first work's stamps, when it opened and was handed off.
    private var group: (read: MonotonicInstant, queued: MonotonicInstant, applying: MonotonicInstant)?
    private var handedOff: MonotonicInstant?

    /// The trace `environment` asks for, its file opened for appending (nil: none asked, or the
    /// file cannot be opened, which `failure` then says).
    static func open(environment: [String: String]) -> (trace: GroupStageTrace?, failure: String?) {
        guard let path = environment[variable], !path.isEmpty else { return (nil, nil) }
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return (nil, "\(variable)=\(path): \(String(cString: strerror(errno)))") }
        return (GroupStageTrace(descriptor: fd), nil)
    }

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Work joined the queue in the loop turn that woke at `read`.
    mutating func queued(read: MonotonicInstant) {
        if waiting == nil { waiting = (read, .now) }
    }

    /// A group opened with the work queued so far.
    mutating func applying() {
        let now = MonotonicInstant.now
        let first = waiting ?? (now, now)
        group = (first.read, first.queued, now)
        waiting = nil
    }

    /// The group's COMMIT goes to the commit thread.
    mutating func handingOff() {
        handedOff = .now
    }

    /// The group's answers have been handed to the kernel: its line is written.
    mutating func sent(
        commit: (began: MonotonicInstant, ended: MonotonicInstant)?, loopWoke: MonotonicInstant,
        finished: MonotonicInstant, messages: Int, operations: Int
    ) {
        let sent = MonotonicInstant.now
        guard let group, let handedOff, let commit else { return }
        self.group = nil
        self.handedOff = nil
        let instants = [
            group.read, group.queued, group.applying, handedOff, commit.began, commit.ended, loopWoke, finished, sent,
        ]
        let line =
            instants.map { String($0.sinceBoot.components.seconds * 1_000_000_000 + $0.sinceBoot.components.attoseconds / 1_000_000_000) }
            .joined(separator: " ") + " \(messages) \(operations)\n"
        _ = line.utf8CString.withUnsafeBufferPointer { write(descriptor, $0.baseAddress, $0.count - 1) }
    }
}
