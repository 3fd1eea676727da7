import Foundation

/// CI mode for the Swift tests, defined as Tests/support/ci_mode.py defines it for the Python
/// ones: on when `CI` holds anything but nothing, `false` or `0` (any case), so that `CI=true`,
/// `CI=1` and `CI=yes` all mean the same thing. Under CI mode a missing prerequisite is a
/// failure, never an `XCTSkip`.
public enum CIMode {
    /// The values of `CI` that leave CI mode off.
    public static let offValues: Set<String> = ["", "false", "0"]

    /// Whether this process runs in CI mode.
    public static var isOn: Bool {
        isOn(ci: ProcessInfo.processInfo.environment["CI"])
    }

    /// Whether a `CI` variable holding `value` (nil: unset) turns CI mode on.
    public static func isOn(ci value: String?) -> Bool {
        guard let value else {
            return false
        }
        return !offValues.contains(value.trimmingCharacters(in: .whitespaces).lowercased())
    }
}
