import XCTest

@testable import NodePolicy

final class MasterCandidatesTests: XCTestCase {
    private func master(
        _ name: String, _ address: String, port: UInt16 = 8080, store: String = "shop1", epoch: String = "e1",
        id: String? = nil, previd: String? = nil
    ) -> MasterCandidate {
        var txt = ["proto": "ordersync/1", "store": store, "epoch": epoch]
        txt["id"] = id
        txt["previd"] = previd
        return MasterCandidate(
            name: name, type: "_ordersync._tcp", domain: "local", hostName: "\(name).local", address: address,
            port: port, txt: txt, interfaceIndex: 2)
    }

    private func chosenAddress(_ candidates: MasterCandidates, store: String? = "shop1", epoch: String? = "e1") -> String? {
        guard case .master(let service, _) = candidates.choose(store: store, epoch: epoch) else { return nil }
        return "\(service.address):\(service.port)"
    }

    func testChoosesTheNewestSeenNotTheNameAndReportsChanges() {
        var candidates = MasterCandidates()
        XCTAssertEqual(candidates.choose(store: "shop1", epoch: nil), .none)
        XCTAssertTrue(candidates.found(master("Zeta", "10.0.0.1")))
        XCTAssertTrue(candidates.found(master("Alpha", "10.0.0.2")))
        XCTAssertEqual(chosenAddress(candidates), "10.0.0.2:8080")
        XCTAssertFalse(candidates.found(master("Zeta", "10.0.0.1")), "an unchanged resolution is not news")
        XCTAssertEqual(chosenAddress(candidates), "10.0.0.1:8080", "seen again: the newest")
        XCTAssertTrue(candidates.lost(name: "Zeta", domain: "local"))
        XCTAssertFalse(candidates.lost(name: "Zeta", domain: "local"))
        XCTAssertEqual(chosenAddress(candidates), "10.0.0.2:8080")
    }

    func testNeverGuessesBetweenStoresAndKeepsToTheReplicasEpoch() {
        var candidates = MasterCandidates()
        _ = candidates.found(master("A", "10.0.0.1", store: "shop1"))
        _ = candidates.found(master("B", "10.0.0.2", store: "shop2"))
        XCTAssertEqual(candidates.choose(store: nil, epoch: nil), .severalStores(["shop1", "shop2"]))
        XCTAssertEqual(candidates.choose(store: "shop3", epoch: nil), .waitingForStore(store: "shop3", seen: ["shop1", "shop2"]))
        _ = candidates.found(master("C", "10.0.0.3", store: "shop1", epoch: "e2"))
        guard case .master(let chosen, let rivals) = candidates.choose(store: "shop1", epoch: "e1") else {
            return XCTFail("no master chosen")
        }
        XCTAssertEqual(chosen.address, "10.0.0.1", "the replica's epoch wins over the newer announcement")
        XCTAssertEqual(rivals, ["10.0.0.1:8080|e1", "10.0.0.3:8080|e2"])
        // Failures never move a slave to another epoch while one of its own is announced.
        XCTAssertEqual(candidates.failed(address: "10.0.0.1", port: 8080, store: "shop1", epoch: "e1", now: .zero), .rebrowse)
        XCTAssertEqual(chosenAddress(candidates), "10.0.0.1:8080")
    }

