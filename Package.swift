// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "leak-audit",
    platforms: [.macOS(.v15)],
    products: [
        // What user code links: no third-party dependencies, no unsafeFlags.
        .library(name: "LeakMonitor", targets: ["LeakMonitor"]),
        .executable(name: "leak-audit", targets: ["LeakAuditCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0")
    ],
    targets: [
        // The record stream's layout, shared by the writer (the shim) and the reader (the core).
        .target(name: "LeakAuditWire"),
        // Capture side, inside the audited process: registry, backtraces, module map, channel.
        .target(
            name: "CLeakMonitorShim",
            dependencies: ["LeakAuditWire"],
            cSettings: [.define("_GNU_SOURCE")]
        ),
        .target(name: "LeakMonitor", dependencies: ["CLeakMonitorShim"]),
        // elfutils, for symbolization out of the target's process.
        .systemLibrary(
            name: "CLibDW",
            pkgConfig: "libdw",
            providers: [.apt(["libdw-dev", "libelf-dev"])]
        ),
        // System calls of the leak-audit executable that Swift's Glibc module lacks.
        .target(name: "CLeakAuditHost", cSettings: [.define("_GNU_SOURCE")]),
        .target(name: "LeakAuditCore", dependencies: ["LeakAuditWire", "CLeakAuditHost", "CLibDW"]),
        .executableTarget(
            name: "LeakAuditCLI",
            dependencies: [
                "LeakAuditCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "LeakMonitorTests", dependencies: ["LeakMonitor"]),
        .testTarget(name: "LeakAuditCoreTests", dependencies: ["LeakAuditCore"]),
        // Builds Fixtures/ and runs the real leak-audit executable on it.
        .testTarget(name: "EndToEndTests", dependencies: ["LeakAuditCLI"]),
    ]
)
