import EventLoopIO
import Glibc
import WebSocket

// ordersync-wsecho: a WebSocket echo server and an Autobahn fuzzing-server client built from
// the daemon's own WebSocket transport (modules WebSocket, WebSocketTransport, EventLoopIO), for conformance runs (Scripts/conformance.py).

/// Writes one line to standard error.
func printError(_ line: String) {
    writeToStandardError("ordersync-wsecho: \(line)\n")
}

/// Writes `text` to file descriptor 2 unbuffered (the C `stderr` global is shared mutable state
/// to Swift 6).
func writeToStandardError(_ text: String) {
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
        guard written > 0 else { return }
        offset += written
    }
}

/// Runs `command` on a fresh event loop until it is done (client) or SIGINT/SIGTERM (server);
/// returns the process exit status.
func run(_ command: EchoCommand) throws -> Int32 {
    try Signals.block([SIGINT, SIGTERM])
    Signals.ignoreBrokenPipe()
    let loop = try EventLoop()
    try loop.onSignal([SIGINT, SIGTERM]) { _ in loop.stop() }
    switch command {
    case .server(let host, let port, let configuration):
        let server = try EchoServer(host: host, port: port, limits: configuration, loop: loop)
        // Scripts wait for this line instead of sleeping.
        print("listening \(server.port)")
        fflush(nil)
        loop.run()
        server.close()
        return 0
    case .client(let host, let port, let agent, let configuration):
        let client = AutobahnClient(loop: loop, host: host, port: port, agent: agent, configuration: configuration)
        var status: Int32 = 1
        client.start { result in
            switch result {
            case .success(let summary):
                print(
                    "ran \(summary.caseCount) cases; /updateReports \(summary.reportsUpdated ? "done" : "FAILED"): \(summary.updateOutcome)"
                )
                for (number, reason) in summary.unreachableCases {
                    printError("case \(number) did not start: \(reason)")
                }
                status = summary.unreachableCases.isEmpty && summary.reportsUpdated ? 0 : 1
            case .failure(let error):
                printError("\(error)")
            }
            loop.stop()
        }
        loop.run()
        return status
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--help" || arguments.first == "-h" {
    print(EchoCommand.usage)
    exit(0)
}
do {
    let command = try EchoCommand.parse(arguments)
    exit(try run(command))
} catch let error as EchoError {
    printError("\(error)")
    writeToStandardError(EchoCommand.usage + "\n")
    exit(64)
} catch {
    printError("\(error)")
    exit(1)
}
