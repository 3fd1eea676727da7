import EventLoopIO

extension MasterNode {
    /// Serves `GET /v1/changes` from the journal.
    func startChangeFeed() throws {
        let source = try MasterFeedSource(store: writer, epoch: engine.epoch)
        let hub = ChangeFeedHub(loop: loop, logger: logger, source: source)
        feedSource = source
        changeFeed = hub
        api.changesHandler = { [weak hub] request, sink in hub?.handle(request, sink) }
    }

    /// A group is on disk: the feed shows it.
    func feedCommitted() {
        feedSource?.committed = engine.lastSeq
        changeFeed?.wake()
    }
}

extension SlaveNode {
    /// Serves `GET /v1/changes` from the replica's feed table; reads see the open batch committed.
    func startChangeFeed() throws {
        let hub = ChangeFeedHub(loop: loop, logger: logger, source: try SlaveFeedSource(store: writer))
        changeFeed = hub
        api.changesHandler = { [weak self, weak hub] request, sink in
            self?.afterBatch { hub?.handle(request, sink) }
        }
    }
}
