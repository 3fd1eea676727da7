// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "OrderSync",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "ordersync", targets: ["ordersync"]),
        .executable(name: "ordersync-wsecho", targets: ["WebSocketEcho"]),
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

        // Pure modules: no sockets, clocks, SQLite or Avahi.
        .target(name: "WebSocket", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        .target(name: "HTTP1"),
        .target(name: "SyncCore"),

        // I/O modules.
        .target(name: "Posix"),
        .target(name: "OrderStore", dependencies: ["CSQLite3", "SyncCore"]),
        .target(name: "Discovery", dependencies: ["CAvahi"]),
        .target(name: "OrderSyncNode", dependencies: [
            "WebSocket", "HTTP1", "SyncCore", "Posix", "OrderStore", "Discovery",
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: [.swiftLanguageMode(.v6)]),
        .executableTarget(name: "ordersync", dependencies: [
            "OrderSyncNode",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: [.swiftLanguageMode(.v6)]),

        // Test peer: an echo server and an Autobahn client built from the project's own
        // WebSocket and Posix modules (conformance runs with kosoku).
        .executableTarget(name: "WebSocketEcho", dependencies: ["WebSocket", "Posix"]),

        .testTarget(name: "WebSocketTests", dependencies: ["WebSocket"]),
        .testTarget(name: "PosixTests", dependencies: ["Posix", "HTTP1"]),
        .testTarget(name: "OrderStoreTests", dependencies: ["OrderStore", "SyncCore"]),
        .testTarget(name: "SyncCoreTests", dependencies: ["SyncCore"]),
        // The deterministic simulation of a whole store: master and slave engines over an
        // in-memory network and in-memory (or in-memory SQLite) stores, with faults, many seeds.
        .testTarget(name: "SyncSimulationTests", dependencies: ["SyncCore", "OrderStore"],
                    swiftSettings: [.swiftLanguageMode(.v6)]),
        .testTarget(name: "DiscoveryTests", dependencies: ["Discovery"]),
        .testTarget(name: "OrderSyncNodeTests", dependencies: ["OrderSyncNode", "SyncCore", "Posix", "OrderStore"],
                    swiftSettings: [.swiftLanguageMode(.v6)]),
    ],
    swiftLanguageModes: [.v5]
)
