import JSON

/// Clock sense (`Docs/PROTOCOL.md` 4.8): the master measures each OrderSync slave's wall clock
/// against its own, from the hello's `time` (one way) and from each heartbeat's round trip
/// (the ack that answers it sends the heartbeat's `time` back with its own), warns when it is
/// off by more than `ClockSkew.boundMillis`, and tells the slave its estimate on the next
/// heartbeat. Nothing is ordered by these clocks.
extension MasterEngine {
    /// The heartbeat for an idle OrderSync terminal: the latest sequence, so it notices what it
    /// missed and acks; with `now` (the master's wall clock), also `time` and the latest
    /// estimate of the terminal's clock (`clockOffset`). Nil for a terminal that gets a
    /// WebSocket ping instead.
    public func heartbeat(for id: Int, now: Int64? = nil) -> [UInt8]? {
        guard let p = peers[id], p.speaksOrderSync, p.phase == .live else { return nil }
        let stable = stableSeq > 0 ? stableSeq : nil
        guard let now else {
            guard let stable else { return ServerMessage.heartbeat(seq: lastSeq).encodedBytes() }
            var o = ServerMessage.heartbeat(seq: lastSeq).jsonObject()
            o["stableSeq"] = .int(stable)
            return JSONValue.object(o).serializedBytes()
        }
        return HeartbeatClock(time: now, clockOffset: p.clock.offsetMillis).heartbeatBytes(seq: lastSeq, stableSeq: stable)
    }

    /// The hello said when it was sent (`time`, the terminal's clock): a one-way sample.
    func clockSaid(hello time: Int64, from id: Int, now: Int64, _ out: inout [Action]) {
        guard let p = peers[id], p.phase == .live || p.phase == .receivingSnapshot,
            let sample = ClockSample.oneWay(sentAt: time, receivedAt: now, senderIsTerminal: true)
        else { return }
        clockMeasured(sample, of: id, &out)
    }

    /// An ack answered a heartbeat that carried `time`: a round-trip sample.
    func clockAnswered(_ clock: AckClock, from id: Int, now: Int64, _ out: inout [Action]) {
        guard let sample = ClockSample.roundTrip(sentAt: clock.echo, peerTime: clock.time, receivedAt: now) else { return }
        clockMeasured(sample, of: id, &out)
    }

    private func clockMeasured(_ sample: ClockSample, of id: Int, _ out: inout [Action]) {
        guard var p = peers[id] else { return }
        let change = p.clock.measured(sample)
        peers[id] = p
        let who = [("terminal", p.terminalName ?? p.address), ("terminal.id", p.terminalId ?? "-")]
        switch change {
        case .none:
            break
        case .skewed(let offset):
            out.append(.log(EngineLog(.warning, "clock.skewed", who + ClockSkew.logFields(offset))))
        case .recovered(let offset):
            out.append(.log(EngineLog(.notice, "clock.recovered", who + ClockSkew.logFields(offset))))
        }
    }
}

extension ClockSkew {
    /// The offset and the bound as a log event's fields (`clock.offset_ms`, `clock.bound_ms`).
    public static func logFields(_ offsetMillis: Int64) -> [(String, String)] {
        [("clock.offset_ms", "\(offsetMillis)"), ("clock.bound_ms", "\(boundMillis)")]
    }
}
