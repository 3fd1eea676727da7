import SyncCore

/// Clock sense checked against the truth (`Docs/PROTOCOL.md` 4.8): every node's wall clock is
/// off by up to ±2 minutes and drifts (`SimNodeClock`), and the simulation knows by how much.
/// Once the store is quiet, the master's estimate of each connected slave's clock, and the
/// slave's own (told by the master's heartbeats), must be within `allowedErrorMillis` of the
/// real offset, and the warning must match it.
extension Simulation {
    /// Half the longest round trip a sample is taken from, plus the drift between samples.
    static let allowedErrorMillis: Int64 = ClockSample.maxRoundTripMillis / 2 + 500

    func checkClockSense() {
        guard let m = master.engine else { return }
        for s in slaves {
            guard let c = s.link, let estimate = m.peers[c.id]?.clock, let measured = estimate.offsetMillis else { continue }
            let truth = slaveNow(s) - masterNow
            if abs(measured - truth) > Self.allowedErrorMillis {
                checker.fail(self, "clock sense", "\(s.tag): the master estimates \(measured) ms, the clocks differ by \(truth) ms")
            }
            if estimate.isSkewed != (abs(measured) > ClockSkew.boundMillis) && abs(abs(measured) - ClockSkew.boundMillis) > 5_000 {
                checker.fail(self, "clock sense", "\(s.tag): offset \(measured) ms but warned \(estimate.isSkewed)")
            }
            if let own = s.engine?.clock.offsetMillis, abs(own - truth) > Self.allowedErrorMillis {
                checker.fail(self, "clock sense", "\(s.tag): it believes \(own) ms, the clocks differ by \(truth) ms")
            }
        }
    }
}