    func testAFailedCandidateFallsBackToTheOthersThenRebrowses() {
        var candidates = MasterCandidates()
        _ = candidates.found(master("Till", "10.0.0.1"))
        _ = candidates.found(master("Till (2)", "10.0.0.2", port: 9000))
        _ = candidates.found(master("Stale", "10.0.0.3"))
        XCTAssertEqual(chosenAddress(candidates), "10.0.0.3:8080")
        XCTAssertEqual(candidates.failed(address: "10.0.0.3", port: 8080, store: "shop1", epoch: "e1", now: .zero), .tryAnother)
        XCTAssertEqual(chosenAddress(candidates), "10.0.0.2:9000")
        XCTAssertEqual(candidates.failed(address: "10.0.0.2", port: 9000, store: "shop1", epoch: "e1", now: .zero), .tryAnother)
        XCTAssertEqual(chosenAddress(candidates), "10.0.0.1:8080")
        XCTAssertEqual(candidates.failedCount, 2)
        XCTAssertEqual(candidates.failed(address: "10.0.0.1", port: 8080, store: "shop1", epoch: "e1", now: .zero), .rebrowse)
        XCTAssertEqual(chosenAddress(candidates), "10.0.0.3:8080", "every one failed: the newest again")

        candidates.forgetResolutions(now: .seconds(1))
        XCTAssertEqual(candidates.rebrowses, 1)
        XCTAssertEqual(candidates.choose(store: "shop1", epoch: "e1"), .none)
        XCTAssertEqual(candidates.failures(address: "10.0.0.3", port: 8080), 1, "failures in a row outlive a browse")
        // The browse reports the stale one again, then the live one: a failure moves on at once.
        _ = candidates.found(master("Till (2)", "10.0.0.2", port: 9000))
        _ = candidates.found(master("Stale", "10.0.0.3"))
        XCTAssertEqual(candidates.failed(address: "10.0.0.3", port: 8080, store: "shop1", epoch: "e1", now: .seconds(2)), .tryAnother)
        XCTAssertEqual(chosenAddress(candidates), "10.0.0.2:9000")
        // All failed again within the minimum interval: back off instead of browsing again.
        XCTAssertEqual(candidates.failed(address: "10.0.0.2", port: 9000, store: "shop1", epoch: "e1", now: .seconds(3)), .backOff)
        XCTAssertEqual(candidates.failed(address: "10.0.0.2", port: 9000, store: "shop1", epoch: "e1", now: .seconds(6)), .rebrowse)
    }

    func testRepeatedFailuresOnOneAddressRebrowseEvenWithUntriedCandidates() {
        var candidates = MasterCandidates()
        _ = candidates.found(master("Live", "10.0.0.1"))
        _ = candidates.found(master("Dead", "10.0.0.9"))
        // The slave kept retrying the dead one (its last target) while nothing else was known.
        for attempt in 1..<MasterCandidates.failuresBeforeRebrowse {
            candidates.succeeded(address: "10.0.0.1", port: 8080)
            XCTAssertEqual(
                candidates.failed(address: "10.0.0.9", port: 8080, store: "shop1", epoch: "e1", now: .seconds(Int64(attempt))),
                .tryAnother)
        }
        candidates.succeeded(address: "10.0.0.1", port: 8080)
        XCTAssertEqual(candidates.failed(address: "10.0.0.9", port: 8080, store: "shop1", epoch: "e1", now: .seconds(9)), .rebrowse)
    }

    func testAMasterAnnouncedAgainAfterItsGoodbyeIsTriedAtOnceAStaleOneIsNot() {
        var candidates = MasterCandidates()
        _ = candidates.found(master("Counter", "10.0.0.1"))
        _ = candidates.found(master("Counter Rogue", "10.0.0.3"))
        // The master stops (its goodbye); its last attempts and the rogue's failed.
        XCTAssertTrue(candidates.lost(name: "Counter", domain: "local"))
        _ = candidates.failed(address: "10.0.0.1", port: 8080, store: "shop1", epoch: "e1", now: .zero)
        _ = candidates.failed(address: "10.0.0.3", port: 8080, store: "shop1", epoch: "e1", now: .seconds(1))
        candidates.forgetResolutions(now: .seconds(1))
        _ = candidates.found(master("Counter Rogue", "10.0.0.3"))
        XCTAssertEqual(candidates.failures(address: "10.0.0.3", port: 8080), 1, "a stale one reported again keeps its failures")
        // The master is back: announced anew after its goodbye.
        XCTAssertTrue(candidates.found(master("Counter", "10.0.0.1")))
        XCTAssertEqual(candidates.failures(address: "10.0.0.1", port: 8080), 0, "tried at once")
        XCTAssertEqual(chosenAddress(candidates), "10.0.0.1:8080")
    }

