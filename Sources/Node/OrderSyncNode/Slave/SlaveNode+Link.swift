import Discovery
import EventLoopIO
import Foundation
import Logging
import NodePolicy
import SyncCore
import WebSocket
import WebSocketTransport

extension SlaveNode {
    // MARK: Discovery

    func handleDiscovery(_ event: DiscoveryEvent) {
        loop.assertInEventLoop()
        switch event {
        case .daemonAvailable:
            avahiState = .up
            logger.info("avahi.up")
        case .daemonUnavailable(let reason):
            avahiState = .down
            logger.warning(
                "avahi.down",
                metadata: [
                    "reason": "\(reason)",
                    "hint": "cannot discover a master until avahi-daemon is back; a live link stays up",
                ])
        case .serviceFound(let service):
            guard service.txt["proto"] == orderSyncProtocolName else { return }
            if considerTerm(service) { return }
            let changed = candidates.found(service)
            if candidates.isUntrusted(service) {
                // Announces another key's id: never connected to; logged once per change.
                if changed { logUntrusted(service) }
                return
            }
            if changed {
                logger.info(
                    "master.found",
                    metadata: [
                        "service.name": "\(service.name)", "master.address": "\(service.address):\(service.port)",
                        "master.store": "\(service.txt["store"] ?? "?")",
                    ])
            }
            if mustChooseStore && !storeChoiceSettled {
                // mDNS answers from every host arrive within about a second of the query.
                if settleTimer == nil {
                    settleTimer = loop.schedule(after: NodeDefaults.storeChoiceSettle) { [weak self] in
                        guard let self = self else { return }
                        self.settleTimer = nil
                        self.storeChoiceSettled = true
                        self.considerTargets()
                    }
                }
                return
            }
            considerTargets()
        case .serviceLost(let name, _, let domain):
            guard candidates.lost(name: name, domain: domain) else { return }
            // A lone REMOVE (goodbye crossing a new announcement) must not kill a live link:
            // the link itself tells when the master is really gone.
            logger.info("master.lost", metadata: ["service.name": "\(name)", "link": "\(linkState.name.rawValue)"])
        case .browseFailed(let reason):
            logger.error("discovery.browse_failed", metadata: ["reason": "\(reason)"])
        case .published, .nameCollision, .publishFailed:
            break
        }
    }

