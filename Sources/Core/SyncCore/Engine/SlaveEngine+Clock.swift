/// The master's heartbeats (`Docs/PROTOCOL.md` 4.5) and clock sense on the slave's side
/// (`Docs/PROTOCOL.md` 4.8): each heartbeat carrying `time`
/// is answered with an ack that sends it back with this terminal's clock (the master's
/// round-trip sample), and gives this terminal its offset: the master's estimate
/// (`clockOffset`) when it has one, else the heartbeat's one-way sample. Orders this terminal
/// creates without a `created` are stamped on the master's clock (`ClockSkew.mastersTime`).
extension SlaveEngine {
    /// A heartbeat: the master's latest sequence (a higher one than this replica's means
    /// something was missed: resync), answered with an ack; its clock members, if any, measured.
    func heartbeat(seq: Int64, clock c: HeartbeatClock?, _ out: inout [Action]) {
        if let c { clockHeard(c, &out) }
        masterSeq = max(masterSeq, seq)
        if link == .live, seq > lastSeq {
            // Broadcasts arrive before the heartbeat on the same link: a higher sequence
            // means something was missed. Reconnect and catch up.
            out.append(
                .log(EngineLog(.warning, "sync.behind", [("seq", "\(lastSeq)"), ("master.seq", "\(seq)"), ("action", "resync")])))
            out.append(.resync(reason: "resync"))
            return
        }
        if link == .live { out.append(.send(heartbeatAnswer(c))) }
    }

    /// A heartbeat's clock members arrived (`now` is this terminal's clock at receipt).
    func clockHeard(_ c: HeartbeatClock, _ out: inout [Action]) {
        let sample =
            c.clockOffset.map { ClockSample(offsetMillis: $0) }
            ?? ClockSample.oneWay(sentAt: c.time, receivedAt: now, senderIsTerminal: false)
        guard let sample else { return }
        switch clock.measured(sample) {
        case .none:
            break
        case .skewed(let offset):
            out.append(.log(EngineLog(.warning, "clock.skewed", [("terminal", terminalName)] + ClockSkew.logFields(offset))))
        case .recovered(let offset):
            out.append(.log(EngineLog(.notice, "clock.recovered", [("terminal", terminalName)] + ClockSkew.logFields(offset))))
        }
    }

    /// The ack for a heartbeat: with `echo` and `time` when the heartbeat carried `time`.
    func heartbeatAnswer(_ c: HeartbeatClock?) -> [UInt8] {
        ackMessage(clock: c.map { AckClock(echo: $0.time, time: now) })
    }
}
