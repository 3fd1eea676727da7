import EventLoopIO
import WebSocket
import WebSocketTransport

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
        open(
            path: "/getCaseCount", echoes: false,
            onText: { text in
                count = Int(text)
            },
            onFinish: { [self] ending in
                guard let count, count >= 0 else {
                    finish(.failure(EchoError("getCaseCount returned no count (\(ending))")))
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
        open(
            path: "/runCase?case=\(number)&agent=\(agent)", echoes: true,
            onFinish: { [self] ending in
                switch ending.cause {
                case .handshakeFailed, .handshakeTimedOut, .unreachable:
                    summary.unreachableCases.append((number, "\(ending)"))
                case .dropped(.error(let error)) where error.call == "connect":
                    summary.unreachableCases.append((number, "\(ending)"))
                case .closed, .failed, .dropped, .rejected, .frameTimedOut, .closeTimedOut, .peerSilent, .aborted:
                    // Whatever the case did to the connection is for the fuzzing server to judge.
                    break
                }
                runCase(number + 1)
            })
    }

    /// Reports are written once the server saw the handshake; kosoku then drops the TCP
    /// connection without a closing handshake, the original fuzzing server answers our Close.
    private func updateReports() {
        var opened = false
        let webSocket = open(
            path: "/updateReports?agent=\(agent)", echoes: false,
            onFinish: { [self] ending in
                summary.updateOutcome = "\(ending)"
                switch ending.cause {
                case .closed, .dropped(.endOfFile):
                    summary.reportsUpdated = opened
                default:
                    summary.reportsUpdated = false
                }
                finish(.success(summary))
            })
        let report = webSocket.onEvent
        webSocket.onEvent = { [unowned webSocket] event in
            if case .opened = event {
                opened = true
                webSocket.close()
            }
            report?(event)
        }
    }

    /// Opens one connection; its end, however early, is reported through `onFinish`.
    @discardableResult
    private func open(
        path: String, echoes: Bool, onText: ((String) -> Void)? = nil,
        onFinish: @escaping (WebSocketChannel.Ending) -> Void
    ) -> WebSocketChannel {
        let webSocket = WebSocketChannel.connect(
            host: host, port: port, path: path, loop: loop,
            configuration: EchoServer.channelConfiguration(configuration))
        webSocket.onEvent = { [unowned webSocket] event in
            switch event {
            case .text(let text):
                if echoes { EchoServer.echo(event, on: webSocket) }
                onText?(text)
            case .binary:
                if echoes { EchoServer.echo(event, on: webSocket) }
            case .ended(let ending):
                onFinish(ending)
            case .opened, .protocolError:
                break
            }
        }
        return webSocket
    }

    private func finish(_ result: Result<Summary, EchoError>) {
        let callback = completion
        completion = nil
        callback?(result)
    }
}
