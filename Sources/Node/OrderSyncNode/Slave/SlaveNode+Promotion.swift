import Foundation
import JSON
import Logging
import NodePolicy
import OrderStore
import SyncCore

/// `POST /v1/promote` on a slave (`ordersync promote`): the node leaves the slave role and plays
/// master, a candidate first, on the same loop, store writer and front-ends (`RoleSeat`).
extension SlaveNode {
    /// Metadata key of the standby copy's master (written with the store's members).
    static let standbyMasterKey = "standby.master"

    /// Starts a promotion once the master's messages received so far are applied; answered by
    /// the candidate when it is over.
    func promote(_ request: PromoteRequest, _ respond: LocalAPIServer.Respond) {
        loop.assertInEventLoop()
        afterBatch { [weak self] in self?.startPromotion(request, respond) }
    }

    /// The store's StorePOS settings as the standby copy keeps them (`standby.settings`): a
    /// promoted node admits StorePOS apps, from the same ranges, when the old master did.
    static func keepStorePOSSettings(_ settings: JSONObject?, in c: inout NodeConfiguration) {
        guard let settings, settings["storePOS"] == .bool(true) else { return }
        c.insecureStorePOS = true
        c.storePOSAllow = (settings["storePOSRanges"]?.arrayValue ?? []).compactMap { $0.stringValue.flatMap(AddressRange.init(parsing:)) }
    }

    func startPromotion(_ request: PromoteRequest, _ respond: LocalAPIServer.Respond, automatic: Bool = false) {
        func refuse(_ refusal: PromoteRefusal) { respond(refusal.httpStatus, refusal.jsonValue) }
        guard !shuttingDown, let requestHandOver = seat.requestHandOver else {
            return refuse(PromoteRefusal(.promoting, message: "the slave is stopping or switching roles"))
        }
        let me = nodeIdentity.nodeId
        let standby: String?
        let storedTerm: Int64
        let isVoter: Bool
        var voters: [String: String] = [:]
        var settings: JSONObject?
        var number: Int64?
        do {
            (standby, storedTerm, isVoter) = try writer.read { db in
                for t in try db.memberTerminals() where t.revokedMillis == nil && t.voter { voters[t.member.id] = t.member.name }
                if let m = try db.standbyMaster() { voters[m.id] = m.name }
                settings = try db.standbySettings()
                number = try db.memberNumber(nodeId: me)
                return (
                    try db.metadata(Self.standbyMasterKey), MasterNode.storedTerm(try db.metadata(MasterCandidacy.termKey)),
                    try db.isVoter(nodeId: me) ?? true
                )
            }
        } catch {
            return respond(500, LocalAPIRoute.errorBody(code: "storage_failed", message: "\(error)"))
        }
        guard let store = engine.joinedStore, let lineage = engine.epoch, standby != nil else {
            return refuse(
                PromoteRefusal(
                    .noStandbyCopy,
                    message: "this slave holds no standby copy of the store (it never received the store's members from a master)"))
        }
        // Its term is a ballot only it may bid (Docs/PROTOCOL.md 7.16): without its member number
        // it could collide with another candidate's, so it waits to be told.
        guard let number, TermBallot.numbers.contains(number) else {
            return refuse(
                PromoteRefusal(
                    .noStandbyCopy,
                    message: "this terminal has no member number yet (its master runs an earlier version, or has not sent the "
                        + "store's members since this terminal's upgrade): connect it to its master once, then promote"))
        }
        let term = TermBallot.bid(number: number, above: max(storedTerm, candidates.highestTerm(members: Set(members().map(\.nodeId)))))
        var master = configuration
        master.role = .master
        master.store = store
        Self.keepStorePOSSettings(settings, in: &master)
        let election = Candidacy.Configuration(
            term: term, nodeId: me, name: terminalName, position: logPosition(), isVoter: isVoter, voters: voters,
            force: request.force)
        let candidacy = MasterCandidacy(
            store: store, lineage: lineage, term: term, request: request, election: election, slaveConfiguration: configuration,
            slaveJitter: reconnectBackoff.jitter, respond: respond, startedAt: loop.now)
        candidacy.automatic = automatic
        logger.notice("promote.requested", metadata: ["term": "\(term)", "forced": "\(request.force)", "seq": "\(engine.lastSeq)"])
        // The old master is presumed gone: its link is dropped, not closed politely (a frozen
        // master would hold the candidate back for the close's whole timeout).
        linkState.link?.abort(reason: "promoting this terminal")
        let (seat, loop, discovery, logger) = (self.seat, self.loop, self.discovery, self.logger)
        requestHandOver("promote") {
            var master = master
            let ports = Self.promotedPorts(&master, logger: logger)
            return .master(
                try MasterNode(
                    configuration: master, loop: loop, dataDirectory: seat.dataDirectory, discovery: discovery, logger: logger,
                    seat: seat, promotion: candidacy, ports: ports))
        }
    }

    /// The terminals' port a promoted node serves: its `--port` (the store's usual one, 7420 by
    /// default), so that terminals, StorePOS apps and firewalls find the master where they
    /// always did. When another program holds it, any free port (`promote.port_busy`, warning):
    /// the node is published with the port it got, so terminals that discover it still connect.
    /// The dashboard and `--metrics-listen` were bound when the slave started (``RoleSeat``).
    static func promotedPorts(_ c: inout NodeConfiguration, logger: Logger) -> StartupPorts? {
        do {
            return StartupPorts(terminals: try MasterNode.bindTerminalPort(c), metrics: nil, dashboard: nil)
        } catch {
            guard c.port != 0 else { return nil }
            logger.warning(
                "promote.port_busy", metadata: ["port": "\(c.port)", "listen": "\(c.listenAddress)", "error": "\(error)"])
            c.port = 0
            return nil
        }
    }
}