    /// The master to use: `--master`, else the newest service of our store that has not failed
    /// since the last browse (see `MasterCandidates`). Never chosen by instance name.
    func chooseTarget() -> LinkTarget? {
        if let url = configuration.masterURL { return LinkTarget(url: url, serviceName: nil) }
        let wanted = configuration.store ?? engine.joinedStore
        switch candidates.choose(store: wanted, epoch: engine.epoch) {
        case .none:
            return nil
        case .waitingForStore(let store, let seen):
            logStoreChoice("slave.waiting_for_store", ["store": "\(store)", "seen": "\(seen.joined(separator: ","))"])
            return nil
        case .severalStores(let stores):
            logStoreChoice(
                "slave.several_stores",
                ["stores": "\(stores.joined(separator: ","))", "hint": "start the slave with --store ID to choose one"])
            return nil
        case .master(let best, let rivals):
            if !rivals.isEmpty {
                logStoreChoice(
                    "slave.several_masters",
                    [
                        "store": "\(wanted ?? "-")", "masters": "\(rivals.joined(separator: ","))",
                        "hint": "more than one master announces this store; keeping to the one this terminal synced from",
                    ])
            }
            let path = best.txt["path"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/"
            return LinkTarget(url: MasterURL(host: best.address, port: best.port, path: path), serviceName: best.name)
        }
    }

    private func logStoreChoice(_ event: String, _ meta: Logger.Metadata) {
        let key = event + meta.description
        guard key != lastStoreChoiceLog else { return }
        lastStoreChoiceLog = key
        logger.warning("\(event)", metadata: meta)
    }

    /// True while this slave belongs to no store yet and must pick the only one on the LAN.
    var mustChooseStore: Bool {
        configuration.masterURL == nil && configuration.store == nil && engine.joinedStore == nil
    }

    /// Connects now when idle or waiting, or moves to a newer master address when the current
    /// attempt is not up yet.
    func considerTargets() {
        guard !shuttingDown else { return }
        guard let chosen = chooseTarget() else {
            // A second store appeared while a slave without a store was joining one: do not
            // guess, drop the attempt before it joins.
            if mustChooseStore, case .connecting(let l, _) = linkState {
                l.abort(reason: "several stores on the LAN; start with --store to choose one")
            } else if mustChooseStore, case .syncing(let l, _) = linkState {
                l.abort(reason: "several stores on the LAN; start with --store to choose one")
            }
            return
        }
        switch linkState {
        case .idle:
            connect(to: chosen)
        case .waiting:
            // A master announced at an address that has not failed is tried at once; one that
            // failed waits for the retry timer (a fresh browse reports stale addresses again).
            if candidates.failures(address: chosen.url.host, port: chosen.url.port) > 0 { return }
            connect(to: chosen)
        case .connecting(let l, _):
            // Only an address no longer announced is given up; a stale one reported again
            // must not cut short an attempt on a live master.
            if l.url != chosen.url, !candidates.holds(address: l.url.host, port: l.url.port) {
                l.abort(reason: "a newer address for the master was announced")
            }
        case .syncing, .live:
            return
        }
    }

    // MARK: Link

    /// Starts an attempt to reach `target`; the link must be idle or waiting.
    func connect(to target: LinkTarget) {
        loop.assertInEventLoop()
        guard !shuttingDown else { return }
        let url = target.url
        let l = MasterLink(
            url: url, loop: loop, configuration: configuration.webSocketChannelConfiguration, credential: trust.credential,
            localStatic: localStatic, terminalName: terminalName, terminalId: terminalId)
        enter(.connecting(l, target))
        metrics.counts.linkAttempts += 1
        l.onPaired = { [weak self, weak l] greeting in
            guard let self = self, let l = l, case .connecting(let current, _) = self.linkState, current === l else { return }
            self.paired(with: greeting, on: l)
        }
        l.onSecured = { [weak self, weak l] greeting in
            guard let self = self, let l = l, case .connecting(let current, let target) = self.linkState, current === l else { return }
            self.enter(.syncing(l, target))
            self.linkCameUp()
            self.trustedLinkSecured()
            self.logger.info(
                "master.connected",
                metadata: [
                    "master.address": "\(url)", "service.name": "\(target.serviceName ?? "-")", "master.id": "\(greeting.masterId)",
                    "ws.subprotocol": "\(l.credential.subprotocol)",
                ])
            self.afterBatch { [weak self] in
                guard let self else { return }
                self.perform(self.engine.linkOpened(now: WallClock.nowMillis()))
            }
        }
        l.onMessage = { [weak self, weak l] bytes in
            guard let self = self, let l = l, self.linkState.isUp, self.linkState.link === l else { return }
            self.masterMessage(bytes)
        }
        l.onMasterKey = { [weak self, weak l] id, key in
            guard let self = self, let l = l, self.linkState.link === l else { return }
            self.masterKeyHandedOver(to: key, id: id, on: l)
        }
        l.onDead = { [weak self] silence in
            self?.logger.warning("master.dead", metadata: ["silent_ms": "\(silence.wholeMilliseconds)"])
        }
        l.onEnd = { [weak self, weak l] ending in
            guard let self = self, let l = l, self.linkState.link === l else { return }
            self.linkEnded(ending)
        }
        l.start()
    }

    /// The link ended: handled once the master's messages received on it are on disk.
    private func linkEnded(_ ending: MasterLinkEnding) {
        // The messages it brought first: decoded, applied, on disk.
        decoder.afterPending { [weak self] in
            self?.afterBatch { [weak self] in self?.linkEndedAfterBatch(ending) }
        }
    }

    private func linkEndedAfterBatch(_ ending: MasterLinkEnding) {
        guard let target = linkState.target else { return }
        let wasUp = linkState.isUp
        let code = ending.closeCode
        lastLinkError = ending.reason
        metrics.counts.endedTraffic.add(linkState.link?.traffic ?? TrafficCounts())
        enter(.idle)
        let masterAskedToWait = engine.reconnectAfterMillis
        engine.linkClosed()
        answerPendingWritesAsQueued()
        var meta: Logger.Metadata = ["master.address": "\(target.url)", "reason": "\(ending.reason)"]
        if let c = code { meta["ws.close_code"] = "\(c)" }
        if case .incompatible = ending.localFailure {
            logger.error("master.incompatible", metadata: meta)
        } else if wasUp {
            logger.warning("master.disconnected", metadata: meta)
        } else {
            logConnectFailure(meta)
        }
        let verdict = trust.verdict(secured: wasUp, ending: ending)
        noteTrustVerdict(verdict, target: target, reason: ending.reason)
        // A member's unproven term: back to the masters this slave had, at once.
        let unproven = termTryFailed(target: target, reason: ending.reason)
        guard !shuttingDown else {
            shutdownComplete()
            return
        }
        // 1011: the master could not store or read (disk full, I/O error). Coming back at once
        // would only fail again: wait the longest backoff.
        var delay: Duration
        var candidateVerdict: MasterCandidates.Verdict?
        if code == MasterEngine.internalError {
            delay = reconnectBackoff.nextLongest()
        } else if wasUp || configuration.masterURL != nil {
            delay = reconnectBackoff.next()
        } else {
            (delay, candidateVerdict) = candidateFailed(target)
        }
        if verdict == .pairingRefused, candidateVerdict != .tryAnother {
            // No other master left to try the code on: an operator must get a new code.
            refusedPairing(reason: ending.reason)
            return
        }
        if verdict == .pairingRequired, candidateVerdict != .tryAnother {
            delay = max(delay, NodeDefaults.unknownTerminalRetryDelay)
        }
        // The trusted master refused our hello `rate_limited` (too many snapshots): wait as it said.
        if let wait = masterAskedToWait, wasUp { delay = max(delay, .milliseconds(wait)) }
        let retry = loop.schedule(after: delay) { [weak self] in self?.retryDue() }
        enter(.waiting(target, retry: retry))
        if unproven { considerTargets() }
    }

    /// Books a failed attempt on a discovered master; falls back to another candidate of the
    /// store, or forgets every resolution and browses again. Returns the delay before the next try.
    private func candidateFailed(_ target: LinkTarget) -> (Duration, MasterCandidates.Verdict) {
        let store = configuration.store ?? engine.joinedStore
        let now = loop.now.sinceBoot
        let verdict = candidates.failed(
            address: target.url.host, port: target.url.port, store: store, epoch: engine.epoch, now: now)
        logger.debug(
            "master.candidate_failed",
            metadata: [
                "master.address": "\(target.url)", "service.name": "\(target.serviceName ?? "-")",
                "failures_in_a_row": "\(candidates.failures(address: target.url.host, port: target.url.port))",
                "failed": "\(candidates.failedCount)", "candidates": "\(candidates.candidateCount(store: store, epoch: engine.epoch))",
                "next": "\(verdict)",
            ])
        switch verdict {
        case .tryAnother:
            return (reconnectBackoff.initial, verdict)
        case .backOff:
            return (reconnectBackoff.next(), verdict)
        case .rebrowse:
            let forgotten = candidates.seen.count
            let failed = candidates.failedCount
            candidates.forgetResolutions(now: now)
            logger.debug(
                "master.rebrowse",
                metadata: [
                    "forgotten": "\(forgotten)", "failed": "\(failed)", "rebrowses": "\(candidates.rebrowses)",
                    "service_type": "\(configuration.serviceType)",
                ])
            discovery?.rebrowse(type: configuration.serviceType)
            return (reconnectBackoff.next(), verdict)
        }
    }

    /// The reconnect timer: try the newest master of our store, else the last one.
    private func retryDue() {
        guard case .waiting(let last, _) = linkState else { return }
        if let chosen = chooseTarget() {
            connect(to: chosen)
        } else if mustChooseStore {
            // Several stores and none chosen: never guess between them.
            enter(.idle)
        } else {
            // No master to choose now: keep trying the last one of our store (its service may
            // be unseen while avahi-daemon restarts).
            connect(to: last)
        }
    }

    /// Carries out what the engine asked for.
    func perform(_ actions: [SlaveEngine.Action]) {
        loop.assertInEventLoop()
        for action in actions {
            switch action {
            case .send(let bytes):
                linkState.link?.send(bytes)
            case .resync(let reason):
                linkState.link?.close(code: .normal, reason: reason)
            case .abort(let reason):
                linkState.link?.abort(reason: reason)
            case .scheduleAck:
                // Acks what was applied, at most every 200 ms on a busy link.
                if let t = ackTimer { loop.cancel(t) }
                ackTimer = loop.schedule(after: NodeDefaults.ackDelay) { [weak self] in
                    guard let self = self else { return }
                    self.ackTimer = nil
                    self.afterBatch { [weak self] in
                        guard let self else { return }
                        self.perform(self.engine.ackDue())
                    }
                }
            case .scheduleOutboxRetry(let millis):
                // The engine counts time in milliseconds of its clock.
                if let t = retryFlushTimer { loop.cancel(t) }
                retryFlushTimer = loop.schedule(after: .milliseconds(millis)) { [weak self] in
                    guard let self = self else { return }
                    self.retryFlushTimer = nil
                    self.afterBatch { [weak self] in
                        guard let self else { return }
                        self.perform(self.engine.retryOutbox())
                    }
                }
            case .answered(let opId, let seq, let applied, let errors, let pending):
                completePendingWrite(opId: opId, seq: seq, applied: applied, errors: errors, pending: pending)
            case .synced(let seq, let epoch, let store):
                if let s = store { logger[metadataKey: "store"] = "\(s)" }
                guard case .syncing(let l, let target) = linkState else { break }
                reconnectBackoff.reset()
                candidates.succeeded(address: target.url.host, port: target.url.port)
                // A connect is a link that got through the hello, not one secured and then lost.
                metrics.counts.linkUps += 1
                enter(.live(l, target))
                termTrySynced()
                logger.info(
                    "master.synced",
                    metadata: [
                        "seq": "\(seq)", "epoch": "\(epoch ?? "-")",
                        "orders": "\((try? writer.read { try $0.orderCount() }) ?? 0)",
                    ])
            case .log(let record):
                logger.log(record)
            }
        }
    }
}
