import JSON
import OrderStore

@testable import SyncCore

/// Links between nodes: connecting (a slave's `SlaveEngine` to a master or a candidate), what
/// arrives at each end, and carrying out the engines' actions.
extension EngineFailoverSimulation {
    /// `client` connects to `server` (a master or a candidate); its slave engine says hello.
    func connect(_ client: EngineFailoverNode, to server: EngineFailoverNode) {
        dropLink(client)
        guard let e = client.slave else { return }
        let c = network.open(slave: client.index)
        client.link = c
        client.linkTarget = server.index
        server.served[c.id] = EngineFailoverPeer(link: c, node: client.index)
        stats.connections += 1
        trace.add(clock.now, client.tag, "connect", "to \(server.tag) (\(server.role.name)) link \(c.id)")
        if let m = server.master {
            performMaster(server, m.peerConnected(c.id, address: "10.0.0.\(client.index + 10):\(40000 + c.id)", terminal: terminal(client)))
        }
        performSlave(client, e.linkOpened())
    }

    /// The terminal a link's key proves.
    func terminal(_ n: EngineFailoverNode) -> AuthenticatedTerminal { AuthenticatedTerminal(nodeId: n.id, name: n.name) }

    /// `client` closes its link normally.
    func dropLink(_ client: EngineFailoverNode) {
        guard let c = client.link else { return }
        client.link = nil
        client.linkTarget = nil
        client.followed = nil
        network.closeGracefully(c, by: .slave)
        client.slave?.linkClosed()
    }

    /// The server of link `c`: the node that holds it in `served`.
    func server(of c: SimConnection) -> EngineFailoverNode? {
        nodes.first { $0.served[c.id]?.link === c }
    }

    func arrived(_ text: String, on c: SimConnection, at side: SimSide) {
        switch side {
        case .master:
            guard let s = server(of: c), s.isUp, let peer = s.served[c.id] else { return }
            trace.add(clock.now, s.tag, "<- \(nodes[peer.node].tag)#\(c.id)", text)
            if let m = s.master {
                performMaster(s, m.received(Array(text.utf8), from: c.id, now: clock.now))
                answerReplicatedWrites(s)
            } else if let candidate = s.candidate {
                candidateReceived(text, from: nodes[peer.node], on: c, candidate, at: s)
            }
        case .slave:
            let n = nodes[c.slave]
            guard n.isUp, n.link === c, let e = n.slave else { return }
            trace.add(clock.now, n.tag, "<- #\(c.id)", text)
            let bytes = Array(text.utf8)
            if ElectionMessage.decode(bytes) != nil {
                voterReceived(bytes, on: c, at: n)
                return
            }
            performSlave(n, e.received(bytes, now: clock.now))
            if e.link == .live, let t = n.linkTarget, nodes[t].master != nil { n.followed = nodes[t].id }
        }
    }

    func closed(_ c: SimConnection, at side: SimSide) {
        switch side {
        case .master:
            guard let s = server(of: c), let peer = s.served.removeValue(forKey: c.id) else { return }
            trace.add(clock.now, s.tag, "closed", "link \(c.id) of \(nodes[peer.node].tag)")
            if let m = s.master {
                performMaster(s, m.peerDisconnected(c.id, now: clock.now))
                answerReplicatedWrites(s)
            } else if let candidate = s.candidate {
                perform(s, candidate, candidate.election.linkLost(from: nodes[peer.node].id))
            }
        case .slave:
            let n = nodes[c.slave]
            guard n.link === c else { return }
            n.link = nil
            n.linkTarget = nil
            n.followed = nil
            n.slave?.linkClosed()
            trace.add(clock.now, n.tag, "closed", "link \(c.id)")
        }
    }

