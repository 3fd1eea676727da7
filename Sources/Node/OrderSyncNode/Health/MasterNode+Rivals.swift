import Discovery
import Logging
import NodePolicy

/// Another master of this store on the LAN (`RivalMasters`): the master's browse of its own
/// service type (started once it is published) reports every service of the type; one naming
/// this store that is not this master's own announcement is warned about
/// (`master.rival_seen`), listed in status (`rivals`), counted in `ordersync_rival_masters` and
/// makes `ordersync check` CRITICAL until it leaves the LAN (`master.rival_gone`).
extension MasterNode {
    /// Feeds a discovery event to the rivals (services found and lost; the rest is ignored).
    /// The master browses only its own service type.
    func noteRivals(_ event: DiscoveryEvent) {
        switch event {
        case .serviceFound(let s):
            let announcement = RivalMasters.Announcement(name: s.name, hostName: s.hostName, address: s.address, port: s.port, txt: s.txt)
            reportRival(
                rivals.found(
                    announcement, storeId: storeId, ownName: publishedName, askedName: serviceName, nowMillis: WallClock.nowMillis()))
        case .serviceLost(let name, _, _):
            reportRival(rivals.lost(name: name))
        default:
            break
        }
    }

    private func reportRival(_ change: RivalMasters.Change) {
        switch change {
        case .appeared(let r):
            logger.warning(
                "master.rival_seen",
                metadata: [
                    "rival.name": "\(r.name)", "rival.address": "\(r.address)", "rival.host": "\(r.hostName)",
                    "rival.id": "\(r.nodeId ?? "-")", "rival.term": "\(r.term.map(String.init) ?? "-")",
                    "hint":
                        "another master publishes store \(storeId): terminals may follow either and the store splits; stop the one that should not run (`ordersync status` on \(r.hostName))",
                ])
        case .gone(let r):
            logger.info("master.rival_gone", metadata: ["rival.name": "\(r.name)", "rival.address": "\(r.address)"])
        case .updated, .none:
            break
        }
    }
}
