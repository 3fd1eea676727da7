#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Unbuffered line output: each line goes out in `write(2)` calls at once, so the driving test
/// never waits on a buffered answer (and no C `FILE *` global is touched).
enum FileHandleLine {
    /// Writes `line` and a newline to standard output.
    static func standardOutput(_ line: String) {
        writeAll(STDOUT_FILENO, Array((line + "\n").utf8))
    }

    /// Writes `line` and a newline to standard error.
    static func standardError(_ line: String) {
        writeAll(STDERR_FILENO, Array((line + "\n").utf8))
    }

    private static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            // The reader went away: nothing left to tell it.
            guard written > 0 else { exit(1) }
            offset += written
        }
    }
}
