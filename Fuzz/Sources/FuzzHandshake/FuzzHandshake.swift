import WebSocket

// Feeds arbitrary bytes to both sides of the opening handshake and checks what must hold
// whatever a peer sends:
//
// - nothing traps;
// - the server's parser reaches the same decision whether the request arrives at once or in
//   pieces (it is called with the growing buffer, as a socket shell does); a piece may only be
//   refused earlier, never accepted differently;
// - an accepted request is within `maxHandshakeHeaderBytes`, carries a key that decodes to 16
//   bytes, and our own `101` answer to it is accepted by our own client;
// - a refusal is one of the statuses the parser documents, as a well-formed HTTP response;
// - the client's response check gives the same result at once and in pieces, accepts only a
//   subprotocol it offered, and never reads past the head.

/// The RFC 6455 1.3 example key, so the example response in the corpus is accepted.
private let exampleKey = "dGhlIHNhbXBsZSBub25jZQ=="

/// A small header limit derived from the input's hash, so that the 431 path is reachable with
/// short inputs and every head length meets the limit exactly for some input.
private func smallLimits(_ hash: UInt64) -> WebSocketConfiguration {
    WebSocketConfiguration(maxHandshakeHeaderBytes: 1 + Int(((hash &* 0x9E37_79B9_7F4A_7C15) >> 32) % 600))
}

/// libFuzzer's entry point: the input as a client's request and as a server's response.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let hash = fnv1a(input)
    let points = splitPoints(of: input, hash: hash)
    for configuration in [WebSocketConfiguration(), smallLimits(hash)] {
        checkServer(input, points: points, configuration: configuration)
        checkClient(input, points: points, configuration: configuration)
    }
    return 0
}

/// Traps with `message` (libFuzzer records the input as a crash) unless `condition` holds.
private func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() {
        fatalError("fuzz invariant violated: \(message())")
    }
}

/// The FNV-1a hash of the input: the same input always splits and limits the same way.
private func fnv1a(_ input: [UInt8]) -> UInt64 {
    var hash: UInt64 = 0xCBF2_9CE4_8422_2325
    for byte in input {
        hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
    }
    return hash
}

/// Up to three cut points derived from the input's hash.
private func splitPoints(of input: [UInt8], hash: UInt64) -> [Int] {
    guard input.count > 1 else { return [] }
    var points: [Int] = []
    for shift in [0, 21, 42] as [UInt64] {
        points.append(Int((hash >> shift) & 0x1F_FFFF) % input.count)
    }
    return Array(Set(points)).sorted()
}

// MARK: - Server side

/// What a server decided, in a comparable form.
private enum ServerOutcome: Equatable {
    case incomplete
    case accepted(consumed: Int, path: String, host: String, key: String, subprotocols: [String])
    case rejected(status: Int)
}

private func outcome(_ result: ServerHandshakeResult) -> ServerOutcome {
    switch result {
    case .incomplete:
        return .incomplete
    case .accepted(let request, let consumed):
        return .accepted(
            consumed: consumed, path: request.path, host: request.host, key: request.key,
            subprotocols: request.requestedSubprotocols)
    case .rejected(let rejection):
        return .rejected(status: rejection.status)
    }
}

/// Parses the prefixes ending at `points`, then the whole input, with one parser, stopping at
/// the first decision, as a socket shell does.
private func parseInPieces(
    _ input: [UInt8], points: [Int],
    configuration: WebSocketConfiguration
) -> ServerHandshakeResult {
    var parser = ServerHandshakeParser(configuration: configuration)
    for end in points + [input.count] {
        let result = parser.parse(Array(input[0..<end]))
        if case .incomplete = result, end < input.count {
            continue
        }
        return result
    }
    return .incomplete
}

