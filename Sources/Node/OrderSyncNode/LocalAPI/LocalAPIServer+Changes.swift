import EventLoopIO
import HTTP1
import JSON
import NodePolicy

/// The change feed's side of one HTTP connection: a JSON answer (now, or later for a
/// long-poll), or a stream of server-sent events that lasts until the reader goes away. Any
/// server on a `StreamChannel` can hand one to `ChangeFeedHub` (it calls `closed()` when the
/// channel closes).
final class ChangesSink {
    private weak var channel: StreamChannel?
    private let keepAlive: Bool
    /// The request was `HEAD`: an answer carries its headers only (RFC 9110 9.3.2).
    var omitsBody = false
    /// The server's continuation once a JSON answer is written (the next request may follow).
    private let finished: () -> Void
    private var done = false
    /// Called once when the reader's connection closes.
    var onClose: (() -> Void)?

    init(channel: StreamChannel, keepAlive: Bool, finished: @escaping () -> Void) {
        self.channel = channel
        self.keepAlive = keepAlive
        self.finished = finished
    }

    /// The connection is still there and not yet answered (or still streaming).
    var isOpen: Bool { !done && (channel?.isOpen ?? false) }

    /// Bytes written but not yet taken by the reader.
    var pendingBytes: Int { channel?.pendingBytes ?? 0 }

    /// Answers with a JSON body given as bytes; the connection then serves its next request.
    func answer(_ status: Int, _ body: [UInt8], headers: [(String, String)] = []) {
        guard !done, let channel else { return }
        done = true
        var h = [("Content-Type", "application/json")] + headers
        if !keepAlive { h.append(("Connection", "close")) }
        channel.write(HTTPResponse(status: status, headers: HTTPHeaders(h), body: body + [0x0A]).serialize(omittingBody: omitsBody))
        if keepAlive { finished() } else { channel.closeAfterFlush() }
    }

    /// Answers with a JSON value.
    func answer(_ status: Int, _ body: JSONValue, headers: [(String, String)] = []) {
        answer(status, body.serializedBytes(), headers: headers)
    }

    /// Starts a `text/event-stream` answer: no length, the events follow and the body ends when
    /// the connection closes (RFC 9112 6.3: "the message body length is determined by the number
    /// of octets received by the recipient prior to the server closing the connection").
    func openStream(headers: [(String, String)]) {
        guard !done, let channel else { return }
        var head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\nConnection: close\r\n"
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        head += "\r\n"
        channel.write(Array(head.utf8))
    }

    /// Writes part of a stream.
    func write(_ text: String) {
        guard !done, let channel else { return }
        channel.write(Array(text.utf8))
    }

    /// Ends a stream (the node stops).
    func close() {
        guard !done else { return }
        done = true
        channel?.closeAfterFlush()
    }

    /// The connection closed.
    func closed() {
        done = true
        let c = onClose
        onClose = nil
        c?()
    }
}

extension LocalAPIServer {
    /// Hands a change feed request to the node, or answers its refusal.
    func serveChanges(_ decoded: Result<ChangesRequest, LocalAPIRoute.Failure>, client: APIClientConnection, keepAlive: Bool, head: Bool) {
        let sink = ChangesSink(channel: client.channel, keepAlive: keepAlive) { [weak self, weak client] in
            guard let self, let client else { return }
            client.busy = false
            client.changes = nil
            self.drain(client)
            self.watchDeadline(client)
        }
        sink.omitsBody = head
        client.changes = sink
        switch decoded {
        case .failure(let f):
            let allow = f.status == 405 ? [("Allow", ChangesRequest.allowed)] : []
            sink.answer(f.status, LocalAPIRoute.errorBody(code: f.code, message: f.message), headers: allow)
        case .success(let r):
            if let changesHandler {
                changesHandler(r, sink)
            } else {
                sink.answer(503, LocalAPIRoute.errorBody(code: "starting", message: "node is starting"))
            }
        }
    }
}
