/// The roll-up's failures, by what the command exits with.
enum RollupFailure: Error, CustomStringConvertible {
    /// A bad database URL, or a data directory that is not a store (exit 78).
    case configuration(String)
    /// Head office could not be reached (exit 69 with `--once` and for verify).
    case unreachable(String)
    /// Head office refused a statement (a missing privilege, a schema of a newer version).
    case headOffice(String)
    /// The local store could not be read.
    case local(String)

    var description: String {
        switch self {
        case .configuration(let m), .unreachable(let m), .headOffice(let m), .local(let m): return m
        }
    }

    /// The code status and metrics use: `config`, `unreachable`, `query`, `local`.
    var code: String {
        switch self {
        case .configuration: return "config"
        case .unreachable: return "unreachable"
        case .headOffice: return "query"
        case .local: return "local"
        }
    }
}