    func testNothingToForgetBacksOffAndSuccessClearsTheFailures() {
        var candidates = MasterCandidates()
        XCTAssertEqual(candidates.failed(address: "10.0.0.1", port: 8080, store: "shop1", epoch: nil, now: .zero), .backOff)
        _ = candidates.found(master("A", "10.0.0.1"))
        XCTAssertTrue(candidates.holds(address: "10.0.0.1", port: 8080))
        XCTAssertFalse(candidates.holds(address: "10.0.0.1", port: 8081))
        XCTAssertEqual(candidates.failures(address: "10.0.0.1", port: 8080), 1)
        candidates.succeeded(address: "10.0.0.1", port: 8080)
        XCTAssertEqual(candidates.failures(address: "10.0.0.1", port: 8080), 0)
        XCTAssertEqual(candidates.failedCount, 0)
        XCTAssertEqual(candidates.candidateCount(store: "shop1", epoch: nil), 1)
        XCTAssertEqual(candidates.candidateCount(store: "shop2", epoch: nil), 0)
    }

    func testAnotherEpochElsewhereIsNeverTakenWhileTheReplicasMasterIsAway() {
        var candidates = MasterCandidates()
        _ = candidates.found(master("Counter", "10.0.0.1", epoch: "e1"))
        candidates.succeeded(address: "10.0.0.1", port: 8080)
        _ = candidates.found(master("Totally legit", "10.0.0.3", port: 8081, epoch: "e2"))
        XCTAssertEqual(chosenAddress(candidates), "10.0.0.1:8080")
        // The replica's master restarts: its goodbye leaves only the other database announced.
        XCTAssertTrue(candidates.lost(name: "Counter", domain: "local"))
        XCTAssertEqual(candidates.choose(store: "shop1", epoch: "e1"), .none, "the slave waits for its own master")
        XCTAssertEqual(candidates.failed(address: "10.0.0.1", port: 8080, store: "shop1", epoch: "e1", now: .seconds(1)), .backOff)
        _ = candidates.found(master("Counter", "10.0.0.1", epoch: "e1"))
        XCTAssertEqual(chosenAddress(candidates), "10.0.0.1:8080")
    }

    func testAnotherEpochFromTheHostLastSyncedWithIsFollowed() {
        var candidates = MasterCandidates()
        _ = candidates.found(master("Counter", "10.0.0.1", epoch: "e1"))
        candidates.succeeded(address: "10.0.0.1", port: 8080)
        XCTAssertTrue(candidates.lost(name: "Counter", domain: "local"))
        // The same terminal comes back with a new, empty database (on another port).
        _ = candidates.found(master("Counter", "10.0.0.1", port: 9090, epoch: "e9"))
        XCTAssertEqual(chosenAddress(candidates, epoch: "e1"), "10.0.0.1:9090")
    }

    func testAReplicaWhoseMasterWasNeverSeenFollowsTheStoresOnlyMaster() {
        var candidates = MasterCandidates()
        _ = candidates.found(master("Counter", "10.0.0.5", epoch: "e7"))
        XCTAssertEqual(chosenAddress(candidates, epoch: "e1"), "10.0.0.5:8080")
    }

    // MARK: A paired slave: the master's node ids in the TXT record

