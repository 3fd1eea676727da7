import Foundation
import Glibc
import NodePolicy

/// Reads the process's figures for the `process_*` series from `/proc` (proc(5)): CPU time,
/// memory and start time from `/proc/self/stat` and `/proc/stat`, open descriptors from
/// `/proc/self/fd`, the limit from `getrlimit(RLIMIT_NOFILE)`. Only at a scrape.
enum ProcessSampler {
    /// The figures now; each nil when it cannot be read.
    static func sample() -> (stats: ProcessStats?, openFiles: Int?, maxFiles: Int?) {
        var stats: ProcessStats?
        if let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            let procStat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8)
        {
            stats = ProcessStats(
                stat: stat, procStat: procStat, clockTicks: sysconf(Int32(_SC_CLK_TCK)), pageSize: sysconf(Int32(_SC_PAGESIZE)))
        }
        // The listing's own descriptor is open while it runs: one less.
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")).map { max(0, $0.count - 1) }
        var limit = rlimit()
        let allowed = getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 ? Int(clamping: limit.rlim_cur) : nil
        return (stats, open, allowed)
    }
}
