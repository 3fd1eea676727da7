import CIMode
import Discovery
import Foundation
import XCTest

/// Start/stop behaviour that needs no avahi-daemon and sends nothing on any network: the
/// client is pointed at a D-Bus system bus that does not exist.
///
/// libdbus reads DBUS_SYSTEM_BUS_ADDRESS once per process, so on a simulated LAN host (where
/// AvahiDiscoveryLanTests have already connected to the real bus) these tests cannot run: the LAN
/// run leaves them out (`--skip AvahiDiscoveryLifecycleTests`), and if they are run there anyway
/// they are skipped, or fail under CI mode. The absent-daemon case is covered there by
/// `testDaemonStartedAfterUsIsWaitedFor`.
final class AvahiDiscoveryLifecycleTests: XCTestCase {
    private var savedBusAddress: String?

    override func setUpWithError() throws {
        try super.setUpWithError()
        if ProcessInfo.processInfo.environment["ORDERSYNC_AVAHI_TESTS"] == "1" {
            let why = "runs without a D-Bus system bus; covered on the LAN by AvahiDiscoveryLanTests"
            if CIMode.isOn {
                throw SimulatedHostError(message: "\(why): leave it out with --skip AvahiDiscoveryLifecycleTests")
            }
            throw XCTSkip(why)
        }
        savedBusAddress = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"]
        setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/ordersync-test-bus", 1)
    }

    override func tearDown() {
        if ProcessInfo.processInfo.environment["ORDERSYNC_AVAHI_TESTS"] == "1" {
            return super.tearDown()
        }
        if let savedBusAddress {
            setenv("DBUS_SYSTEM_BUS_ADDRESS", savedBusAddress, 1)
        } else {
            unsetenv("DBUS_SYSTEM_BUS_ADDRESS")
        }
        super.tearDown()
    }

    func testStartWithoutDaemonReportsUnavailableInsteadOfFailing() throws {
        let recorder = EventRecorder()
        let discovery = AvahiDiscovery(onEvent: recorder.handler)
        discovery.publish(ServiceAnnouncement(name: "Lonely POS", port: 8080, txt: [("proto", "ordersync/1")]))
        discovery.browse(type: "_pos._tcp")
        try discovery.start()
        let event = recorder.wait(timeout: 10) { $0.isDaemonUnavailable }
        guard case .daemonUnavailable(let reason)? = event else {
            return XCTFail("no daemonUnavailable event: \(recorder.all)")
        }
        XCTAssertFalse(reason.isEmpty)
        // The retry after the first backoff step must not report the same outage again.
        let retried = recorder.wait(since: recorder.mark, timeout: 1.5) { _ in true }
        XCTAssertNil(retried, "unexpected event while retrying: \(recorder.all)")
        discovery.stop()
        discovery.stop()
        XCTAssertEqual(recorder.all.filter(\.isDaemonUnavailable).count, 1)
    }

    func testStartTwiceAndAfterStopAreMisuse() throws {
        let discovery = AvahiDiscovery(onEvent: { _ in })
        try discovery.start()
        XCTAssertThrowsError(try discovery.start()) {
            XCTAssertEqual(($0 as? DiscoveryError)?.code, .misuse)
        }
        discovery.stop()
        XCTAssertThrowsError(try discovery.start()) {
            XCTAssertEqual(($0 as? DiscoveryError)?.code, .misuse)
        }
    }

    func testInvalidAnnouncementIsReportedNotPublished() {
        let recorder = EventRecorder()
        let discovery = AvahiDiscovery(onEvent: recorder.handler)
        discovery.publish(ServiceAnnouncement(name: "", port: 8080))
        guard case .publishFailed(let reason)? = recorder.all.first else {
            return XCTFail("expected publishFailed, got \(recorder.all)")
        }
        XCTAssertTrue(reason.contains("name"), reason)
        discovery.stop()
    }

    func testStopWithoutStartAndDeinitAreHarmless() {
        var discovery: AvahiDiscovery? = AvahiDiscovery(onEvent: { _ in })
        discovery?.stop()
        discovery = AvahiDiscovery(onEvent: { _ in })
        discovery?.browse(type: "_pos._tcp")
        discovery = nil
        XCTAssertNil(discovery)
    }
}
