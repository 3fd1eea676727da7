/// The slave's acks as a standby (Docs/PROTOCOL.md 7, "Standby acknowledgements"): each says
/// what its copy holds (`held`), and a broadcast the master waits for (`ackNow`) is acked as
/// soon as it is applied.
extension SlaveEngine {
    /// The ack this slave sends now: the sequence it acknowledges (`ackSeq`), its outbox depth,
    /// and `held`, the last sequence its replica holds (not capped by the outbox).
    func ackMessage(clock: AckClock? = nil) -> [UInt8] {
        ClientMessage.encodeAck(seq: ackSeq, outbox: outbox.count, held: lastSeq, clock: clock)
    }

    /// After a message from the master: when it was a broadcast marked `ackNow` and it raised
    /// the replica's sequence, the ack goes with the same batch (the node sends the engine's
    /// actions once the replica's transaction is on disk) instead of after the ack delay.
    func ackAtOnce(ifMarked bytes: [UInt8], heldBefore: Int64, _ out: inout [Action]) {
        guard link == .live, lastSeq > heldBefore, AckNow.isMarked(bytes) else { return }
        out.append(.send(ackMessage()))
    }
}
