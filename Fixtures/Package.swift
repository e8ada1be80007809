// swift-tools-version:6.0
// Real programs that leak-audit's end-to-end tests build and audit. Each scenario takes `leaky`
// or `clean` as its first argument: the clean twin runs the same code with the bug fixed and must
// report nothing. This package depends on leak-audit by path, as a user's package would.
import PackageDescription

let package = Package(
    name: "Fixtures",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "leak-audit", path: "..")],
    targets: [
        .executableTarget(name: "ViewModelRetention", dependencies: [.product(name: "LeakMonitor", package: "leak-audit")]),
    ],
    // Fixtures read like typical app code, which mostly still builds in Swift 5 mode.
    swiftLanguageModes: [.v5]
)
