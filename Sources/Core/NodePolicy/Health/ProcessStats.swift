import Foundation

/// The process figures Prometheus clients export under `process_*` (the client libraries'
/// "process collector"), parsed from Linux's `/proc` texts. Pure: the node reads the files
/// and hands their text in, so the parsing is tested on fixed texts.
public struct ProcessStats: Sendable, Equatable {
    /// User and system CPU time, in seconds.
    public var cpuSeconds: Double
    /// Resident set size, in bytes.
    public var residentBytes: Int64
    /// Virtual memory size, in bytes.
    public var virtualBytes: Int64
    /// When the process started, in seconds since 1970.
    public var startTimeSeconds: Double

    /// Figures from their members.
    public init(cpuSeconds: Double, residentBytes: Int64, virtualBytes: Int64, startTimeSeconds: Double) {
        self.cpuSeconds = cpuSeconds
        self.residentBytes = residentBytes
        self.virtualBytes = virtualBytes
        self.startTimeSeconds = startTimeSeconds
    }

    /// Parses `/proc/self/stat` (`stat`) with the system's boot time (the `btime` line of
    /// `/proc/stat`, `procStat`), clock ticks per second and page size. proc(5): "(2) comm ...
    /// The filename of the executable, in parentheses" (it may hold spaces and parentheses, so
    /// the fields are counted after the last `)`); "(14) utime ... measured in clock ticks",
    /// "(15) stime", "(22) starttime ... the time the process started after system boot ...
    /// expressed in clock ticks", "(23) vsize ... in bytes", "(24) rss ... number of pages".
    /// Nil when a text is not what proc(5) describes.
    public init?(stat: String, procStat: String, clockTicks: Int, pageSize: Int) {
        guard clockTicks > 0, let close = stat.lastIndex(of: ")") else { return nil }
        // Field 3 (state) is the first after the command name.
        let fields = stat[stat.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        func field(_ n: Int) -> Int64? { fields.count > n - 3 ? Int64(fields[n - 3]) : nil }
        guard let utime = field(14), let stime = field(15), let start = field(22), let vsize = field(23), let rss = field(24),
            let bootLine = procStat.split(separator: "\n").first(where: { $0.hasPrefix("btime ") }),
            let boot = Int64(bootLine.dropFirst("btime ".count).trimmingCharacters(in: .whitespaces))
        else { return nil }
        let ticks = Double(clockTicks)
        self.init(
            cpuSeconds: Double(utime + stime) / ticks, residentBytes: rss * Int64(pageSize), virtualBytes: vsize,
            startTimeSeconds: Double(boot) + Double(start) / ticks)
    }
}
