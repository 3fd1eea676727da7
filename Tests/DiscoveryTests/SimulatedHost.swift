import CIMode
import Foundation
import XCTest

/// The simulated LAN host these tests run on, described by the LAN test runner through the
/// environment (Tests/lan/test_discovery_swift.py):
///
/// - `ORDERSYNC_AVAHI_TESTS=1`: this process runs on a simulated host with its own D-Bus
///   system bus and avahi-daemon;
/// - `ORDERSYNC_HOST_ADDRESS`, `ORDERSYNC_PEER_ADDRESS`: this host's and the peer's addresses;
/// - `ORDERSYNC_PEER_COMMAND`: JSON argv prefix that runs a command on the peer host;
/// - `ORDERSYNC_AVAHI_START`: JSON argv that starts this host's avahi-daemon.
struct SimulatedHost {
    let address: String
    let peerAddress: String
    let peerCommand: [String]
    let avahiStart: [String]

    /// The host, or, when the tests do not run on a simulated LAN, an XCTSkip (a failure under
    /// CI mode: a plain `swift test` run leaves them out with `--skip AvahiDiscoveryLanTests`).
    static func current() throws -> SimulatedHost {
        let environment = ProcessInfo.processInfo.environment
        guard environment["ORDERSYNC_AVAHI_TESTS"] == "1" else {
            let why = "needs avahi-daemon on a simulated LAN host: run Tests/lan/test_discovery_swift.py"
            if CIMode.isOn {
                throw SimulatedHostError(message: "\(why), or leave these tests out with --skip AvahiDiscoveryLanTests")
            }
            throw XCTSkip(why)
        }
        func value(_ key: String) throws -> String {
            guard let value = environment[key], !value.isEmpty else {
                throw SimulatedHostError(message: "ORDERSYNC_AVAHI_TESTS=1 but \(key) is not set")
            }
            return value
        }
        func argv(_ key: String) throws -> [String] {
            let data = Data(try value(key).utf8)
            guard let list = try JSONSerialization.jsonObject(with: data) as? [String], !list.isEmpty else {
                throw SimulatedHostError(message: "\(key) must be a JSON array of strings")
            }
            return list
        }
        return SimulatedHost(
            address: try value("ORDERSYNC_HOST_ADDRESS"),
            peerAddress: try value("ORDERSYNC_PEER_ADDRESS"),
            peerCommand: try argv("ORDERSYNC_PEER_COMMAND"),
            avahiStart: try argv("ORDERSYNC_AVAHI_START"))
    }

