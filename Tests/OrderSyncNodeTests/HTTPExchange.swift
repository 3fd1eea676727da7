import EventLoopIO
import XCTest

extension XCTestCase {
    /// A TCP port nothing listens on now.
    func freePort() throws -> UInt16 {
        let l = try TCPListener.bind(host: "127.0.0.1", port: 0)
        defer { l.close() }
        return l.localPort
    }

    /// Sends `request` to 127.0.0.1:`port` and reads until the server closes.
    func httpExchange(port: UInt16, _ request: String) throws -> String {
        let socket = try TCPSocket.connect(host: "127.0.0.1", port: port)
        defer { socket.close() }
        try socket.writeAll(Array(request.utf8), timeout: .seconds(10))
        var out: [UInt8] = []
        while true {
            let chunk = try socket.readSome(timeout: .seconds(10))
            if chunk.isEmpty { break }
            out += chunk
        }
        return String(decoding: out, as: UTF8.self)
    }
}
