import EventLoopIO
import WebSocket

extension WebSocketChannel {
    /// Bytes from the socket, during the handshake or after it.
    func received(_ bytes: [UInt8]) {
        lastHeard = loop.now
        switch state {
        case .handshaking(let channel):
            handshakeBuffer.append(contentsOf: bytes)
            continueHandshake(on: channel)
        case .open, .closing:
            traffic.bytesIn += bytes.count
            connection.append(bytes)
            drainEvents()
        case .resolving, .closed, .ended:
            // RFC 6455 1.4: after the closing handshake nothing more is meaningful.
            return
        }
    }

    /// Handles every event the bytes appended so far produce, writing each reply in order.
    func drainEvents() {
        var completedMessages = false
        while true {
            let channel: StreamChannel
            switch state {
            case .open(let c), .closing(let c):
                channel = c
            case .resolving, .handshaking, .closed, .ended:
                return
            }
            guard let event = connection.nextEvent() else { break }
            switch event {
            case .text(let text):
                traffic.messagesIn += 1
                completedMessages = true
                if isOpen { onEvent?(.text(text)) }
            case .binary(let bytes):
                traffic.messagesIn += 1
                completedMessages = true
                if !configuration.acceptsBinary {
                    close(code: .unsupportedData, reason: "only text messages are accepted")
                } else if isOpen {
                    onEvent?(.binary(bytes))
                }
            case .send(let bytes):
                traffic.bytesOut += bytes.count
                channel.write(bytes)
            case .ping, .pong:
                // The pong answering a ping is in the `.send` event before `.ping`.
                break
            case .closed(let code, let reason):
                webSocketEnded(channel, Ending(.closed(code: code, reason: reason)))
                return
            case .failed(let error):
                // Our Close frame was in the `.send` event before this one.
                webSocketEnded(channel, Ending(.failed(error)))
                onEvent?(.protocolError(error))
                return
            }
        }
        watchFrameDeadline(restart: completedMessages)
    }

    /// A peer that starts a frame and then stalls (slowloris) is dropped: the frame must be
    /// complete within the frame deadline of its first byte, however slowly bytes trickle in.
    /// The deadline is the started message's: when a message completed in these bytes
    /// (`restart`), the one now started gets a deadline of its own. A steady stream of large
    /// messages read in chunks that each end mid-frame is progress, never a stall.
    func watchFrameDeadline(restart: Bool = false) {
        guard let limit = configuration.frameDeadline else { return }
        if restart, let frameTimer {
            loop.cancel(frameTimer)
            self.frameTimer = nil
        }
        guard connection.isAwaitingRestOfFrame else {
            if let frameTimer {
                loop.cancel(frameTimer)
                self.frameTimer = nil
            }
            return
        }
        guard frameTimer == nil else { return }
        frameTimer = loop.schedule(after: limit) { [self] in
            frameTimer = nil
            switch state {
            case .open(let channel), .closing(let channel):
                // RFC 6455 7.4.1: 1008 "indicates that an endpoint is terminating the connection
                // because it has received a message that violates its policy".
                channel.write(
                    connection.close(
                        code: .policyViolation,
                        reason: "frame not completed within \(limit.wholeMilliseconds) ms"))
                webSocketEnded(channel, Ending(.frameTimedOut(limit)), promptly: true)
            case .resolving, .handshaking, .closed, .ended:
                return
            }
        }
    }

    // MARK: - Heartbeat

    /// Arms the heartbeat check for when the peer will have been silent for the idle interval.
    func startHeartbeat() {
        guard let heartbeat = configuration.heartbeat else { return }
        scheduleHeartbeatCheck(at: lastHeard + heartbeat.idleInterval)
    }

    private func scheduleHeartbeatCheck(at deadline: MonotonicInstant) {
        heartbeatTimer = loop.schedule(after: max(.milliseconds(1), deadline - loop.now)) { [self] in
            heartbeatTimer = nil
            checkHeartbeat()
        }
    }

    /// Past the silence limit the peer is dead; past the idle interval it is pinged (or sent
    /// the owner's heartbeat), again every half interval while it stays silent.
    private func checkHeartbeat() {
        guard case .open(let channel) = state, let heartbeat = configuration.heartbeat else { return }
        let now = loop.now
        let silent = now - lastHeard
        let idle = heartbeat.idleInterval
        let limit = heartbeat.silenceLimit
        if silent >= limit {
            guard toleratesSilence else {
                state = .closed(channel, Ending(.peerSilent(silent)))
                channel.close()
                return
            }
            if toleratedSilenceSince != lastHeard {
                toleratedSilenceSince = lastHeard
                onSilenceTolerated?(silent)
            }
        }
        guard silent >= idle else {
            scheduleHeartbeatCheck(at: lastHeard + idle)
            return
        }
        if (onIdle?() ?? .ping) == .ping {
            ping()
        }
        guard case .open = state else { return }
        let next = now + max(.milliseconds(1), idle / 2)
        scheduleHeartbeatCheck(at: silent >= limit ? next : min(next, lastHeard + limit))
    }
}
