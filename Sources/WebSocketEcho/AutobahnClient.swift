import Posix
import WebSocket

/// Drives the Autobahn fuzzing server's client protocol with the project's WebSocket client:
/// `/getCaseCount` (the server sends the count as a text message), then one connection per
/// case on `/runCase?case=N&agent=A` echoing every message until the server closes, then
/// `/updateReports?agent=A`. Connections run one after another on one event loop.
final class AutobahnClient {
    /// The outcome of a whole run.
    struct Summary {
        /// The number of cases the server announced.
        var caseCount = 0
        /// Cases whose connection or opening handshake failed, with the reason.
        var unreachableCases: [(Int, String)] = []
        /// Whether the final `/updateReports` connection was accepted and ended normally.
        var reportsUpdated = false
        /// How the `/updateReports` connection ended.
        var updateOutcome = ""
    }

    let loop: EventLoop
    let host: String
    let port: UInt16
    let agent: String
    let configuration: WebSocketConfiguration

    private var summary = Summary()
    private var completion: ((Result<Summary, EchoError>) -> Void)?

    /// Prepares a run against the fuzzing server at `host:port`, reporting as `agent`.
    init(loop: EventLoop, host: String, port: UInt16, agent: String, configuration: WebSocketConfiguration) {
        self.loop = loop
        self.host = host
        self.port = port
        self.agent = agent
        self.configuration = configuration
    }

    /// Starts the run; `completion` is called once, on the loop thread.
    func start(completion: @escaping (Result<Summary, EchoError>) -> Void) {
        self.completion = completion
        fetchCaseCount()
    }

    private func fetchCaseCount() {
        var count: Int?
        open(path: "/getCaseCount", echoes: false, onText: { text in
            count = Int(text)
        }, onFinish: { [self] outcome in
            guard let count, count >= 0 else {
                finish(.failure(EchoError("getCaseCount returned no count (\(describe(outcome)))")))
                return
            }
            summary.caseCount = count
            runCase(1)
        })
    }

    private func runCase(_ number: Int) {
        guard number <= summary.caseCount else {
            updateReports()
            return
        }
        open(path: "/runCase?case=\(number)&agent=\(agent)", echoes: true, onFinish: { [self] outcome in
            switch outcome {
            case .handshakeFailed, .handshakeTimedOut, .rejected:
                summary.unreachableCases.append((number, describe(outcome)))
            case .dropped(.error(let error)) where error.call == "connect":
                summary.unreachableCases.append((number, describe(outcome)))
            case .closed, .failed, .dropped:
                // Whatever the case did to the connection is for the fuzzing server to judge.
                break
            }
            runCase(number + 1)
        })
    }

    /// Reports are written once the server saw the handshake; kosoku then drops the TCP
    /// connection without a closing handshake, the original fuzzing server answers our Close.
    private func updateReports() {
        var session: EchoSession?
        var opened = false
        session = open(path: "/updateReports?agent=\(agent)", echoes: false, onOpen: {
            opened = true
            session?.close()
        }, onFinish: { [self] outcome in
            session = nil
            summary.updateOutcome = describe(outcome)
            switch outcome {
            case .closed, .dropped(.endOfFile):
                summary.reportsUpdated = opened
            case .failed, .rejected, .handshakeFailed, .handshakeTimedOut, .dropped:
                summary.reportsUpdated = false
            }
            finish(.success(summary))
        })
    }

    /// Opens one connection; a failure to even start it is reported through `onFinish`.
    @discardableResult
    private func open(path: String, echoes: Bool, onOpen: (() -> Void)? = nil,
                      onText: ((String) -> Void)? = nil,
                      onFinish: @escaping (EchoSession.Outcome) -> Void) -> EchoSession? {
        let channel: StreamChannel
        do {
            let socket = try TCPSocket.connect(host: host, port: port)
            try socket.setNoDelay(true)
            channel = try StreamChannel.connecting(socket, loop: loop) { _ in }
        } catch let error as PosixError {
            loop.runSoon { onFinish(.dropped(.error(error))) }
            return nil
        } catch {
            preconditionFailure("unexpected error \(error)")
        }
        channel.maxReadBytes = 256 << 10
        channel.maxPendingBytes = configuration.maxMessageSize * 2 + (1 << 20)
        let session = EchoSession.connect(channel, host: authority, path: path,
                                          configuration: configuration, echoes: echoes)
        session.onOpen = onOpen
        session.onText = onText
        session.onFinish = onFinish
        return session
    }

    /// The `Host` header value: RFC 7230 5.4, "the authority component of the target URI".
    private var authority: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    private func describe(_ outcome: EchoSession.Outcome) -> String {
        switch outcome {
        case .closed(let code, let reason):
            return "closed with \(code.map { String($0.rawValue) } ?? "no code") \(reason)"
        case .failed(let error), .handshakeFailed(let error):
            return "\(error)"
        case .rejected(let rejection):
            return "\(rejection)"
        case .handshakeTimedOut:
            return "opening handshake timed out"
        case .dropped(let reason):
            return "\(reason)"
        }
    }

    private func finish(_ result: Result<Summary, EchoError>) {
        let callback = completion
        completion = nil
        callback?(result)
    }
}
