import SecureLink

/// Where a slave stands with its master's key, and the rules that follow from it. Pure: the
/// slave reads its trust file and its `--pair` code, and this decides how every link
/// authenticates and what a failed link means (`SlaveTrust+Link.swift` in the node: the link's
/// credential and the verdict on an ended link, on the node's link types).
public enum SlaveTrust: Equatable, Sendable {
    /// Started with a code that is not the trust file's: every link pairs with it
    /// (`ordersync.pair.v1`). `previous` (the old trust, if any) stays on disk until pairing
    /// succeeds.
    case pairing(PairingCode, previous: MasterTrust?)
    /// Paired: every link is a Noise IK handshake with the trusted key. `refused` while the
    /// master answers that it does not know this terminal (never paired there, or revoked).
    case paired(MasterTrust, refused: Bool)

    /// What a `--pair` code given at start does when the terminal is already paired.
    public enum CodeUse: Equatable, Sendable {
        /// No code given.
        case none
        /// The code the trust file was made with: already paired, the code is ignored.
        case ignoredAlreadyPaired
        /// A new code: pair with it (the old trust stays until that succeeds).
        case pairAnew
    }

    /// The message of a slave that is not paired and was given no code.
    public static let notPairedMessage =
        "this terminal is not paired: run `ordersync pair` on the master, then start with --pair CODE"

    /// The trust a slave starts with, from its trust file (`trust`) and its `--pair` code; nil
    /// when there is neither (not paired and no code: ``notPairedMessage``, a startup error).
    public static func starting(trust: MasterTrust?, code: PairingCode?) -> (SlaveTrust, CodeUse)? {
        switch (trust, code) {
        case (nil, nil):
            return nil
        case (let trust?, nil):
            return (.paired(trust, refused: false), .none)
        case (let trust?, let code?) where trust.codeDigest == MasterTrust.codeDigest(ofCodeBytes: code.bytes):
            return (.paired(trust, refused: false), .ignoredAlreadyPaired)
        case (let trust, let code?):
            return (.pairing(code, previous: trust), trust == nil ? .none : .pairAnew)
        }
    }

    /// The trust in force (the old one while pairing anew).
    public var current: MasterTrust? {
        switch self {
        case .pairing(_, let previous): return previous
        case .paired(let trust, _): return trust
        }
    }

    /// The master ids a discovered master may announce; empty while pairing (any master of the
    /// store may be the one holding the code: the handshake decides).
    public var trustedIds: Set<String> {
        switch self {
        case .pairing: return []
        case .paired(let trust, _): return trust.knownMasterIds
        }
    }

    /// Status: the trusted master's id and the pairing state.
    public var status: (masterId: String?, pairing: SlaveStatus.PairingState) {
        switch self {
        case .pairing(_, let previous): return (previous?.master, .pairing)
        case .paired(let trust, let refused): return (trust.master, refused ? .refused : .paired)
        }
    }
}
