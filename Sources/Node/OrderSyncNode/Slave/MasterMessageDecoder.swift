import Dispatch
import EventLoopIO
import SyncCore

/// Decodes the master's large messages (a snapshot's parts, a large broadcast) on a thread of
/// its own, so that the slave's loop stages one part while the next is being parsed: a join of a
/// million orders then uses two cores instead of one (`Docs/PERFORMANCE.md`, "The paired slave's
/// side"). Decoding is pure (`DecodedMasterMessage`); what touches the engine or the store stays
/// on the loop.
///
/// Order is kept: once a message went to the decoder, every later one follows it there until it
/// has handed everything back, and `deliver` gets them on the loop in the order they came (one
/// serial queue, whose results enter the loop's inbox in that order). Memory is bounded: while
/// more than `maxPendingBytes` wait to be decoded, the loop waits for the decoder before it takes
/// the next message, as it waited for its own decoding before.
final class MasterMessageDecoder {
    /// Messages at least this large are decoded off the loop (a snapshot part of 200 orders is
    /// about 60 KiB and more); smaller ones, when none waits, at once on the loop.
    static let offLoopBytes = 16 << 10
    /// The most bytes waiting for the decoder before the loop waits for it.
    static let maxPendingBytes = 8 << 20

    private let loop: EventLoop
    private let queue = DispatchQueue(label: "ordersync.slave.decode")
    private let deliver: (DecodedMasterMessage) -> Void
    /// Messages handed to the decoder and not yet back on the loop.
    private(set) var pending = 0
    private var pendingBytes = 0
    private var whenDrained: [() -> Void] = []
    /// Messages decoded off the loop so far.
    private(set) var decodedOffLoop = 0

    /// A decoder on `loop`'s slave; `deliver` gets each message, decoded, on the loop.
    init(loop: EventLoop, deliver: @escaping (DecodedMasterMessage) -> Void) {
        self.loop = loop
        self.deliver = deliver
    }

    /// A message from the master (on the loop): decoded here and delivered at once when it is
    /// small and nothing waits, else decoded off the loop and delivered after those before it.
    func received(_ bytes: [UInt8]) {
        loop.assertInEventLoop()
        guard pending > 0 || bytes.count >= Self.offLoopBytes else {
            deliver(DecodedMasterMessage(bytes))
            return
        }
        if pendingBytes > Self.maxPendingBytes {
            // Whatever was queued is decoded once this returns; its results wait in the inbox.
            queue.sync {}
        }
        pending += 1
        pendingBytes += bytes.count
        let me = LoopBound(self, loop: loop)
        let loop = self.loop
        queue.async {
            let decoded = DecodedMasterMessage(bytes)
            loop.execute { me.value.decoded(decoded) }
        }
    }

    /// Runs `body` on the loop once every message received before it was delivered (at once
    /// when none waits): what ends a link must come after the messages it brought.
    func afterPending(_ body: @escaping () -> Void) {
        loop.assertInEventLoop()
        if pending == 0 { body() } else { whenDrained.append(body) }
    }

    private func decoded(_ message: DecodedMasterMessage) {
        pending -= 1
        pendingBytes -= message.bytes.count
        decodedOffLoop += 1
        deliver(message)
        guard pending == 0, !whenDrained.isEmpty else { return }
        let waiting = whenDrained
        whenDrained = []
        for body in waiting { body() }
    }
}
