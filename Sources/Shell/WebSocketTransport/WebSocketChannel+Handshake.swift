import EventLoopIO
import WebSocket

extension WebSocketChannel {
    // MARK: - Starting

    /// Serves the opening handshake on an accepted TCP connection. `decide` gets each valid
    /// request and accepts it (choosing a subprotocol) or rejects it; invalid requests get the
    /// parser's HTTP error without asking. Either error is written and TCP then closed.
    public static func accept(
        _ socket: Socket, loop: EventLoop, configuration: WebSocketChannelConfiguration,
        decide: @escaping (HandshakeRequest) -> HandshakeDecision
    ) throws -> WebSocketChannel {
        // Small messages go out at once: Nagle's algorithm with delayed ACKs would hold each
        // one back for tens of milliseconds.
        try? socket.setNoDelay(true)
        let channel = try StreamChannel(socket: socket, loop: loop)
        let webSocket = WebSocketChannel(
            loop: loop, role: .server,
            handshake: .server(ServerHandshakeParser(configuration: configuration.limits), decide: decide),
            state: .handshaking(channel), configuration: configuration)
        webSocket.attach(channel)
        webSocket.startHandshakeDeadline()
        return webSocket
    }

    /// Connects to `host` (an address, or a name looked up on a thread of its own so that a slow
    /// DNS server does not stall the loop) and `port`, and sends the opening request for `path`
    /// offering `subprotocols`. The handshake deadline covers the lookup, the connect and the
    /// handshake.
    public static func connect(
        host: String, port: UInt16, path: String = "/", subprotocols: [String] = [],
        loop: EventLoop, configuration: WebSocketChannelConfiguration
    ) -> WebSocketChannel {
        // RFC 7230 5.4: Host is "the authority component of the target URI".
        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        let handshake = ClientHandshake(
            host: authority, path: path, key: ClientHandshake.makeKey(),
            subprotocols: subprotocols, configuration: configuration.limits)
        let webSocket = WebSocketChannel(
            loop: loop, role: .client, handshake: .client(handshake),
            state: .resolving, configuration: configuration)
        webSocket.startHandshakeDeadline()
        if HostResolver.isNumeric(host) {
            webSocket.connect(toAddress: host, port: port)
        } else {
            // The lookup runs on a thread of its own; the answer comes back on the loop.
            let bound = LoopBound(webSocket, loop: loop)
            HostResolver.resolve(host: host, port: port, on: loop) { result in
                let webSocket = bound.value
                guard case .resolving = webSocket.state else { return }
                switch result {
                case .success(let addresses):
                    guard let first = addresses.first else {
                        webSocket.finish(
                            Ending(
                                .unreachable(
                                    PosixError(call: "getaddrinfo", errno: 0, detail: "no address for \(host)"))))
                        return
                    }
                    webSocket.connect(toAddress: first, port: port)
                case .failure(let error):
                    webSocket.finish(Ending(.unreachable(error)))
                }
            }
        }
        return webSocket
    }

    private func connect(toAddress address: String, port: UInt16) {
        guard case .client(let clientHandshake) = handshake else {
            preconditionFailure("connect on a server-side channel")
        }
        do {
            let socket = try TCPSocket.connect(host: address, port: port)
            try? socket.setNoDelay(true)
            let channel = try StreamChannel.connecting(socket, loop: loop) { _ in }
            state = .handshaking(channel)
            attach(channel)
            // Written once connected: the channel buffers writes made while connecting.
            channel.write(clientHandshake.requestBytes)
        } catch let error as PosixError {
            finish(Ending(.unreachable(error)))
        } catch {
            preconditionFailure("unexpected error \(error)")
        }
    }

    private func startHandshakeDeadline() {
        let limit = configuration.handshakeDeadline
        phaseTimer = loop.schedule(after: limit) { [self] in
            phaseTimer = nil
            switch state {
            case .resolving:
                finish(Ending(.handshakeTimedOut(limit)))
            case .handshaking(let channel):
                state = .closed(channel, Ending(.handshakeTimedOut(limit)))
                channel.close()
            case .open, .closing, .closed, .ended:
                return
            }
        }
    }

    // MARK: - The opening handshake

    func continueHandshake(on channel: StreamChannel) {
        switch handshake {
        case .server(var parser, let decide):
            let result = parser.parse(handshakeBuffer)
            handshake = .server(parser, decide: decide)
            switch result {
            case .incomplete:
                return
            case .rejected(let rejection):
                reject(rejection, on: channel)
            case .accepted(let request, let consumed):
                switch decide(request) {
                case .reject(let rejection):
                    reject(rejection, on: channel)
                case .accept(let subprotocol):
                    // RFC 6455 4.2.2: no Sec-WebSocket-Extensions is sent, so an offered
                    // permessage-deflate is declined and frames with RSV1 set stay a protocol
                    // error.
                    channel.write(ServerHandshake.response(for: request, subprotocol: subprotocol))
                    opened(Opening(subprotocol: subprotocol, request: request), on: channel, consumed: consumed)
                }
            }
        case .client(var clientHandshake):
            let result = clientHandshake.parseResponse(handshakeBuffer)
            handshake = .client(clientHandshake)
            switch result {
            case .incomplete:
                return
            case .failed(let error):
                // RFC 6455 4.1: "the client MUST _Fail the WebSocket Connection_".
                state = .closed(channel, Ending(.handshakeFailed(error)))
                channel.close()
            case .accepted(let subprotocol, let consumed):
                opened(Opening(subprotocol: subprotocol, request: nil), on: channel, consumed: consumed)
            }
        }
    }

    /// The error response is the only thing written: no `101` precedes it.
    private func reject(_ rejection: HTTPRejection, on channel: StreamChannel) {
        state = .closed(channel, Ending(.rejected(rejection)))
        cancelPhaseTimer()
        // What was read (up to one read past the head limit) is not kept while the answer
        // drains to a peer that may not read it.
        handshakeBuffer = []
        channel.write(rejection.bytes)
        channel.closeAfterFlush()
    }

    /// Switches to frames; bytes that followed the handshake in the same reads are frames the
    /// peer pipelined, and are parsed at once.
    private func opened(_ opening: Opening, on channel: StreamChannel, consumed: Int) {
        state = .open(channel)
        cancelPhaseTimer()
        let pipelined = Array(handshakeBuffer[consumed...])
        handshakeBuffer = []
        startHeartbeat()
        onEvent?(.opened(opening))
        guard !pipelined.isEmpty else { return }
        switch state {
        case .open, .closing:
            connection.append(pipelined)
            drainEvents()
        case .resolving, .handshaking, .closed, .ended:
            return
        }
    }
}
