internal import CLinux
import Glibc

/// What a registration wants to hear about.
public struct Interest: OptionSet, Hashable, Sendable {
    /// The raw bits.
    public let rawValue: UInt8
    /// Creates an interest from raw bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Data (or a connection, for listeners) can be read.
    public static let readable = Interest(rawValue: 1 << 0)
    /// The send buffer has room (or a nonblocking connect finished).
    public static let writable = Interest(rawValue: 1 << 1)

    var epollEvents: UInt32 {
        var events: UInt32 = 0
        if contains(.readable) { events |= CLinux_EPOLLIN }
        if contains(.writable) { events |= CLinux_EPOLLOUT }
        return events
    }
}

/// What epoll reported for a descriptor.
///
/// `hangup` and `error` are reported whatever the interest (epoll always reports `EPOLLHUP`
/// and `EPOLLERR`), so a handler must act on them (read to end of stream, or close) or the
/// level-triggered loop reports them again at once.
public struct Readiness: OptionSet, Hashable, Sendable, CustomStringConvertible {
    /// The raw bits.
    public let rawValue: UInt8
    /// Creates a readiness from raw bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// `EPOLLIN`: readable.
    public static let readable = Readiness(rawValue: 1 << 0)
    /// `EPOLLOUT`: writable.
    public static let writable = Readiness(rawValue: 1 << 1)
    /// `EPOLLHUP` or `EPOLLRDHUP`: the peer hung up.
    public static let hangup = Readiness(rawValue: 1 << 2)
    /// `EPOLLERR`: an error is pending on the descriptor (read `SO_ERROR` or do I/O to get it).
    public static let error = Readiness(rawValue: 1 << 3)

    init(epollEvents events: UInt32) {
        var value: Readiness = []
        if events & CLinux_EPOLLIN != 0 { value.insert(.readable) }
        if events & CLinux_EPOLLOUT != 0 { value.insert(.writable) }
        if events & (CLinux_EPOLLHUP | CLinux_EPOLLRDHUP) != 0 { value.insert(.hangup) }
        if events & CLinux_EPOLLERR != 0 { value.insert(.error) }
        self = value
    }

    /// Readiness limited to what `interest` asked for, plus hangup and error.
    func filtered(by interest: Interest) -> Readiness {
        var mask: Readiness = [.hangup, .error]
        if interest.contains(.readable) { mask.insert(.readable) }
        if interest.contains(.writable) { mask.insert(.writable) }
        return intersection(mask)
    }

    /// `readable|hangup` style text for logs.
    public var description: String {
        var parts: [String] = []
        if contains(.readable) { parts.append("readable") }
        if contains(.writable) { parts.append("writable") }
        if contains(.hangup) { parts.append("hangup") }
        if contains(.error) { parts.append("error") }
        return parts.isEmpty ? "none" : parts.joined(separator: "|")
    }
}
