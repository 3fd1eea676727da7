/// One measurement of how far a terminal's wall clock is from its master's
/// (`Docs/PROTOCOL.md` 4.8): the terminal's clock minus the master's, in milliseconds
/// (positive: the terminal is ahead).
public struct ClockSample: Equatable, Sendable {
    /// The longest round trip a sample is taken from: beyond it the answer waited somewhere
    /// (a busy loop, a frozen process) and says little about the clocks.
    public static let maxRoundTripMillis: Int64 = 5_000

    /// The terminal's clock minus the master's.
    public var offsetMillis: Int64
    /// The round trip it was measured over (its error is at most half of it); nil for a
    /// one-way sample, whose error is the message's one-way delay.
    public var roundTripMillis: Int64?

    /// A sample from its parts.
    public init(offsetMillis: Int64, roundTripMillis: Int64? = nil) {
        self.offsetMillis = offsetMillis
        self.roundTripMillis = roundTripMillis
    }

    /// Cristian's estimate: the master stamped `sentAt` (its clock) on a heartbeat, the terminal
    /// answered with `peerTime` (its clock) and the answer arrived at `receivedAt` (the master's
    /// clock). The terminal read its clock somewhere within the round trip, so the offset is
    /// `peerTime` minus the round trip's middle, off by at most half the round trip. Nil when
    /// the round trip is negative (the master's clock was set back meanwhile) or longer than
    /// `maxRoundTripMillis`.
    public static func roundTrip(sentAt: Int64, peerTime: Int64, receivedAt: Int64) -> ClockSample? {
        let (trip, overflow) = receivedAt.subtractingReportingOverflow(sentAt)
        guard !overflow, trip >= 0, trip <= maxRoundTripMillis else { return nil }
        let middle = sentAt + trip / 2
        let (offset, wrapped) = peerTime.subtractingReportingOverflow(middle)
        guard !wrapped else { return nil }
        return ClockSample(offsetMillis: offset, roundTripMillis: trip)
    }

    /// A one-way estimate: a message stamped `sentAt` by the sender's clock arrived at
    /// `receivedAt` by the receiver's. `senderIsTerminal` says whose clock `sentAt` is: the
    /// terminal's (its hello, read by the master) or the master's (a heartbeat, read by the
    /// terminal). Off by the message's delay on the wire, a few milliseconds on a LAN.
    public static func oneWay(sentAt: Int64, receivedAt: Int64, senderIsTerminal: Bool) -> ClockSample? {
        let (offset, overflow) =
            senderIsTerminal ? sentAt.subtractingReportingOverflow(receivedAt) : receivedAt.subtractingReportingOverflow(sentAt)
        return overflow ? nil : ClockSample(offsetMillis: offset)
    }
}

/// Whether a terminal's clock is within the bound of its master's: the latest sample, and a
/// warning once it is off by more than `boundMillis`, lifted once it is back within
/// `recoverMillis` (a clock near the bound does not warn and clear on every sample).
///
/// Used on both sides of a link: the master keeps one per connected terminal, a slave one for
/// its own clock (`Docs/PROTOCOL.md` 4.8). Pure: samples in, changes out.
public struct ClockSkew: Equatable, Sendable {
    /// Off by more than this is warned about: 30 s. Orders are read at minute scale (a
    /// kitchen screen, `export --from`, a day's report), while a clock kept by NTP is within
    /// a second; 30 s is far above what NTP leaves and well below a minute.
    public static let boundMillis: Int64 = 30_000
    /// A warned clock is fine again once back within this: 25 s.
    public static let recoverMillis: Int64 = 25_000

    /// What a sample changed.
    public enum Change: Equatable, Sendable {
        /// Nothing to report.
        case none
        /// The clock is now off by more than the bound (log `clock.skewed`).
        case skewed(offsetMillis: Int64)
        /// A clock that was off is back within `recoverMillis` (log `clock.recovered`).
        case recovered(offsetMillis: Int64)
    }

    private enum State: Equatable, Sendable {
        /// No sample yet.
        case unmeasured
        /// Within the bound (or back within `recoverMillis`).
        case within(ClockSample)
        /// Off by more than the bound; a warning was given.
        case skewed(ClockSample)
    }

    private var state = State.unmeasured

    /// An unmeasured clock.
    public init() {}

    /// The latest sample, if any.
    public var sample: ClockSample? {
        switch state {
        case .unmeasured: return nil
        case .within(let s), .skewed(let s): return s
        }
    }

    /// The latest offset (the terminal's clock minus the master's), if measured.
    public var offsetMillis: Int64? { sample?.offsetMillis }

    /// True while the clock is warned about.
    public var isSkewed: Bool {
        if case .skewed = state { return true }
        return false
    }

    /// A new sample: it replaces the last one, and says when the clock went past the bound or
    /// came back.
    public mutating func measured(_ s: ClockSample) -> Change {
        let off = s.offsetMillis.magnitude
        switch state {
        case .unmeasured, .within:
            if off > UInt64(Self.boundMillis) {
                state = .skewed(s)
                return .skewed(offsetMillis: s.offsetMillis)
            }
            state = .within(s)
            return .none
        case .skewed:
            if off <= UInt64(Self.recoverMillis) {
                state = .within(s)
                return .recovered(offsetMillis: s.offsetMillis)
            }
            state = .skewed(s)
            return .none
        }
    }

    /// `created` for an order this terminal takes now (`nowMillis` by its own clock), on the
    /// master's clock: its clock less the measured offset, in whole seconds (a clock within
    /// half a second is taken as it is). Its own clock while unmeasured.
    public func mastersTime(atLocal nowMillis: Int64) -> Int64 {
        guard let off = offsetMillis else { return nowMillis }
        let seconds = (Double(off) / 1000).rounded()
        return nowMillis - Int64(seconds) * 1000
    }
}