    /// Carries out a master engine's actions.
    func performMaster(_ n: EngineFailoverNode, _ actions: [MasterEngine.Action]) {
        for a in actions {
            guard let e = n.master else { return }
            switch a {
            case .send(let peer, let bytes):
                let text = String(decoding: bytes, as: UTF8.self)
                if text.hasPrefix("{\"type\":\"result\"") { answered(n, e, bytes) }
                if let p = n.served[peer] { network.send(text, on: p.link, from: .master) }
            case .broadcast(let bytes, let peers):
                let text = String(decoding: bytes, as: UTF8.self)
                for id in peers {
                    if let p = n.served[id] { network.send(text, on: p.link, from: .master) }
                }
            case .close(let peer, let code, let reason):
                trace.add(clock.now, n.tag, "close", "link \(peer) code \(code): \(reason)")
                if let p = n.served.removeValue(forKey: peer) {
                    network.closeGracefully(p.link, by: .master)
                    performMaster(n, e.peerDisconnected(peer, now: clock.now))
                }
            case .log(let l):
                trace.log(clock.now, n.tag, l)
            case .stepDown(let term):
                // The node looks for the member announcing it (its browse) and steps down then.
                trace.add(clock.now, n.tag, "stale", "a terminal follows term \(term)")
            }
        }
    }

    /// The master answered a terminal's operation: it claims its term, and the checker learns
    /// where its journal holds the operation.
    private func answered(_ n: EngineFailoverNode, _ e: MasterEngine, _ bytes: [UInt8]) {
        checker.claim(self, term: e.terms.term, by: n, "answered an operation")
        guard let id = (try? JSONParser.parse(bytes))?.objectValue?["opId"]?.stringValue,
            let entry = try? n.db?.journalEntry(opId: id)
        else { return }
        checker.applied(id, seq: entry.seq, term: entry.term)
    }

    /// Carries out a slave engine's actions.
    func performSlave(_ n: EngineFailoverNode, _ actions: [SlaveEngine.Action]) {
        for a in actions {
            guard let e = n.slave else { return }
            switch a {
            case .send(let bytes):
                if let c = n.link { network.send(String(decoding: bytes, as: UTF8.self), on: c, from: .slave) }
            case .resync(let reason), .abort(let reason):
                trace.add(clock.now, n.tag, "drop link", reason)
                dropLink(n)
            case .scheduleAck:
                let inc = n.incarnation
                clock.schedule(after: 200) { [unowned self] in
                    guard n.incarnation == inc, let e = n.slave else { return }
                    self.performSlave(n, e.ackDue())
                }
            case .scheduleOutboxRetry(let millis):
                let inc = n.incarnation
                clock.schedule(after: millis) { [unowned self] in
                    guard n.incarnation == inc, let e = n.slave else { return }
                    self.performSlave(n, e.retryOutbox())
                }
            case .answered(let opId, let seq, _, let errors, let pending):
                if seq == nil, !pending, !errors.contains(where: { $0.code == .storageFailed }) { checker.answeredUnapplied(opId) }
            case .synced(let seq, _, _):
                trace.add(clock.now, n.tag, "synced", "seq \(seq) term \(e.term)")
            case .log(let l):
                if l.event == "sync.diverged" {
                    stats.divergedSlaves += 1
                    stats.requeued += Int(l.metadata.first { $0.0 == "requeued" }?.1 ?? "") ?? 0
                }
                if l.event == "snapshot.received" {
                    stats.snapshots += 1
                    if let db = n.db, let base = try? db.standbyBase() {
                        stats.keptBelowBase += (try? db.journalEntries(after: 0, limit: Int.max).filter { $0.seq <= base }.count) ?? 0
                    }
                }
                trace.log(clock.now, n.tag, l)
            }
        }
    }

    /// A master sends heartbeats every second, as the node does.
    func scheduleHeartbeat(_ n: EngineFailoverNode) {
        let inc = n.incarnation
        clock.schedule(after: 1000) { [unowned self] in
            guard n.incarnation == inc, let e = n.master else { return }
            for p in n.servedPeers {
                if let beat = e.heartbeat(for: p.link.id) {
                    self.network.send(String(decoding: beat, as: UTF8.self), on: p.link, from: .master)
                }
            }
            self.scheduleHeartbeat(n)
        }
    }
}
