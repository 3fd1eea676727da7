import HTTP1

// Feeds arbitrary bytes to the HTTP/1.1 request parser that reads what LAN peers send to the
// dashboard and the metrics listener (`HTTPListener`), and the local API, and checks what must
// hold whatever they send:
//
// - nothing traps;
// - the requests and the error are the same whether the bytes arrive at once, in pieces cut at
//   input-derived points, or byte by byte, and through `append`/`nextRequest` as through
//   `parse` on a buffer of one's own;
// - a request takes no more bytes than it was given, its head stays within the header limit,
//   its body is exactly `Content-Length` bytes of the input, its method and target are not
//   empty and its parsed path starts with `/` (origin or absolute form) or is `*`;
// - an error is one of the statuses the parser documents (400, 413, 431, 501, 505), and it sticks:
//   the parser throws it again on any later call.

/// libFuzzer's entry point: the input as bytes a client sent on one connection.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let hash = fnv1a(input)
    let points = splitPoints(of: input, hash: hash)
    let small = HTTPRequestParser.Limits(
        maxHeaderBytes: 1 + Int((hash >> 8) % 300), maxBodyBytes: Int((hash >> 24) % 64))
    for limits in [HTTPRequestParser.Limits(), small] {
        for strictness in [HTTPHeadStrictness.lenient, .strict] {
            check(input, points: points, limits: limits, strictness: strictness)
        }
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

/// A request in a comparable form.
private struct Seen: Equatable {
    var method: String
    var target: String
    var path: String
    var query: [String]
    var version: String
    var headers: [String]
    var body: [UInt8]
    var keepAlive: Bool

    init(_ request: HTTPRequest) {
        method = request.method
        target = request.target
        path = request.path
        query = request.query.map { "\($0.0)=\($0.1)" }
        version = "\(request.version.major).\(request.version.minor)"
        headers = request.headers.map { "\($0.name): \($0.value)" }
        body = request.body
        keepAlive = request.keepAlive
    }
}

/// What one connection's bytes gave: the requests in order, then the error if any.
private struct Outcome: Equatable {
    var requests: [Seen] = []
    var error: HTTPError?
}

/// Appends the input in pieces ending at `ends` and takes every request after each piece.
private func viaAppend(
    _ input: [UInt8], ends: [Int], limits: HTTPRequestParser.Limits, strictness: HTTPHeadStrictness
) -> Outcome {
    var parser = HTTPRequestParser(limits: limits, strictness: strictness)
    var outcome = Outcome()
    var start = 0
    for end in ends where end > start {
        parser.append(Array(input[start..<end]))
        start = end
        do {
            while let request = try parser.nextRequest() {
                outcome.requests.append(Seen(request))
            }
        } catch {
            outcome.error = error as? HTTPError
            require(outcome.error != nil, "threw \(error), not an HTTPError")
            do {
                _ = try parser.nextRequest()
                require(false, "the error \(error) did not stick")
            } catch {
                require(error as? HTTPError == outcome.error, "a second error \(error) after \(outcome.error!)")
            }
            return outcome
        }
    }
    require(parser.bufferedByteCount <= input.count, "\(parser.bufferedByteCount) bytes buffered of \(input.count)")
    return outcome
}

/// Calls `parse` on the whole input, dropping what each request consumed, and checks each one
/// against the bytes it came from.
private func viaParse(_ input: [UInt8], limits: HTTPRequestParser.Limits, strictness: HTTPHeadStrictness) -> Outcome {
    var parser = HTTPRequestParser(limits: limits, strictness: strictness)
    var outcome = Outcome()
    var start = 0
    while true {
        let result: HTTPRequestParser.Result
        do {
            result = try parser.parse(input[start...])
        } catch {
            outcome.error = error as? HTTPError
            return outcome
        }
        guard case .request(let request, let consumed) = result else {
            return outcome
        }
        require(consumed > 0 && consumed <= input.count - start, "consumed \(consumed) of \(input.count - start) bytes")
        let head = consumed - request.body.count
        require(head > 0 && head <= limits.maxHeaderBytes, "a head of \(head) bytes (limit \(limits.maxHeaderBytes))")
        require(request.body.count <= limits.maxBodyBytes, "a body of \(request.body.count) bytes")
        require(
            request.body.elementsEqual(input[(start + head)..<(start + consumed)]),
            "the body is not the bytes after the head")
        // RFC 9110 8.6: a list of identical values may be accepted as that one value.
        let lengths = request.headers.listElements("Content-Length")
        require(
            request.body.isEmpty || lengths.allSatisfy { Int($0) == request.body.count },
            "a body of \(request.body.count) bytes under Content-Length \(lengths)")
        require(!request.method.isEmpty && !request.target.isEmpty, "an empty method or target")
        require(
            request.path.hasPrefix("/") || (request.path == "*" && request.target == "*"),
            "a path \(request.path) for the target \(request.target)")
        require(request.version.major == 1, "HTTP/\(request.version.major) accepted")
        outcome.requests.append(Seen(request))
        start += consumed
    }
}

private func check(
    _ input: [UInt8], points: [Int], limits: HTTPRequestParser.Limits, strictness: HTTPHeadStrictness
) {
    let whole = viaParse(input, limits: limits, strictness: strictness)
    if let error = whole.error {
        require([400, 413, 431, 501, 505].contains(error.status), "undocumented status \(error)")
    }
    let once = viaAppend(input, ends: [input.count], limits: limits, strictness: strictness)
    require(once == whole, "append/nextRequest differs from parse: \(once) vs \(whole)")
    let pieces = viaAppend(input, ends: points + [input.count], limits: limits, strictness: strictness)
    require(pieces == whole, "pieces cut at \(points) differ: \(pieces) vs \(whole)")
    if !input.isEmpty && input.count <= 512 {
        let bytes = viaAppend(input, ends: Array(1...input.count), limits: limits, strictness: strictness)
        require(bytes == whole, "byte by byte differs: \(bytes) vs \(whole)")
    }
}