    /// Runs `argv` on this host to completion; returns its exit status and standard output.
    @discardableResult
    func run(_ argv: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = argv
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// Runs `argv` on the peer host to completion.
    @discardableResult
    func runOnPeer(_ argv: [String]) throws -> (status: Int32, output: String) {
        try run(peerCommand + argv)
    }

    /// Publishes a service from the peer with `avahi-publish` and returns once Avahi has
    /// established it; terminate the returned process to withdraw it.
    func publishOnPeer(
        name: String, type: String = "_pos._tcp", port: UInt16,
        txt: [String]
    ) throws -> PeerPublisher {
        let publisher = try PeerPublisher(
            command: peerCommand + [
                "stdbuf", "-oL", "avahi-publish", "-s",
                name, type, String(port),
            ] + txt)
        try publisher.waitEstablished(timeout: 20)
        return publisher
    }

    /// The services of `type` that `avahi-browse -rpt` resolves on the peer.
    func browseOnPeer(type: String = "_pos._tcp") throws -> [BrowsedService] {
        BrowsedService.parse(try runOnPeer(["avahi-browse", "-rpt", type]).output)
    }

    /// Polls the peer's `avahi-browse` until `predicate` holds (at most `timeout` seconds).
    func browseOnPeer(
        type: String = "_pos._tcp", timeout: TimeInterval,
        until predicate: ([BrowsedService]) -> Bool
    ) throws -> [BrowsedService] {
        let deadline = Date(timeIntervalSinceNow: timeout)
        var services: [BrowsedService] = []
        repeat {
            services = try browseOnPeer(type: type)
            if predicate(services) {
                return services
            }
            Thread.sleep(forTimeInterval: 0.2)
        } while Date() < deadline
        return services
    }

    /// Stops this host's avahi-daemon and waits until it is gone.
    func stopAvahi() throws {
        try run(["avahi-daemon", "--kill"])
        try waitFor("avahi-daemon to exit") { try run(["avahi-daemon", "--check"]).status != 0 }
    }

    /// Starts this host's avahi-daemon unless it runs.
    func ensureAvahiRunning() throws {
        if try run(["avahi-daemon", "--check"]).status != 0 {
            let started = try run(avahiStart)
            XCTAssertEqual(started.status, 0, "starting avahi-daemon")
        }
    }

    private func waitFor(_ what: String, timeout: TimeInterval = 10, _ condition: () throws -> Bool) throws {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while try !condition() {
            guard Date() < deadline else {
                throw LanTestError("timed out waiting for \(what)")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }
}

/// An `avahi-publish` process running on the peer host.
final class PeerPublisher {
    private let process = Process()
    private let pipe = Pipe()

    init(command: [String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = command
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
    }

    /// Reads the publisher's output until Avahi reports the service established.
    func waitEstablished(timeout: TimeInterval) throws {
        let handle = pipe.fileHandleForReading
        let deadline = Date(timeIntervalSinceNow: timeout)
        var output = ""
        while Date() < deadline {
            var poller = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 200) >= 0 else {
                break
            }
            if poller.revents == 0 {
                continue
            }
            let chunk = handle.availableData
            if chunk.isEmpty {
                break
            }
            output += String(decoding: chunk, as: UTF8.self)
            if output.contains("Established under name") {
                return
            }
        }
        stop()
        throw LanTestError("avahi-publish did not establish its service: \(output)")
    }

    /// Stops the publisher (SIGTERM: avahi-publish withdraws the service) and waits for it.
    func stop() {
        if process.isRunning {
            process.terminate()
        }
        process.waitUntilExit()
    }

    deinit {
        stop()
    }
}

/// One resolved line (`=`) of `avahi-browse -rpt`.
struct BrowsedService: Equatable {
    var name: String
    var address: String
    var port: UInt16
    var txt: [String: String]

    static func parse(_ output: String) -> [BrowsedService] {
        output.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ";", maxSplits: 9, omittingEmptySubsequences: false)
            guard fields.count >= 9, fields[0] == "=", let port = UInt16(fields[8]) else {
                return nil
            }
            var txt: [String: String] = [:]
            if fields.count > 9 {
                for item in fields[9].split(separator: "\" \"") {
                    let entry = item.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                    let parts = entry.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                    if let key = parts.first, !key.isEmpty, txt[String(key)] == nil {
                        txt[String(key)] = parts.count > 1 ? String(parts[1]) : ""
                    }
                }
            }
            return BrowsedService(
                name: unescape(String(fields[3])), address: String(fields[7]),
                port: port, txt: txt)
        }
    }

    /// Undoes avahi-browse's escaping (`\032` is a space, `\.` a dot).
    static func unescape(_ label: String) -> String {
        var bytes: [UInt8] = []
        let raw = Array(label.utf8)
        var index = 0
        while index < raw.count {
            if raw[index] == UInt8(ascii: "\\"), index + 4 <= raw.count,
                raw[(index + 1)..<(index + 4)].allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                let code = UInt8(String(decoding: raw[(index + 1)..<(index + 4)], as: UTF8.self))
            {
                bytes.append(code)
                index += 4
            } else if raw[index] == UInt8(ascii: "\\"), index + 1 < raw.count {
                bytes.append(raw[index + 1])
                index += 2
            } else {
                bytes.append(raw[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A failure of the test environment (a peer command that did not do what it should).
struct LanTestError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}

/// A misconfigured LAN run: a failure, never a skip.
struct SimulatedHostError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
