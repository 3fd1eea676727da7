import JSON
import SyncCore

/// A terminal's wall clock against its master's, as status shows it (`clock`; `null` until
/// measured): on the master per connected OrderSync slave (`peers[].clock`), on a slave for
/// its own clock (Docs/PROTOCOL.md 4.8, "Clock sense").
public struct ClockStatus: Sendable, Equatable {
    /// The terminal's clock minus the master's, in milliseconds (positive: ahead).
    public var offsetMillis: Int64
    /// True while it is off by more than `boundMillis` (a `clock.skewed` warning was logged).
    public var skewed: Bool
    /// The bound: `ClockSkew.boundMillis`.
    public var boundMillis: Int64
    /// The round trip the offset was measured over (the error is at most half of it); nil for
    /// a one-way sample (a hello) or an offset the master told the slave.
    public var roundTripMillis: Int64?

    /// A status from its members.
    public init(offsetMillis: Int64, skewed: Bool, boundMillis: Int64 = ClockSkew.boundMillis, roundTripMillis: Int64? = nil) {
        self.offsetMillis = offsetMillis
        self.skewed = skewed
        self.boundMillis = boundMillis
        self.roundTripMillis = roundTripMillis
    }

    /// What `skew` knows; nil while it is unmeasured.
    public init?(_ skew: ClockSkew?) {
        guard let skew, let sample = skew.sample else { return nil }
        self.init(offsetMillis: sample.offsetMillis, skewed: skew.isSkewed, roundTripMillis: sample.roundTripMillis)
    }
}

extension ClockStatus: NodeJSONCodable {
    /// Every member, absent ones as `null`.
    public var jsonValue: JSONValue {
        nodeJSONObject([
            "offsetMillis": offsetMillis, "skewed": skewed, "boundMillis": boundMillis, "roundTripMillis": roundTripMillis,
        ])
    }

    /// The status from its members.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        self.init(
            offsetMillis: try f.decode("offsetMillis"), skewed: try f.decode("skewed"), boundMillis: try f.decode("boundMillis"),
            roundTripMillis: try f.decodeIfPresent("roundTripMillis"))
    }
}
