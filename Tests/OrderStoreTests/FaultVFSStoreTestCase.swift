import FaultVFS
import Foundation
import SyncCore
import XCTest

@testable import OrderStore

/// Base class of the tests that put the store on the fault-injecting VFS (Tests/CFaultVFS):
/// installed as SQLite's default for the test, reset before it, uninstalled after it. The
/// test's directory is one simulated machine (`machine`). Syncs do not call fsync: the VFS
/// still counts what they made durable, which is what the tests check.
class FaultVFSStoreTestCase: StoreTestCase {
    /// The prefix of every file of this test's machine.
    var machine: String { directory + "/" }

    override func setUpWithError() throws {
        try super.setUpWithError()
        FaultVFS.install()
        FaultVFS.reset()
        // What the tests check is the VFS's model of the disk; fsync would only slow them.
        FaultVFS.skipRealSync(true)
    }

    override func tearDownWithError() throws {
        FaultVFS.reset()
        FaultVFS.uninstall()
        try super.tearDownWithError()
    }

    /// Starts one seed of a test that loops over seeds: the VFS reset (no fsync) with `seed`
    /// for torn power cuts; returns the path of the seed's own database (not created yet).
    func startSeed(_ seed: UInt64) -> String {
        FaultVFS.reset()
        FaultVFS.skipRealSync(true)
        FaultVFS.setSeed(seed)
        return directory + "/seed-\(seed).sqlite"
    }

    /// The power of this test's machine goes off (`loss`) with `db` open, which is then closed
    /// as a dead process's handles would be, and comes back on.
    func losePower(_ db: OrderDatabase, _ loss: FaultVFS.PowerLoss) {
        FaultVFS.powerCut(under: machine, loss)
        db.close()
        XCTAssertEqual(FaultVFS.powerOn(under: machine), 0, "a handle from before the power cut is still open")
    }

    /// The machine comes back on after a cut an armed rule made: `db` is closed first.
    func restoreAfterArmedCut(_ db: OrderDatabase) {
        db.close()
        XCTAssertEqual(FaultVFS.powerOn(under: machine), 0, "a handle from before the power cut is still open")
    }
}
