// swift-tools-version:6.0
import PackageDescription

// libFuzzer targets for the parsers that read bytes from the network. This is a package of its
// own because a fuzz executable has no `main` of its own (libFuzzer provides it), so it only
// links when built with `--sanitize=fuzzer`; keeping it here leaves the main package's plain
// `swift build` untouched. `Sources/WebSocket`, `Sources/HTTP1`, `Sources/JSON`, `Sources/SyncCore`, `Sources/Noise`,
// `Sources/SecureLink`, `Sources/CryptoPrimitives` are symbolic links to the main package's modules, so the code fuzzed is
// exactly the code shipped; `Sources/COpenSSL` links the system library target those primitives and Noise's cipher
// (`NoiseChaChaPoly`) call.
//
// Build and run with Scripts/fuzz.sh, or by hand:
//
//     swift build -c debug --product FuzzFrameParser \
//         --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address
//     ./.build/debug/FuzzFrameParser -max_total_time=60 corpus/FuzzFrameParser
let package = Package(
    name: "OrderSyncFuzz",
    targets: [
        .target(name: "CryptoPrimitives", dependencies: ["COpenSSL"], swiftSettings: [.swiftLanguageMode(.v6)]),
        .target(name: "WebSocket", dependencies: ["HTTP1", "CryptoPrimitives"], swiftSettings: [.swiftLanguageMode(.v6)]),
        .target(name: "HTTP1", swiftSettings: [.swiftLanguageMode(.v6)]),
        .target(name: "JSON", swiftSettings: [.swiftLanguageMode(.v6)]),
        .target(name: "SyncCore", dependencies: ["JSON"], swiftSettings: [.swiftLanguageMode(.v6)]),

        .executableTarget(name: "FuzzFrameParser", dependencies: ["WebSocket"]),
        .executableTarget(name: "FuzzHandshake", dependencies: ["WebSocket"]),
        .executableTarget(name: "FuzzHTTPRequest", dependencies: ["HTTP1"], swiftSettings: [.swiftLanguageMode(.v6)]),
        .executableTarget(name: "FuzzSyncMessage", dependencies: ["JSON", "SyncCore"]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl"),
        .target(name: "Noise", dependencies: ["COpenSSL", "CryptoPrimitives"], swiftSettings: [.swiftLanguageMode(.v6)]),
        .executableTarget(name: "FuzzNoise", dependencies: ["Noise"], swiftSettings: [.swiftLanguageMode(.v6)]),
        .target(name: "SecureLink", dependencies: ["Noise", "CryptoPrimitives"], swiftSettings: [.swiftLanguageMode(.v6)]),
        .executableTarget(
            name: "FuzzSecureLink", dependencies: ["SecureLink", "Noise"], swiftSettings: [.swiftLanguageMode(.v6)]),
    ],
    swiftLanguageModes: [.v5]
)
