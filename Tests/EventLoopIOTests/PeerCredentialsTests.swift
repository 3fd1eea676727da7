import CIMode
import Foundation
import Glibc
import XCTest

@testable import EventLoopIO

/// `SO_PEERCRED` on accepted Unix domain sockets: who connected, as the kernel saw it.
final class PeerCredentialsTests: XCTestCase {
    /// Waits up to `seconds` for a connection on `listener` and accepts it.
    private func acceptOne(_ listener: UnixListener, seconds: Int32 = 10) throws -> AcceptedSocket {
        var entry = pollfd(fd: listener.descriptor, events: Int16(POLLIN), revents: 0)
        XCTAssertEqual(poll(&entry, 1, seconds * 1000), 1, "no connection within \(seconds) s")
        return try XCTUnwrap(try listener.accept())
    }

    func testAcceptedSocketReportsThisProcessAsItsPeer() throws {
        let path = temporaryDirectory(self) + "/creds.sock"
        let listener = try UnixListener.bind(path: path)
        defer { listener.close() }
        let client = try UnixSocket.connectBlocking(path: path)
        defer { client.close() }
        let accepted = try acceptOne(listener)
        let credentials = try accepted.socket.peerCredentials()
        XCTAssertEqual(credentials, PeerCredentials(pid: getpid(), uid: geteuid(), gid: getegid()))

        let loop = try EventLoop()
        let channel = try StreamChannel(socket: accepted.socket, loop: loop)
        XCTAssertEqual(try channel.peerCredentials().uid, geteuid())
        channel.close()
        XCTAssertThrowsError(try channel.peerCredentials())
    }

    func testAClientRunAsAnotherUserIsReportedWithItsUid() throws {
        guard geteuid() == 0 else {
            if CIMode.isOn {
                XCTFail("running a client under another uid needs root")
                return
            }
            throw XCTSkip("running a client under another uid needs root")
        }
        let directory = temporaryDirectory(self)
        XCTAssertEqual(chmod(directory, 0o711), 0)
        let path = directory + "/creds.sock"
        let listener = try UnixListener.bind(path: path, mode: 0o666)
        defer { listener.close() }
        let nobody: uid_t = 65534
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        child.arguments = [
            "--reuid", "\(nobody)", "--regid", "\(nobody)", "--clear-groups", "/usr/bin/python3", "-c",
            "import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.recv(1)", path,
        ]
        try child.run()
        defer {
            if child.isRunning { child.terminate() }
            child.waitUntilExit()
        }
        let accepted = try acceptOne(listener)
        let credentials = try accepted.socket.peerCredentials()
        XCTAssertEqual(credentials.uid, nobody)
        XCTAssertNotEqual(credentials.uid, geteuid())
        XCTAssertEqual(credentials.gid, nobody)
        XCTAssertEqual(credentials.pid, child.processIdentifier)
        accepted.socket.close()
    }
}