private func checkServer(_ input: [UInt8], points: [Int], configuration: WebSocketConfiguration) {
    var parser = ServerHandshakeParser(configuration: configuration)
    let whole = parser.parse(input)
    let pieces = parseInPieces(input, points: points, configuration: configuration)
    switch (outcome(whole), outcome(pieces)) {
    case (.accepted, _), (_, .accepted), (.incomplete, _), (_, .incomplete):
        require(
            outcome(whole) == outcome(pieces),
            "server decision depends on chunking at \(points): \(outcome(whole)) vs \(outcome(pieces))")
    case (.rejected, .rejected):
        // A request line refused as soon as it is complete may be refused for a different
        // reason than the whole head; both are refusals.
        break
    }
    switch whole {
    case .incomplete:
        require(input.count < configuration.maxHandshakeHeaderBytes, "incomplete past the header limit")
    case .accepted(let request, let consumed):
        require(
            consumed <= input.count && consumed <= configuration.maxHandshakeHeaderBytes,
            "consumed \(consumed) of \(input.count) bytes")
        require(input[consumed - 4..<consumed].elementsEqual([13, 10, 13, 10]), "head does not end with CRLF CRLF")
        require(request.path.hasPrefix("/"), "accepted path \(request.path)")
        require(!request.host.isEmpty, "accepted an empty Host")
        require(
            Set(request.requestedSubprotocols).count == request.requestedSubprotocols.count,
            "accepted duplicate subprotocols")
        checkAnswer(to: request)
    case .rejected(let rejection):
        require([400, 405, 426, 431, 505].contains(rejection.status), "undocumented status \(rejection.status)")
        let response = rejection.bytes
        require(response.starts(with: Array("HTTP/1.1 \(rejection.status) ".utf8)), "malformed rejection")
        require(response.count < 4096, "rejection of \(response.count) bytes")
        if rejection.status == 426 {
            require(
                rejection.headers.contains(.init("Sec-WebSocket-Version", "13")),
                "426 without Sec-WebSocket-Version: 13")
        }
    }
}

/// Our `101` for an accepted request, with and without a subprotocol, must satisfy our client.
private func checkAnswer(to request: HandshakeRequest) {
    let offered = Array(request.requestedSubprotocols.prefix(1))
    for subprotocol in [nil] + offered.map(Optional.some) {
        let response = ServerHandshake.response(for: request, subprotocol: subprotocol)
        var client = ClientHandshake(host: request.host, key: request.key, subprotocols: offered)
        let result = client.parseResponse(response)
        require(
            result == .accepted(subprotocol: subprotocol, consumed: response.count),
            "our client refuses our own 101 for key \(request.key): \(result)")
    }
}

// MARK: - Client side

private func checkClient(_ input: [UInt8], points: [Int], configuration: WebSocketConfiguration) {
    let offered = ["ordersync.v1", "chat"]
    var client = ClientHandshake(
        host: "127.0.0.1:8080", key: exampleKey, subprotocols: offered,
        configuration: configuration)
    let whole = client.parseResponse(input)

    var pieces = ClientHandshake(
        host: "127.0.0.1:8080", key: exampleKey, subprotocols: offered,
        configuration: configuration)
    var inPieces = ClientHandshakeResult.incomplete
    for end in points + [input.count] {
        inPieces = pieces.parseResponse(Array(input[0..<end]))
        if case .incomplete = inPieces, end < input.count {
            continue
        }
        break
    }
    require(whole == inPieces, "client result depends on chunking at \(points): \(whole) vs \(inPieces)")

    switch whole {
    case .incomplete:
        require(input.count < configuration.maxHandshakeHeaderBytes, "incomplete past the header limit")
    case .accepted(let subprotocol, let consumed):
        require(
            consumed <= input.count && consumed <= configuration.maxHandshakeHeaderBytes,
            "consumed \(consumed) of \(input.count) bytes")
        require(input[consumed - 4..<consumed].elementsEqual([13, 10, 13, 10]), "head does not end with CRLF CRLF")
        require(subprotocol.map(offered.contains) ?? true, "accepted subprotocol \(subprotocol ?? "")")
    case .failed(let error):
        require(error.code == .handshakeFailed || error.code == .handshakeTooLarge, "unexpected \(error)")
    }
}
