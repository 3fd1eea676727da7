// swift-tools-version:6.0
import PackageDescription

// The folders follow the architecture (Docs/ARCHITECTURE.md):
//   Sources/Core      pure modules: bytes or events in, values or actions out; no I/O
//   Sources/Shell     the I/O shell: event loop and sockets, the WebSocket transport, SQLite,
//                     Avahi, and the C libraries each of them alone wraps
//   Sources/Node      the master and slave nodes that wire core and shell together, local API
//   Sources/Programs  the executables: the `ordersync` CLI and the test peers
/// -O for a debug build's module (the release build optimizes everything already).
let optimizedInDebug: [SwiftSetting] = [.unsafeFlags(["-O"], .when(configuration: .debug))]

let package = Package(
    name: "OrderSync",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "ordersync", targets: ["ordersync"]),
        .executable(name: "ordersync-wsecho", targets: ["WebSocketEcho"]),
        .executable(name: "ordersync-noise-peer", targets: ["NoisePeer"]),
        .executable(name: "ordersync-qr", targets: ["QRDump"]),
        .executable(name: "ordersync-microbench", targets: ["MicroBench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // MARK: Core: pure modules, no sockets, clocks, SQLite or Avahi.
        // JSON and SyncCore are optimized (-O) in debug builds too: unoptimized, their generic
        // code spends most of the deterministic simulation's time in the Swift runtime (retain,
        // release, generic metadata lookups). They hold no `assert` (only preconditions, which -O
        // keeps); see Docs/TESTING.md, "How a run is laid out".
        .target(name: "JSON", path: "Sources/Core/JSON", swiftSettings: optimizedInDebug),
        .target(name: "HTTP1", path: "Sources/Core/HTTP1"),
        // SHA-1, SHA-256, HMAC-SHA256, HKDF-SHA256, X25519 and random bytes over OpenSSL's
        // libcrypto: pure computation on byte arrays, the product's one set of primitives.
        .target(name: "CryptoPrimitives", dependencies: ["COpenSSL"], path: "Sources/Core/CryptoPrimitives"),
        .target(name: "WebSocket", dependencies: ["HTTP1", "CryptoPrimitives"], path: "Sources/Core/WebSocket"),
        // The Noise Protocol Framework (25519, ChaChaPoly, SHA256): handshake and transport; the
        // cipher on OpenSSL (`NoiseChaChaPoly`, a context per key), the rest on CryptoPrimitives.
        .target(name: "Noise", dependencies: ["COpenSSL", "CryptoPrimitives"], path: "Sources/Core/Noise"),
        // The secure link: XXpsk3 pairing and IK handshakes, transport framing, pairing codes.
        .target(name: "SecureLink", dependencies: ["Noise", "CryptoPrimitives"], path: "Sources/Core/SecureLink"),
        .target(name: "SyncCore", dependencies: ["JSON"], path: "Sources/Core/SyncCore", swiftSettings: optimizedInDebug),
        // The roll-up into head office's PostgreSQL: entry and rolling hashes, batch planning,
        // the roll-up's state machine, verify's comparison.
        .target(name: "RollupCore", dependencies: ["JSON", "CryptoPrimitives"], path: "Sources/Core/RollupCore"),
        // QR codes (ISO/IEC 18004) for the pairing code in the terminal.
        .target(name: "QRCode", path: "Sources/Core/QRCode"),
        // The node's pure rules: local API routes and HTTP conventions, pairing windows, HTTP
        // listener admission, address ranges, trust, master candidates, status and health; the
        // node feeds them requests, addresses, discovery events and times.
        .target(
            name: "NodePolicy",
            dependencies: ["JSON", "HTTP1", "SyncCore", "SecureLink", "CryptoPrimitives"],
            path: "Sources/Core/NodePolicy"),

        // MARK: Shell: I/O, each C library wrapped by exactly one Swift module.
        // The Linux-only calls (epoll, eventfd, signalfd, accept4) with the kernel's structures.
        .target(name: "CLinux", path: "Sources/Shell/CLinux"),
        .systemLibrary(
            name: "CAvahi", path: "Sources/Shell/CAvahi",
            providers: [.apt(["libavahi-client-dev"])]),
        .systemLibrary(
            name: "CSQLite3", path: "Sources/Shell/CSQLite3", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "COpenSSL", path: "Sources/Shell/COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CLibPQ", path: "Sources/Shell/CLibPQ", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]),
        // A PostgreSQL connection (libpq, wrapped here alone): deadlines, keepalives, parameters.
        .target(name: "PostgresClient", dependencies: ["CLibPQ"], path: "Sources/Shell/PostgresClient"),
        // The epoll event loop, timers, signals and sockets.
        .target(name: "EventLoopIO", dependencies: ["CLinux"], path: "Sources/Shell/EventLoopIO"),
        // The one socket shell around the WebSocket state machines, for the daemon and the test peer.
        .target(
            name: "WebSocketTransport", dependencies: ["WebSocket", "EventLoopIO"],
            path: "Sources/Shell/WebSocketTransport"),
        .target(name: "OrderStore", dependencies: ["CSQLite3", "JSON", "SyncCore"], path: "Sources/Shell/OrderStore"),
        .target(name: "Discovery", dependencies: ["CAvahi", "EventLoopIO"], path: "Sources/Shell/Discovery"),
        // TLS for the dashboard: a self-signed certificate, and TLS sessions over memory buffers
        // that a `StreamChannel` drives on the loop (OpenSSL, wrapped here alone).
        .target(name: "TLS", dependencies: ["COpenSSL", "EventLoopIO"], path: "Sources/Shell/TLS"),

        // MARK: Node: a running master or slave, and the local API.
        .target(
            name: "OrderSyncNode",
            dependencies: [
                "WebSocket", "WebSocketTransport", "HTTP1", "JSON", "SyncCore", "EventLoopIO", "OrderStore", "Discovery",
                "Noise", "SecureLink", "TLS", "NodePolicy", "RollupCore", "PostgresClient",
                "CryptoPrimitives", .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ], path: "Sources/Node/OrderSyncNode",
            // The dashboard's page, as `PackageResources.dashboard_html` (`_css`, `_js`) bytes.
            resources: [
                .embedInCode("Dashboard/Assets/dashboard.html"), .embedInCode("Dashboard/Assets/dashboard.css"),
                .embedInCode("Dashboard/Assets/dashboard.js"),
            ]),

        // MARK: Programs
        .executableTarget(
            name: "ordersync",
            dependencies: [
                "OrderSyncNode", "OrderStore", "JSON", "SyncCore", "QRCode", "SecureLink", "NodePolicy",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ], path: "Sources/Programs/ordersync"),
        // Test peer: an echo server and an Autobahn client on the daemon's WebSocket transport
        // (conformance runs with kosoku).
        .executableTarget(
            name: "WebSocketEcho", dependencies: ["WebSocket", "WebSocketTransport", "EventLoopIO"],
            path: "Sources/Programs/WebSocketEcho"),
        // Test peer: the Noise module (and the SecureLink framing on it) driven over stdin/stdout, for
        // interop with Python's `noiseprotocol` (Tests/noise).
        .executableTarget(name: "NoisePeer", dependencies: ["Noise", "SecureLink"], path: "Sources/Programs/NoisePeer"),
        // Test peer: prints the QRCode module's matrix, for comparison with Python's `segno`
        // (Tests/conformance/test_qrcode_segno.py).
        .executableTarget(name: "QRDump", dependencies: ["QRCode"], path: "Sources/Programs/QRDump"),
        // Benchmark: the hot path's steps one at a time, for instruction counts under callgrind
        // and allocation counts (Scripts/callgrind.sh, Docs/PERFORMANCE.md). The counting
        // allocator is linked into this program only.
        .target(
            name: "MicroBenchCases", dependencies: ["JSON", "SyncCore", "OrderStore", "WebSocket"],
            path: "Sources/Programs/MicroBenchCases"),
        .target(name: "CMallocCounter", path: "Sources/Programs/CMallocCounter"),
        .executableTarget(
            name: "MicroBench", dependencies: ["MicroBenchCases", "CMallocCounter"], path: "Sources/Programs/MicroBench"),

        // MARK: Tests
        // A fault-injecting SQLite VFS (power cuts that drop or tear unsynced writes, EIO and
        // ENOSPC on chosen calls) and its Swift face, for test targets only: no product links it.
        .target(name: "CFaultVFS", path: "Tests/CFaultVFS", linkerSettings: [.linkedLibrary("sqlite3")]),
        .target(name: "FaultVFS", dependencies: ["CFaultVFS"], path: "Tests/FaultVFS"),
        // CI mode (the `CI` variable) read one way by every test target that skips or fails.
        .target(name: "CIMode", path: "Tests/CIMode"),
        // Tests read and write the engines' messages (UTF-8 bytes) as text.
        .target(name: "WireTestSupport", dependencies: ["SyncCore"], path: "Tests/WireTestSupport"),
        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
        .testTarget(name: "HTTP1Tests", dependencies: ["HTTP1"]),
        .testTarget(name: "WebSocketTests", dependencies: ["WebSocket", "HTTP1"]),
        .testTarget(name: "CryptoPrimitivesTests", dependencies: ["CryptoPrimitives"]),
        .testTarget(name: "NoiseTests", dependencies: ["Noise", "CryptoPrimitives"], resources: [.copy("Resources")]),
        .testTarget(name: "SecureLinkTests", dependencies: ["SecureLink", "Noise", "WebSocket"]),
        .testTarget(name: "SyncCoreTests", dependencies: ["JSON", "SyncCore", "WireTestSupport"]),
        .testTarget(name: "QRCodeTests", dependencies: ["QRCode"]),
        .testTarget(name: "RollupCoreTests", dependencies: ["RollupCore", "JSON"]),
        .testTarget(name: "NodePolicyTests", dependencies: ["NodePolicy", "JSON", "HTTP1", "SyncCore", "SecureLink"]),
        // The deterministic simulation of a whole store: master and slave engines over an
        // in-memory network and in-memory (or in-memory SQLite) stores, with faults, many seeds.
        .testTarget(
            name: "SyncSimulationTests", dependencies: ["JSON", "SyncCore", "OrderStore", "FaultVFS", "CIMode", "WireTestSupport"]),
        // HTTP1 only for the request/response round trip over a Unix socket.
        .testTarget(name: "EventLoopIOTests", dependencies: ["EventLoopIO", "HTTP1", "CIMode"]),
        .testTarget(name: "WebSocketTransportTests", dependencies: ["WebSocketTransport", "WebSocket", "EventLoopIO"]),
        .testTarget(name: "OrderStoreTests", dependencies: ["OrderStore", "JSON", "SyncCore", "FaultVFS", "WireTestSupport"]),
        .testTarget(name: "DiscoveryTests", dependencies: ["Discovery", "CIMode"]),
        .testTarget(name: "TLSTests", dependencies: ["TLS", "EventLoopIO"]),
        .testTarget(name: "MicroBenchTests", dependencies: ["MicroBenchCases"]),
        .testTarget(
            name: "OrderSyncNodeTests",
            dependencies: [
                "OrderSyncNode", "JSON", "SyncCore", "EventLoopIO", "OrderStore", "Discovery",
                "Noise", "SecureLink", "WebSocket", "WebSocketTransport", "FaultVFS", "CIMode", "NodePolicy",
                "WireTestSupport", "PostgresClient", "RollupCore", "CryptoPrimitives",
            ]),
        .testTarget(name: "OrderSyncCLITests", dependencies: ["ordersync", "OrderSyncNode", "OrderStore", "NodePolicy"]),
    ],
    swiftLanguageModes: [.v6]
)
