import Glibc

/// Process resource limits.
public enum ResourceLimits {
    /// Raises the soft limit on open file descriptors to the hard limit (a master serving many
    /// terminals needs more than the usual 1024) and returns the limit now in force.
    @discardableResult
    public static func raiseOpenFilesLimit() -> UInt64 {
        var limit = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        guard getrlimit(resource, &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(resource, &raised) == 0 { return UInt64(raised.rlim_cur) }
        }
        return UInt64(limit.rlim_cur)
    }
}
