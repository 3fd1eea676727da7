import NodePolicy
import SecureLink
import WebSocket

// The rules of `SlaveTrust` on the node's link types: the credential a link offers, the
// startup error of a slave neither paired nor given a code, and what an ended link means.

extension SlaveTrust {
    /// The trust a slave starts with, from its trust file (`trust`) and its `--pair` code: no
    /// trust and no code is refused (a startup error).
    static func atStart(trust: MasterTrust?, code: PairingCode?) throws -> (SlaveTrust, CodeUse) {
        guard let start = starting(trust: trust, code: code) else { throw NodeStartupError(notPairedMessage, failure: .notPaired) }
        return start
    }

    /// How the next link authenticates.
    var credential: MasterCredential {
        switch self {
        case .pairing(let code, _): return .pairing(code)
        case .paired(let trust, _): return .known(masterKey: trust.publicKey)
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
