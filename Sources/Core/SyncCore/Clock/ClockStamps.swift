import JSON

/// The clock members of a master's `heartbeat` (`Docs/PROTOCOL.md` 4.8): `time`, the master's
/// wall clock when it sent it, and `clockOffset`, its latest estimate of this terminal's
/// offset (when it has one). A slave that finds `time` answers with an ack carrying
/// `AckClock`; an older slave ignores both members.
public struct HeartbeatClock: Equatable, Sendable {
    /// The master's wall clock when it sent the heartbeat, in milliseconds since 1970.
    public var time: Int64
    /// The master's latest estimate of the terminal's clock minus its own, in milliseconds.
    public var clockOffset: Int64?

    /// The members from their values.
    public init(time: Int64, clockOffset: Int64? = nil) {
        self.time = time
        self.clockOffset = clockOffset
    }

    /// The members of a message from the master, when it has an integer `time`.
    public init?(_ o: JSONObject?) {
        guard let time = o?["time"]?.intValue else { return nil }
        self.time = time
        self.clockOffset = o?["clockOffset"]?.intValue
    }

    /// A heartbeat with these members (`{"type":"heartbeat","seq":S,"time":T,"clockOffset":O}`),
    /// and the store's stable seq when given (`"stableSeq":N`, Docs/PROTOCOL.md 7.18).
    public func heartbeatBytes(seq: Int64, stableSeq: Int64? = nil) -> [UInt8] {
        var o = ServerMessage.heartbeat(seq: seq).jsonObject()
        o["time"] = .int(time)
        if let c = clockOffset { o["clockOffset"] = .int(c) }
        if let s = stableSeq { o["stableSeq"] = .int(s) }
        return JSONValue.object(o).serializedBytes()
    }
}

/// The clock members of the ack that answers a heartbeat carrying `time`: `echo`, that
/// `time` sent back, and `time`, the slave's wall clock when it answered. The master takes a
/// round-trip sample from them (`ClockSample.roundTrip`).
public struct AckClock: Equatable, Sendable {
    /// The heartbeat's `time`, sent back unchanged (the master's clock).
    public var echo: Int64
    /// The slave's wall clock when it answered, in milliseconds since 1970.
    public var time: Int64

    /// The members from their values.
    public init(echo: Int64, time: Int64) {
        self.echo = echo
        self.time = time
    }

    /// The members of an ack: absent (neither `echo` nor `time`), or both integers.
    static func decode(_ o: JSONObject) -> Result<AckClock?, WireError> {
        guard o["echo"] != nil || o["time"] != nil else { return .success(nil) }
        guard case .int(let echo)? = o["echo"], case .int(let time)? = o["time"] else {
            return .failure(WireError(.invalidMessage, "ack \"echo\" and \"time\" must both be integers (milliseconds since 1970)"))
        }
        return .success(AckClock(echo: echo, time: time))
    }
}
