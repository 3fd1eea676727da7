import SecureLink
import WebSocket

/// Where a slave stands with its master's key, and the rules that follow from it. Pure: the
/// slave reads its trust file and its `--pair` code, and this decides how every link
/// authenticates and what a failed link means.
enum SlaveTrust: Equatable {
    /// Started with a code that is not the trust file's: every link pairs with it
    /// (`ordersync.pair.v1`). `previous` (the old trust, if any) stays on disk until pairing
    /// succeeds.
    case pairing(PairingCode, previous: MasterTrust?)
    /// Paired: every link is a Noise IK handshake with the trusted key. `refused` while the
    /// master answers that it does not know this terminal (never paired there, or revoked).
    case paired(MasterTrust, refused: Bool)

    /// What a `--pair` code given at start does when the terminal is already paired.
    enum CodeUse: Equatable {
        /// No code given.
        case none
        /// The code the trust file was made with: already paired, the code is ignored.
        case ignoredAlreadyPaired
        /// A new code: pair with it (the old trust stays until that succeeds).
        case pairAnew
    }

    /// The message of a slave that is not paired and was given no code.
    static let notPairedMessage =
        "this terminal is not paired: run `ordersync pair` on the master, then start with --pair CODE"

    /// The trust a slave starts with, from its trust file (`trust`) and its `--pair` code: no
    /// trust and no code is refused (a startup error).
    static func atStart(trust: MasterTrust?, code: PairingCode?) throws -> (SlaveTrust, CodeUse) {
        switch (trust, code) {
        case (nil, nil):
            throw NodeStartupError(notPairedMessage)
        case (let trust?, nil):
            return (.paired(trust, refused: false), .none)
        case (let trust?, let code?) where trust.codeDigest == MasterTrust.codeDigest(ofCodeBytes: code.bytes):
            return (.paired(trust, refused: false), .ignoredAlreadyPaired)
        case (let trust, let code?):
            return (.pairing(code, previous: trust), trust == nil ? .none : .pairAnew)
        }
    }

    /// How the next link authenticates.
    var credential: MasterCredential {
        switch self {
        case .pairing(let code, _): return .pairing(code)
        case .paired(let trust, _): return .known(masterKey: trust.publicKey)
        }
    }

    /// The trust in force (the old one while pairing anew).
    var current: MasterTrust? {
        switch self {
        case .pairing(_, let previous): return previous
        case .paired(let trust, _): return trust
        }
    }

    /// The master ids a discovered master may announce; empty while pairing (any master of the
    /// store may be the one holding the code: the handshake decides).
    var trustedIds: Set<String> {
        switch self {
        case .pairing: return []
        case .paired(let trust, _): return trust.knownMasterIds
        }
    }

    /// Status: the trusted master's id and the pairing state.
    var status: (masterId: String?, pairing: SlaveStatus.PairingState) {
        switch self {
        case .pairing(_, let previous): return (previous?.master, .pairing)
        case .paired(let trust, let refused): return (trust.master, refused ? .refused : .paired)
        }
    }

    /// What an ended link means for the terminal's trust.
    enum EndVerdict: Equatable {
        /// An ordinary failure or end: retry as always.
        case ordinary
        /// Known mode: the master at this address did not prove the trusted key (its second
        /// handshake message failed, or it refused the link before proving it).
        case masterUntrusted
        /// Known mode: the master, having proved the trusted key, does not know this terminal
        /// (never paired, or revoked).
        case pairingRequired
        /// Pairing: the master refused the code (wrong, expired, used, or no window open).
        case pairingRefused
        /// Pairing: the handshake failed on this side (a malformed or unauthentic answer).
        case pairingFailed
    }

    /// The meaning of a link that ended with `ending`, `secured` telling whether the secure
    /// handshake (and, pairing, the master's `paired`) completed.
    func verdict(secured: Bool, ending: MasterLinkEnding) -> EndVerdict {
        guard !secured else { return .ordinary }
        let byMaster1008 = ending.localFailure == nil && ending.closeCode == CloseCode.policyViolation.rawValue
        switch self {
        case .pairing:
            // The master's own handshake deadline is no verdict on the code.
            if byMaster1008, !ending.reason.contains("timed out") { return .pairingRefused }
            if case .secure = ending.localFailure { return .pairingFailed }
            return .ordinary
        case .paired:
            // Only a refusal inside the answer that proved the trusted key means pairing again;
            // a 1008 `unknown terminal` before that proof may come from anyone (a device posing
            // as the master while it restarts) and is no verdict on this terminal.
            if case .secure(let failure) = ending.localFailure {
                if failure.refusedByMaster != nil { return .pairingRequired }
                if failure.masterUnproven { return .masterUntrusted }
            }
            return byMaster1008 ? .masterUntrusted : .ordinary
        }
    }
}
