import EventLoopIO
import Foundation
import HTTP1
import JSON
import NodePolicy

/// Follows a node's change feed as server-sent events over its Unix socket, for `ordersync
/// watch`: reconnects when the stream ends and resumes with `Last-Event-ID`.
public struct ChangeFeedClient {
    let dataDirectory: String
    /// A stream silent this long (three missed keepalives) is taken as dead and opened again.
    public var idleTimeout: Duration = .seconds(45)

    public init(dataDirectory: String) { self.dataDirectory = dataDirectory }

    var socketPath: String { (dataDirectory as NSString).appendingPathComponent(NodeDefaults.socketFile) }

    /// Calls `onChange` with each change's seq and JSON text, from `since` on, for ever (until the
    /// process is stopped). Throws when the node answers with a refusal (410: the cursor is too
    /// old, an epoch mismatch) or no node runs when it starts. `onReconnect` hears of a dropped
    /// stream.
    public func follow(
        since: Int64, onChange: (Int64, String) -> Void, onReconnect: (String) -> Void = { _ in }
    ) throws -> Never {
        var cursor = since
        var everConnected = false
        while true {
            do {
                try stream(from: cursor) { seq, text in
                    cursor = seq
                    onChange(seq, text)
                } opened: {
                    everConnected = true
                }
                onReconnect("the stream ended")
            } catch let e as LocalAPIClientError {
                if case .noDaemon = e, everConnected {
                    onReconnect("no node is running; retrying")
                } else {
                    throw e
                }
            } catch {
                onReconnect("\(error)")
            }
            Thread.sleep(forTimeInterval: 1)
        }
    }

    /// One connection: the request, the head, then events until the stream ends.
    private func stream(from cursor: Int64, onChange: (Int64, String) -> Void, opened: () -> Void) throws {
        let socket: Socket
        do { socket = try UnixSocket.connectBlocking(path: socketPath) } catch {
            try FileOwner.requireDirectory(dataDirectory)
            throw LocalAPIClientError.noDaemon(dataDirectory: dataDirectory)
        }
        defer { socket.close() }
        let head =
            "GET /v1/changes?since=\(cursor) HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n"
            + "Last-Event-ID: \(cursor)\r\nConnection: close\r\n\r\n"
        try socket.writeAll(Array(head.utf8), timeout: .seconds(10))
        var buffer: [UInt8] = []
        var status: Int?
        var parser = ServerSentEventParser()
        while true {
            let chunk = try socket.readSome(maxBytes: 65_536, timeout: idleTimeout)
            if status == nil {
                buffer += chunk
                guard let end = Self.headEnd(buffer) else {
                    if chunk.isEmpty { throw LocalAPIClientError.badResponse("connection closed before a response") }
                    continue
                }
                let headText = String(decoding: buffer[..<end], as: UTF8.self)
                let parts = headText.split(separator: " ", maxSplits: 2)
                guard parts.count >= 2, let s = Int(parts[1]) else { throw LocalAPIClientError.badResponse("bad status line") }
                status = s
                let rest = Array(buffer[(end + 4)...])
                if s != 200 {
                    // A JSON error: read it whole (the node closes after it or sends its length).
                    var body = rest
                    while let more = try? socket.readSome(maxBytes: 65_536, timeout: .seconds(5)), !more.isEmpty { body += more }
                    let json = (try? JSONParser.parse(body)) ?? .null
                    throw LocalAPIClientError.answer(LocalAPIResponse(status: s, body: json))
                }
                opened()
                for e in parser.append(rest) { deliver(e, onChange) }
                continue
            }
            if chunk.isEmpty { return }
            for e in parser.append(chunk) { deliver(e, onChange) }
        }
    }

    private func deliver(_ e: ServerSentEventParser.Event, _ onChange: (Int64, String) -> Void) {
        guard e.event == "change", let id = e.id, let seq = Int64(id) else { return }
        onChange(seq, e.data)
    }

    private static func headEnd(_ b: [UInt8]) -> Int? {
        guard b.count >= 4 else { return nil }
        for i in 0...(b.count - 4) where b[i] == 0x0D && b[i + 1] == 0x0A && b[i + 2] == 0x0D && b[i + 3] == 0x0A {
            return i
        }
        return nil
    }
}