    func testAMasterAnnouncingAnotherKeysIdIsNeverACandidate() {
        var candidates = MasterCandidates()
        candidates.trustedIds = ["TRUSTED"]
        let rogue = master("Totally legit", "10.0.0.6", id: "ROGUE")
        _ = candidates.found(master("Counter", "10.0.0.1", id: "TRUSTED"))
        _ = candidates.found(rogue)
        XCTAssertTrue(candidates.isUntrusted(rogue))
        XCTAssertEqual(chosenAddress(candidates), "10.0.0.1:8080", "the newest seen is skipped: another key's id")
        XCTAssertEqual(candidates.candidateCount(store: "shop1", epoch: "e1"), 1)
        // Its failure-free address is still never chosen when the trusted one failed.
        XCTAssertEqual(candidates.failed(address: "10.0.0.1", port: 8080, store: "shop1", epoch: "e1", now: .zero), .rebrowse)
        XCTAssertEqual(chosenAddress(candidates), "10.0.0.1:8080")
        XCTAssertTrue(candidates.lost(name: "Counter", domain: "local"))
        XCTAssertEqual(candidates.choose(store: "shop1", epoch: "e1"), .none, "only the rogue is left: nothing to try")
        var withRival = candidates
        _ = withRival.found(master("Counter", "10.0.0.1", epoch: "e2", id: "TRUSTED"))
        guard case .master(let chosen, let rivals) = withRival.choose(store: "shop1", epoch: "e1") else { return XCTFail("no master") }
        XCTAssertEqual(chosen.address, "10.0.0.1", "the trusted id in a new epoch")
        XCTAssertEqual(rivals, [], "an untrusted master is no rival either")
    }

    func testAMasterDuringAKeyRotationAndOneWithoutAnIdAreTried() {
        var candidates = MasterCandidates()
        candidates.trustedIds = ["OLD"]
        let rotating = master("Counter", "10.0.0.1", id: "NEW", previd: "OLD")
        XCTAssertFalse(candidates.isUntrusted(rotating), "its previous id is the trusted one")
        XCTAssertFalse(candidates.isUntrusted(master("Old build", "10.0.0.2")), "no id: the handshake decides")
        XCTAssertTrue(candidates.isUntrusted(master("Other", "10.0.0.3", id: "NEW", previd: "OTHER")))
        candidates.trustedIds = []
        XCTAssertFalse(candidates.isUntrusted(master("Other", "10.0.0.3", id: "X")), "not paired yet: any master may hold the code")
    }

    func testTheTrustedMasterIsFollowedIntoANewEpochFromAnyHost() {
        var candidates = MasterCandidates()
        candidates.trustedIds = ["TRUSTED"]
        _ = candidates.found(master("Counter", "10.0.0.1", epoch: "e1", id: "TRUSTED"))
        candidates.succeeded(address: "10.0.0.1", port: 8080)
        XCTAssertTrue(candidates.lost(name: "Counter", domain: "local"))
        // The master's key moved to a new machine with a restored database (a new epoch), and
        // a device without an id announces the old epoch elsewhere.
        _ = candidates.found(master("Counter", "10.0.0.7", epoch: "e2", id: "TRUSTED"))
        XCTAssertEqual(chosenAddress(candidates, epoch: "e1"), "10.0.0.7:8080", "another host, the trusted id: followed")
        _ = candidates.found(master("Copycat", "10.0.0.8", epoch: "e1"))
        XCTAssertEqual(chosenAddress(candidates, epoch: "e1"), "10.0.0.8:8080", "newest of the pool first")
        // The copycat fails its handshake: the trusted master is tried next, never stuck on it.
        XCTAssertEqual(candidates.failed(address: "10.0.0.8", port: 8080, store: "shop1", epoch: "e1", now: .zero), .tryAnother)
        XCTAssertEqual(chosenAddress(candidates, epoch: "e1"), "10.0.0.7:8080")
        // Without trust (a master announcing no id), another epoch elsewhere is still refused.
        var unpaired = MasterCandidates()
        _ = unpaired.found(master("Counter", "10.0.0.1", epoch: "e1"))
        unpaired.succeeded(address: "10.0.0.1", port: 8080)
        _ = unpaired.lost(name: "Counter", domain: "local")
        _ = unpaired.found(master("Counter", "10.0.0.7", epoch: "e2"))
        XCTAssertEqual(unpaired.choose(store: "shop1", epoch: "e1"), .none)
    }
}
