/// The `created` time of an order: an instant plus the UTC offset it was written with.
///
/// StorePOS writes `2016-01-12T21:35:16+0800`; RFC 3339 forms (`2016-01-12T13:35:16Z`,
/// `2016-01-12T21:35:16.250+08:00`) are accepted too. It is always written back in the StorePOS
/// form with its original offset (fractions of a second are kept for ordering only).
public struct OrderTimestamp: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    public var epochMillis: Int64
    /// Offset from UTC in minutes, as written by the order's creator.
    public var offsetMinutes: Int

    /// A timestamp from its parts.
    public init(epochMillis: Int64, offsetMinutes: Int = 0) {
        self.epochMillis = epochMillis
        self.offsetMinutes = offsetMinutes
    }

    /// StorePOS form, e.g. `2016-01-12T21:35:16+0800`.
    public var description: String { storePOSText }

    /// The same instant without its fraction of a second (rounded down).
    public var truncatedToSeconds: OrderTimestamp {
        let secs = Int64((Double(epochMillis) / 1000).rounded(.down))
        return OrderTimestamp(epochMillis: secs * 1000, offsetMinutes: offsetMinutes)
    }

    /// StorePOS form, e.g. `2016-01-12T21:35:16+0800`.
    public var storePOSText: String {
        guard let fields = storePOSFields else { return wideStorePOSText }
        return String(unsafeUninitializedCapacity: Self.storePOSTextBytes) { Self.write(fields, into: $0) }
    }

    /// Appends the UTF-8 bytes of `storePOSText` to `out`, with no `String` made (an order's
    /// JSON is written so, once per operation: Docs/PERFORMANCE.md, "What was cut").
    public func appendStorePOSText(to out: inout [UInt8]) {
        guard let fields = storePOSFields else {
            out.append(contentsOf: wideStorePOSText.utf8)
            return
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Self.storePOSTextBytes) { buffer in
            let count = Self.write(fields, into: buffer)
            out.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<count]))
        }
    }

    /// `2016-01-12T21:35:16+0800`: the length of the StorePOS form of a year of four digits.
    private static let storePOSTextBytes = 24

    /// The local date and time and the offset, as `storePOSText` writes them: nil when a field
    /// does not fit its digits (a year before 0 or after 9999, an offset of 100 hours or more),
    /// which `wideStorePOSText` writes.
    private var storePOSFields: (local: (year: Int64, month: Int64, day: Int64, second: Int64), offset: Int)? {
        let localMillis = epochMillis + Int64(offsetMinutes) * 60_000
        let secs = Int64((Double(localMillis) / 1000).rounded(.down))
        let days = Int64((Double(secs) / 86_400).rounded(.down))
        let (y, m, d) = OrderTimestamp.civil(fromDays: days)
        guard y >= 0, y <= 9999, abs(offsetMinutes) / 60 < 100 else { return nil }
        return ((y, m, d, secs - days * 86_400), offsetMinutes)
    }

    /// Writes the 24 bytes of the StorePOS form of `fields` at the start of `buffer`.
    private static func write(
        _ fields: (local: (year: Int64, month: Int64, day: Int64, second: Int64), offset: Int),
        into buffer: UnsafeMutableBufferPointer<UInt8>
    ) -> Int {
        var at = 0
        func put(_ byte: UInt8) {
            buffer[at] = byte
            at += 1
        }
        func digits(_ value: Int64, _ count: Int) {
            var divisor: Int64 = 1
            for _ in 1..<count { divisor *= 10 }
            while divisor > 0 {
                put(UInt8(truncatingIfNeeded: value / divisor % 10) + UInt8(ascii: "0"))
                divisor /= 10
            }
        }
        let (y, m, d, rem) = fields.local
        let off = Int64(abs(fields.offset))
        digits(y, 4)
        put(UInt8(ascii: "-"))
        digits(m, 2)
        put(UInt8(ascii: "-"))
        digits(d, 2)
        put(UInt8(ascii: "T"))
        digits(rem / 3600, 2)
        put(UInt8(ascii: ":"))
        digits(rem / 60 % 60, 2)
        put(UInt8(ascii: ":"))
        digits(rem % 60, 2)
        put(fields.offset < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
        digits(off / 60, 2)
        digits(off % 60, 2)
        return at
    }

    /// `storePOSText` for the timestamps `storePOSFields` leaves out: the year padded with
    /// zeros to four characters, every other field to two.
    private var wideStorePOSText: String {
        let localMillis = epochMillis + Int64(offsetMinutes) * 60_000
        let secs = Int64((Double(localMillis) / 1000).rounded(.down))
        let days = Int64((Double(secs) / 86_400).rounded(.down))
        let rem = secs - days * 86_400
        let (y, m, d) = OrderTimestamp.civil(fromDays: days)
        let sign = offsetMinutes < 0 ? "-" : "+"
        let off = abs(offsetMinutes)
        func p2(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        var year = String(y)
        while year.count < 4 { year = "0" + year }
        return "\(year)-\(p2(m))-\(p2(d))T\(p2(rem / 3600)):\(p2(rem / 60 % 60)):\(p2(rem % 60))"
            + "\(sign)\(p2(Int64(off / 60)))\(p2(Int64(off % 60)))"
    }

    /// Parses the StorePOS form or an RFC 3339 date-time; nil when it is neither.
    public init?(parsing text: String) {
        let b = Array(text.utf8)
        var i = 0
        func digits(_ n: Int) -> Int64? {
            guard i + n <= b.count else { return nil }
            var v: Int64 = 0
            for k in 0..<n {
                let c = b[i + k]
                guard c >= 0x30, c <= 0x39 else { return nil }
                v = v * 10 + Int64(c - 0x30)
            }
            i += n
            return v
        }
        func expect(_ c: UInt8) -> Bool {
            guard i < b.count, b[i] == c else { return false }
            i += 1
            return true
        }
        guard let y = digits(4), expect(0x2D), let mo = digits(2), expect(0x2D), let d = digits(2) else { return nil }
        // RFC 3339 5.6 NOTE: "applications ... may ... use a space character" in place of "T".
        guard i < b.count, [0x54, 0x74, 0x20].contains(b[i]) else { return nil }
        i += 1
        guard let h = digits(2), expect(0x3A), let mi = digits(2), expect(0x3A), let s = digits(2) else { return nil }
        var millis: Int64 = 0
        if i < b.count, b[i] == 0x2E {
            i += 1
            var n = 0
            var frac: Int64 = 0
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 {
                if n < 3 { frac = frac * 10 + Int64(b[i] - 0x30) }
                n += 1
                i += 1
            }
            guard n > 0 else { return nil }
            for _ in n..<max(n, 3) { frac *= 10 }
            millis = frac
        }
        guard i < b.count else { return nil }
        var offset = 0
        if b[i] == 0x5A || b[i] == 0x7A { // Z
            i += 1
        } else if b[i] == 0x2B || b[i] == 0x2D {
            let negative = b[i] == 0x2D
            i += 1
            guard let oh = digits(2) else { return nil }
            _ = expect(0x3A) // StorePOS omits the colon, RFC 3339 has it
            guard let om = digits(2), oh < 24, om < 60 else { return nil }
            offset = Int(oh * 60 + om) * (negative ? -1 : 1)
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        guard (1...12).contains(mo), d >= 1, d <= OrderTimestamp.daysIn(month: mo, year: y),
            h < 24, mi < 60, s < 61
        else { return nil }
        let days = OrderTimestamp.days(fromCivil: y, mo, d)
        let localSecs = days * 86_400 + h * 3600 + mi * 60 + min(s, 59)
        self.epochMillis = (localSecs - Int64(offset) * 60) * 1000 + millis
        self.offsetMinutes = offset
    }

    static func daysIn(month m: Int64, year y: Int64) -> Int64 {
        switch m {
        case 2: return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Howard Hinnant's days_from_civil / civil_from_days.
    static func days(fromCivil y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }
}
