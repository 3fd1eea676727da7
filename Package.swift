// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "OrderSync",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "ordersync", targets: ["ordersync"]),
        .executable(name: "ordersync-wsecho", targets: ["WebSocketEcho"]),
        .executable(name: "ordersync-noise-peer", targets: ["NoisePeer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"4.0.0"),
    ],
    targets: [
        // C libraries, each wrapped by exactly one Swift module.
        .systemLibrary(name: "CAvahi", path: "Sources/CAvahi", pkgConfig: "avahi-client",
                       providers: [.apt(["libavahi-client-dev"])]),
        .systemLibrary(name: "CSQLite3", path: "Sources/CSQLite3", pkgConfig: "sqlite3",
                       providers: [.apt(["libsqlite3-dev"])]),
        // The Linux-only calls (epoll, eventfd, signalfd, accept4) with the kernel's structures.
        .target(name: "CLinux", path: "Sources/CLinux"),

        // Pure modules: no sockets, clocks, SQLite or Avahi.
        .target(name: "WebSocket", dependencies: ["HTTP1", .product(name: "Crypto", package: "swift-crypto")]),
        .target(name: "HTTP1"),
        .target(name: "JSON"),
        .target(name: "SyncCore", dependencies: ["JSON"]),
        // The Noise Protocol Framework (25519, ChaChaPoly, SHA256): handshake and transport.
        .target(name: "Noise", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),

        // I/O modules.
        .target(name: "Posix", dependencies: ["CLinux"]),
        // The one socket shell around the WebSocket state machines, for the daemon and the test peer.
        .target(name: "WebSocketTransport", dependencies: ["WebSocket", "Posix"]),
        .target(name: "OrderStore", dependencies: ["CSQLite3", "JSON", "SyncCore"]),
        .target(name: "Discovery", dependencies: ["CAvahi"]),
        .target(name: "OrderSyncNode", dependencies: [
            "WebSocket", "WebSocketTransport", "HTTP1", "JSON", "SyncCore", "Posix", "OrderStore", "Discovery",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(name: "ordersync", dependencies: [
            "OrderSyncNode", "JSON", "SyncCore",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),

        // Test peer: an echo server and an Autobahn client built from the project's own
        // WebSocket and Posix modules (conformance runs with kosoku).
        .executableTarget(name: "WebSocketEcho", dependencies: ["WebSocket", "WebSocketTransport", "Posix"]),

        .testTarget(name: "WebSocketTests", dependencies: ["WebSocket", "HTTP1"]),
        .testTarget(name: "WebSocketTransportTests", dependencies: ["WebSocketTransport", "WebSocket", "Posix"]),
        .testTarget(name: "HTTP1Tests", dependencies: ["HTTP1"]),
        // HTTP1 only for the request/response round trip over a Unix socket.
        // Test peer: the Noise module driven over stdin/stdout, for interop with Python's
        // `noiseprotocol` (Tests/noise).
        .executableTarget(name: "NoisePeer", dependencies: ["Noise"]),

        .testTarget(name: "NoiseTests", dependencies: ["Noise"], resources: [.copy("Resources")]),
        .testTarget(name: "PosixTests", dependencies: ["Posix", "HTTP1"]),
        .testTarget(name: "OrderStoreTests", dependencies: ["OrderStore", "JSON", "SyncCore"]),
        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
        .testTarget(name: "SyncCoreTests", dependencies: ["JSON", "SyncCore"]),
        // The deterministic simulation of a whole store: master and slave engines over an
        // in-memory network and store, with faults, many seeds.
        .testTarget(name: "SyncSimulationTests", dependencies: ["JSON", "SyncCore"]),
        .testTarget(name: "DiscoveryTests", dependencies: ["Discovery"]),
        .testTarget(name: "OrderSyncNodeTests", dependencies: ["OrderSyncNode", "JSON", "SyncCore", "Posix", "OrderStore"]),
    ],
    swiftLanguageModes: [.v6]
)
