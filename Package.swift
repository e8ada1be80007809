// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "leak-audit",
    products: [
        // What user code links: no third-party dependencies, no unsafeFlags.
        .library(name: "LeakMonitor", targets: ["LeakMonitor"]),
        .executable(name: "leak-audit", targets: ["LeakAuditCLI"]),
        // What leak-audit preloads into a program that does not link LeakMonitor, to watch its
        // class allocations (`--budget`, `--census`). `swift build` (every product) puts it next
        // to the leak-audit executable, where leak-audit looks for it.
        .library(name: "LeakAuditPreload", type: .dynamic, targets: ["CLeakAuditPreload"]),
        // Loaded by the preloaded library into test bundles: tells it which test is running.
        .library(name: "LeakAuditTestObserver", type: .dynamic, targets: ["LeakAuditTestObserver"]),
        // `swift package leak-audit`: builds a package's tests and runs them under leak-audit run.
        .plugin(name: "LeakAuditPlugin", targets: ["LeakAuditPlugin"]),
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
        // The same shim, as a shared object of its own for LD_PRELOAD. It looks the runtime up with
        // dlsym; SwiftPM still links it against libswiftCore, found through the toolchain's
        // RUNPATH, so the non-Swift processes a target starts load that too and still run.
        .target(name: "CLeakAuditPreload", dependencies: ["CLeakMonitorShim"]),
        // XCTest observer and Swift Testing resolver; calls the shim through the global scope.
        .target(name: "LeakAuditTestObserver", dependencies: ["LeakAuditWire"]),
        // elfutils' libdw, for symbolization out of the target's process: its headers (libdw-dev),
        // and libdw.so.1 loaded when a report first needs a frame, not at every start.
        .target(name: "CLibDW"),
        // System calls of the leak-audit executable that Swift's Glibc module lacks, and the
        // runtimes' demanglers: libstdc++'s, which the Swift runtime needs anyway, is linked by name.
        .target(name: "CLeakAuditHost", cSettings: [.define("_GNU_SOURCE")], linkerSettings: [.linkedLibrary("stdc++")]),
        // Reading the files leak-audit is given (a configuration, a baseline, a saved report), bounded,
        // and the C library's words for a failed call.
        .target(name: "LeakAuditFiles"),
        // The report model and its vocabulary (names, rule ids, kinds): what an audit found. Depends
        // on nothing; no words laid out for people, no colour, no file read.
        .target(name: "LeakAuditModel"),
        // What the renderers share to put the model into words for people: the phrases, width and
        // wrapping, whole blocks (ReportPhrases), readable stacks, colour (TextEmphasis), escaping.
        .target(name: "LeakAuditPresentation", dependencies: ["LeakAuditModel"]),
        // One renderer per output format (ReportFormat lists them), each reading only the model and
        // the presentation layer; and the saved JSON report's reader, which reads through LeakAuditFiles.
        .target(name: "LeakAuditRendering", dependencies: ["LeakAuditModel", "LeakAuditPresentation", "LeakAuditFiles"]),
        // The pipeline: plan, record, report, judge (Audit.swift); Linux behind Platform/.
        .target(
            name: "LeakAuditCore",
            dependencies: [
                "LeakAuditModel", "LeakAuditPresentation", "LeakAuditFiles", "LeakAuditWire", "CLeakAuditHost", "CLibDW",
            ]),
        .executableTarget(
            name: "LeakAuditCLI",
            dependencies: [
                "LeakAuditCore", "LeakAuditModel", "LeakAuditPresentation", "LeakAuditRendering",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // What the libFuzzer targets below share: seeds, libFuzzer's driver, the replay of a corpus.
        .target(name: "FuzzDriver", path: "Fuzz/FuzzDriver"),
        // What the tests and the fuzz targets share about the record stream, none of it shipped:
        // the encoder (records as the shim writes them) and the replay of bytes into a report.
        .target(
            name: "RecordStreamSupport", dependencies: ["LeakAuditCore", "LeakAuditModel", "LeakAuditWire"],
            path: "Tests/RecordStreamSupport"),
        // The record stream's libFuzzer target (scripts/fuzz.sh builds it with -sanitize=fuzzer);
        // built as usual, it replays a corpus or a crash (docs/reliability.md, "Fuzzing").
        .executableTarget(
            name: "RecordStreamFuzzer",
            dependencies: ["FuzzDriver", "LeakAuditModel", "LeakAuditRendering", "RecordStreamSupport"],
            path: "Fuzz/RecordStreamFuzzer"),
        // The heap walk's libFuzzer target (`--retainers`: a hostile process snapshot), built and
        // replayed the same way.
        .executableTarget(
            name: "HeapGraphFuzzer", dependencies: ["FuzzDriver", "LeakAuditCore", "LeakAuditModel"],
            path: "Fuzz/HeapGraphFuzzer"),
        // The image files' libFuzzer target (the target's executable and libraries, as the heap
        // walk and `leak-audit run` read them), built and replayed the same way.
        .executableTarget(name: "ELFFuzzer", dependencies: ["FuzzDriver", "LeakAuditCore"], path: "Fuzz/ELFFuzzer"),
        // The saved report's libFuzzer target (`leak-audit report`: the JSON reader, then every
        // renderer), built and replayed the same way.
        .executableTarget(
            name: "ReportFuzzer",
            dependencies: ["FuzzDriver", "LeakAuditModel", "LeakAuditRendering", "RecordStreamSupport"],
            path: "Fuzz/ReportFuzzer"),
        // The command plugin behind `swift package leak-audit` (docs/plugin.md).
        .plugin(
            name: "LeakAuditPlugin",
            capability: .command(
                intent: .custom(
                    verb: "leak-audit",
                    description: "Build the package's tests and run them under leak-audit run (docs/plugin.md)")),
            dependencies: ["LeakAuditCLI"]
        ),
        // Headless Chromium for the tests that open an HTML report in a browser (rendering and
        // end-to-end): finding it, its command line, the harness page and what it found.
        .target(name: "HeadlessChromium", path: "Tests/HeadlessChromium"),
        .testTarget(name: "LeakMonitorTests", dependencies: ["LeakMonitor"]),
        .testTarget(
            name: "LeakAuditCoreTests",
            dependencies: [
                "LeakAuditCore", "LeakAuditModel", "LeakAuditPresentation", "LeakAuditRendering", "RecordStreamSupport",
            ],
            exclude: ["HeapGraphCorpus"]),
        .testTarget(
            name: "LeakAuditRenderingTests",
            dependencies: [
                "LeakAuditRendering", "LeakAuditModel", "LeakAuditPresentation", "LeakAuditFiles", "HeadlessChromium",
            ],
            exclude: ["Golden"]),
        // Builds Fixtures/ and runs the real leak-audit executable on it.
        .testTarget(
            name: "EndToEndTests", dependencies: ["LeakAuditCLI", "LeakAuditModel", "LeakAuditRendering", "HeadlessChromium"]),
    ]
)
