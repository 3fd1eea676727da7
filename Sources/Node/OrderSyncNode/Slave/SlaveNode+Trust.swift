import Discovery
import Foundation
import Logging
import NodePolicy

extension NodeDefaults {
    /// Shortest delay between attempts while the master refuses this terminal (unknown or
    /// revoked): only pairing again with a new code helps.
    public static let unknownTerminalRetryDelay: Duration = .seconds(30)
}

/// The slave's side of pairing and of its master's key: the trust file written once the master
/// proved the code, key handovers, and what a refused or unproven master means.
extension SlaveNode {
    /// Pairing: the master's `paired` message decrypted, so it held the code. Only now is its
    /// key trusted and written to the trust file (replacing an older trust).
    func paired(with greeting: MasterGreeting, on link: MasterLink) {
        guard case .pairing(let code, let previous) = trust else { return }
        let paired = MasterTrust(
            store: greeting.store, publicKey: greeting.publicKey, pairedAtMillis: WallClock.nowMillis(),
            codeDigest: MasterTrust.codeDigest(ofCodeBytes: code.bytes))
        do {
            try paired.write(to: configuration.masterTrustPath)
        } catch {
            logger.error("pairing.trust_write_failed", metadata: ["master.id": "\(greeting.masterId)", "error": "\(error)"])
            link.abort(reason: "cannot write the master trust file")
            exitError = NodeStartupError(
                "paired with master \(greeting.masterId) but could not keep its key (\(error)); "
                    + "fix the data directory, then pair again with a new code from `ordersync pair` on the master")
            beginShutdown(reason: "pairing not saved")
            return
        }
        trust = .paired(paired, refused: false)
        candidates.trustedIds = trust.trustedIds
        var meta: Logger.Metadata = [
            "master.id": "\(greeting.masterId)", "master.address": "\(link.url)", "master.store": "\(greeting.store ?? "-")",
            "trust_file": "\(configuration.masterTrustPath)",
        ]
        if let old = previous, old.master != paired.master { meta["master.previous_id"] = "\(old.master)" }
        logger.notice("pairing.done", metadata: meta)
    }

    /// The link is secured: a master that refused this terminal knows it again.
    func trustedLinkSecured() {
        refusedAttempts = 0
        if case .paired(let t, true) = trust { trust = .paired(t, refused: false) }
    }

    /// A `masterKey` message over an authenticated link: the master's new key replaces the
    /// trusted one, which is kept among the previous keys.
    func masterKeyHandedOver(to key: [UInt8], id: String, on link: MasterLink) {
        guard case .paired(var updated, let refused) = trust else { return }
        let previousId = updated.master
        guard updated.handOver(to: key) else { return }
        trust = .paired(updated, refused: refused)
        candidates.trustedIds = trust.trustedIds
        do {
            try updated.write(to: configuration.masterTrustPath)
            logger.notice(
                "master.key_rotated",
                metadata: ["master.id": "\(id)", "master.previous_id": "\(previousId)", "master.address": "\(link.url)"])
        } catch {
            logger.error(
                "master.key_rotation_unsaved",
                metadata: [
                    "master.id": "\(id)", "master.previous_id": "\(previousId)", "error": "\(error)",
                    "hint": "the new key is used until the slave stops; after a restart it needs the old key or a new pairing",
                ])
        }
    }

    /// Logs what an ended link means for the terminal's trust.
    func noteTrustVerdict(_ verdict: SlaveTrust.EndVerdict, target: LinkTarget, reason: String) {
        let address: Logger.Metadata.Value = "\(target.url)"
        switch verdict {
        case .ordinary:
            break
        case .masterUntrusted:
            logger.warning(
                "master.untrusted",
                metadata: [
                    "master.address": address, "service.name": "\(target.serviceName ?? "-")",
                    "master.trusted_id": "\(trust.current?.master ?? "-")", "reason": "\(reason)",
                    "hint": "the master there did not prove the key this terminal paired with; trying other masters",
                ])
        case .pairingRequired:
            refusedAttempts += 1
            if case .paired(let t, false) = trust { trust = .paired(t, refused: true) }
            let id = trust.current?.master ?? "-"
            let meta: Logger.Metadata = [
                "master.address": address, "master.id": "\(id)", "reason": "\(reason)", "attempts": "\(refusedAttempts)",
                "hint": "this terminal is not (or no longer) paired with master \(id): pair again with --pair",
            ]
            if refusedAttempts == 1 {
                logger.error("pairing.required", metadata: meta)
            } else {
                logger.warning("pairing.required", metadata: meta)
            }
        case .pairingRefused:
            logger.error(
                "pairing.failed",
                metadata: [
                    "master.address": address, "reason": "\(reason)",
                    "hint":
                        "the master refused the code (wrong, expired, used, cancelled, none open, or this address locked out after 5 wrong codes)",
                ])
        case .pairingFailed:
            logger.warning("pairing.failed", metadata: ["master.address": address, "reason": "\(reason)"])
        }
    }

    /// Every master the code could be tried on refused it: stop, an operator needs a new code.
    func refusedPairing(reason: String) {
        exitError = NodeStartupError(
            "the master refused the pairing code (\(reason)): run `ordersync pair` on the master for a new code, "
                + "then start again with --pair NEW-CODE", failure: .notPaired,
            fix: "run `ordersync pair` on the master for a new code, then start again with --pair NEW-CODE")
        beginShutdown(reason: "pairing refused")
    }

    /// A discovered master announcing another key's id: skipped without connecting.
    func logUntrusted(_ service: ResolvedService) {
        logger.warning(
            "master.untrusted",
            metadata: [
                "master.address": "\(service.address):\(service.port)", "service.name": "\(service.name)",
                "master.announced_id": "\(service.txt["id"] ?? "-")", "master.trusted_id": "\(trust.current?.master ?? "-")",
                "hint":
                    "a master announcing another key is never connected to (a second master started by mistake, or a device posing as one)",
            ])
    }
}
