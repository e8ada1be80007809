import Foundation
import XCTest

@testable import LeakAuditModel
@testable import LeakAuditRendering

/// Every output format of a few reports built by hand, compared byte for byte with the files in
/// Golden/: a refactoring must not change what leaves the process. When a change to the output is
/// meant, write the files again with `LEAK_AUDIT_UPDATE_GOLDEN=1 swift test --filter GoldenOutputTests`
/// and review the diff like any other change.
///
/// scripts/output-snapshot.sh does the same for real runs of the fixture programs.
final class GoldenOutputTests: XCTestCase {
    static let cwd = "/home/dev/project"
    private static let goldenDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Golden")

    /// The options every format is rendered with, by what they add to the name of a golden file:
    /// the report fitted to 80 columns, then unfolded and coloured. A format that no sample renders
    /// differently in a layout than fitted (only the text report reads these) has no golden file
    /// for it.
    static let layouts: [(infix: String, options: RenderingOptions)] = [
        ("", RenderingOptions(workingDirectory: cwd, width: 80)),
        ("verbose.", RenderingOptions(workingDirectory: cwd, width: 80, verbose: true)),
        ("color.", RenderingOptions(workingDirectory: cwd, width: 80, colored: true)),
    ]

    /// Every case of `ReportFormat` in every layout it reads, by the extension of its golden files
    /// (`txt`, `verbose.txt`, `json`, …): a new format is compared with no change here. Worked out
    /// once: it renders every sample in every format and layout.
    nonisolated(unsafe) static let renderers: [(name: String, renderer: any ReportRenderer)] =
        ReportFormat.allCases.flatMap { format in
            let fitted = format.renderer(layouts[0].options)
            return layouts.compactMap { layout -> (String, any ReportRenderer)? in
                let renderer = format.renderer(layout.options)
                let differs = samples.contains { renderer.render($0.1) != fitted.render($0.1) }
                return layout.infix.isEmpty || differs ? (layout.infix + format.fileExtension, renderer) : nil
            }
        }

    func testEveryFormatOfEverySampleMatchesItsGoldenFile() throws {
        let update = ProcessInfo.processInfo.environment["LEAK_AUDIT_UPDATE_GOLDEN"] == "1"
        if update {
            try FileManager.default.createDirectory(at: Self.goldenDirectory, withIntermediateDirectories: true)
        }
        let renderers = Self.renderers
        for (sample, report) in Self.samples {
            for (ext, renderer) in renderers {
                let rendered = renderer.render(report)
                let file = Self.goldenDirectory.appendingPathComponent("\(sample).\(ext)")
                if update {
                    try Data(rendered.utf8).write(to: file)
                    continue
                }
                let golden = try String(contentsOf: file, encoding: .utf8)
                XCTAssertEqual(
                    rendered, golden,
                    "\(sample).\(ext) differs from Golden/\(sample).\(ext); if the change is meant, run with LEAK_AUDIT_UPDATE_GOLDEN=1"
                )
            }
        }
        // No golden file is left over from a format or layout that is no longer rendered (nor one a
        // layout stopped changing: its file would be left unread).
        let expected = Set(Self.samples.flatMap { sample, _ in renderers.map { "\(sample).\($0.name)" } })
        // (Folders are not golden files: Golden/schema-1 holds earlier reports that JSONReportReaderTests reads.)
        let entries = try FileManager.default.contentsOfDirectory(
            at: Self.goldenDirectory, includingPropertiesForKeys: [.isRegularFileKey])
        let files = Set(
            try entries.filter { try $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true }
                .map(\.lastPathComponent))
        XCTAssertEqual(files.subtracting(expected).sorted(), [], "golden files that no format renders")
    }

    func testColoredTextOfEverySampleIsItsPlainTextWithStylesAdded() {
        for (sample, report) in Self.samples {
            for verbose in [false, true] {
                let plain = TextReportRenderer(workingDirectory: Self.cwd, width: 80, verbose: verbose).render(report)
                let colored = TextReportRenderer(workingDirectory: Self.cwd, width: 80, verbose: verbose, colored: true)
                    .render(report)
                XCTAssertNotEqual(colored, plain, sample)
                XCTAssertEqual(colored.replacing(#/\x{1B}\[[0-9;]*m/#, with: ""), plain, "\(sample), verbose: \(verbose)")
            }
        }
    }

    // MARK: - Samples

    /// Every sample report, by the name of its golden files. The JSON round trip
    /// (JSONReportReaderTests) reads each back and renders it again.
    static let samples: [(String, AuditReport)] = [
        ("leaky-with-policy", leakyWithPolicy()),
        ("tests-and-census", testsAndCensus()),
        ("crashed", crashed()),
        ("clean", clean()),
        ("not-audited", notAudited()),
        ("retainers-and-capacity", retainersAndCapacity()),
        ("unreachable", unreachable()),
        ("unreachable-unwatched", unreachableUnwatched()),
        ("unreachable-none", unreachableNone()),
        ("inspected", inspected()),
    ]

    /// The samples that older releases' reports exist of (Golden/schema-1): those without what
    /// schema 2 added since, the unreachable objects and an inspected process (`leak-audit inspect`).
    static var schema1Samples: [(String, AuditReport)] {
        samples.filter { $0.1.unreachable == nil && $0.1.target.kind != .inspectedProcess }.map { name, report in
            // Nor what tests left that the run released later, a reason added since.
            var report = report
            for index in (report.tests ?? []).indices {
                report.tests?[index].globalState.removeAll { $0.globalStateReason == .releasedLater }
            }
            return (name, report)
        }
    }

    private static func frame(
        _ function: String?, _ file: String? = nil, _ line: Int? = nil, module: String? = "/home/dev/project/.build/debug/App",
        column: Int? = nil, inlined: Bool = false
    ) -> SymbolizedFrame {
        SymbolizedFrame(
            address: 0x5000, module: module, moduleOffset: module == nil ? nil : 0x1000, function: function, file: file,
            line: line, column: column, inlined: inlined)
    }

    private static var mainStack: [SymbolizedFrame] {
        [
            frame(
                "App.LoginViewModel.init(title: Swift.String) -> App.LoginViewModel", "\(cwd)/Sources/App/Login.swift", 11,
                column: 9),
            frame("reabstraction thunk helper", "\(cwd)/<compiler-generated>", 0),
            frame(
                "closure #1 @Sendable () -> () in App.Presenter.open(Swift.String) -> ()", "\(cwd)/Sources/App/Presenter.swift",
                31, inlined: true),
            frame("App.Presenter.open(Swift.String) -> ()", "\(cwd)/Sources/App/Presenter.swift", 29),
            frame("App_main", "\(cwd)/Sources/App/main.swift", 43),
            frame("__libc_start_call_main", nil, nil, module: "/lib/x86_64-linux-gnu/libc.so.6"),
            frame(nil, nil, nil, module: nil),
        ]
    }

    private static var otherStack: [SymbolizedFrame] {
        [
            frame("libfoo_alloc", nil, nil, module: "/usr/lib/libfoo.so"),
            frame("App.Factory.make() -> App.LoginViewModel", "/elsewhere/Factory.swift", 7),
        ]
    }

    private static func report(
        path: String = ".build/debug/App", outcome: TargetOutcome = .exited(code: 0),
        notAudited: AuditReport.NotAuditedReason? = nil, types: [AuditReport.TrackedType] = []
    ) -> AuditReport {
        AuditReport(
            tool: .init(name: "leak-audit", version: "0.1.0"),
            target: .init(path: path, arguments: ["--flag", "a b"], attached: true, attachedProcesses: 1, outcome: outcome),
            notAudited: notAudited, types: types, droppedRecords: 0, tornRecords: 0, warnings: [])
    }

    /// Four types over budget (failing, suppressed, baselined, larger than the baseline), one within
    /// budget, one from a budget pattern, a tricky name, warnings and a baseline with a gone entry.
    private static func leakyWithPolicy() -> AuditReport {
        let pattern = BudgetPattern(pattern: "App.*Cache", max: 1, origin: "--budget")
        var report = report(types: [
            .init(
                name: "App.LoginViewModel", max: 1, peakLive: 4, liveAtExit: 3, allocatedTotal: 9,
                allocations: [
                    .init(count: 3, frames: mainStack, truncated: false), .init(count: 1, frames: otherStack, truncated: true),
                ]),
            .init(
                name: "App.ImageCache", budget: .pattern(pattern), max: 1, peakLive: 3, liveAtExit: 3, allocatedTotal: 3,
                allocations: [.init(count: 3, frames: otherStack, truncated: false)], status: .baselined(recorded: 2)),
            .init(
                name: "App.Legacy<\"q\" & 'a', b: 100%>\nnext", max: 0, peakLive: 2, liveAtExit: 2, allocatedTotal: 2,
                allocations: [.init(count: 2, frames: mainStack, truncated: false)],
                status: .suppressed(Suppression(.type("App.Legacy*"), reason: "fixed in #123", origin: ".leak-audit.json"))),
            .init(
                name: "App.Session", max: 2, peakLive: 5, liveAtExit: 0, allocatedTotal: 5,
                allocations: [.init(count: 5, frames: [], truncated: false)], status: .largerThanBaseline(recorded: 1)),
            .init(name: "App.Settings", max: 2, peakLive: 1, liveAtExit: 0, allocatedTotal: 1, allocations: []),
        ])
        // Allocated over 40 ms, peaking at 31 ms; three still alive at exit.
        report.types[0].timeline = LiveCountTimeline(
            bucketMilliseconds: 2,
            samples: [
                .init(time: 0, low: 1, high: 1, last: 1), .init(time: 10, low: 1, high: 2, last: 2),
                .init(time: 30, low: 2, high: 4, last: 3), .init(time: 40, low: 3, high: 3, last: 3),
            ])
        report.types[0].peakTime = 31
        report.types[0].allocationsAtExit = [.init(count: 3, frames: mainStack, truncated: false)]
        report.target.durationMilliseconds = 52
        report.warnings = [
            "2 records were not written (leak-audit stopped reading, or a record was larger than the ring), so counts may be off"
        ]
        report.droppedRecords = 2
        report.tornRecords = 1
        report.watchedInstances = 20
        report.baseline = .init(
            path: "leak-baseline.json",
            gone: [.init(key: .type("App.Fixed"), count: 1, sites: ["Sources/App/Fixed.swift:3"])])
        return report
    }

    /// A test run: per-test leaks (one global-state entry), a census with folded types, processes.
    private static func testsAndCensus() -> AuditReport {
        var report = report(path: ".build/debug/AppPackageTests.xctest")
        report.target.kind = .swiftTestBundle
        report.target.attachedProcesses = 2
        report.target.skippedProcesses = 1
        report.target.processes = [
            .init(pid: 100, commandLine: [".build/debug/AppPackageTests.xctest"], testingLibrary: .xctest, testsRun: 3),
            .init(
                pid: 101, commandLine: [".build/debug/AppPackageTests.xctest", "--testing-library", "swift-testing"],
                testingLibrary: .swiftTesting, testsRun: 2),
        ]
        let testStack = [
            frame("App.Screen.init() -> App.Screen", "\(cwd)/Sources/App/Screen.swift", 4),
            frame("AppTests.ScreenTests.testOpen() -> ()", "\(cwd)/Tests/AppTests/ScreenTests.swift", 12),
        ]
        let onceStack = [
            frame("App.Logger.init() -> App.Logger", "\(cwd)/Sources/App/Logger.swift", 2),
            frame("one-time initialization function for shared", "\(cwd)/Sources/App/Logger.swift", 9),
            frame("swift_once", nil, nil, module: "/usr/lib/swift/linux/libswiftCore.so"),
        ]
        report.tests = [
            .init(
                name: "AppTests.ScreenTests/testOpen",
                leaked: [
                    .init(
                        type: "App.Screen", count: 2,
                        allocations: [.init(count: 2, frames: testStack, truncated: false, test: "AppTests.ScreenTests/testOpen")]
                    )
                ],
                globalState: [
                    .init(
                        type: "App.Logger", count: 1,
                        allocations: [
                            .init(count: 1, frames: onceStack, truncated: false, test: "AppTests.ScreenTests/testOpen")
                        ],
                        globalStateReason: .oneTimeInitializer)
                ]),
            .init(name: "AppTests.ScreenTests/testClose", leaked: []),
            .init(
                name: "AppTests/screenTest()",
                leaked: [
                    .init(
                        type: "App.Screen", count: 1, allocations: [.init(count: 1, frames: testStack, truncated: false)],
                        status: .suppressed(Suppression(.file("Sources/App/*"), origin: ".leak-audit.json")))
                ]),
        ]
        report.census = .init(
            entries: [
                .init(
                    name: "App.Screen", liveAtExit: 3, isInternal: false,
                    allocations: [.init(count: 3, frames: testStack, truncated: false)]),
                .init(
                    name: "App.Logger", liveAtExit: 1, isInternal: false,
                    allocations: [.init(count: 1, frames: onceStack, truncated: false)]),
            ],
            foldedTypes: 4, foldedInstances: 40, foldedTestCaseTypes: 1, foldedTestCaseInstances: 2)
        report.census?.entries[0].timeline = LiveCountTimeline(
            bucketMilliseconds: 1,
            samples: [.init(time: 5, low: 1, high: 2, last: 2), .init(time: 30, low: 2, high: 3, last: 3)])
        // testClose's test case keeps its screen in a property set in setUp.
        var kept = AuditReport.TestReport.LeakedType(
            type: "App.Screen", count: 1,
            allocations: [.init(count: 1, frames: testStack, truncated: false, test: "AppTests.ScreenTests/testClose")])
        kept.retainers = [
            Retainer(
                count: 1, root: .init(kind: .testCase, name: "AppTests.ScreenTests"),
                path: [
                    .init(via: "AppTests.ScreenTests", type: "AppTests.ScreenTests"), .init(via: "screen", type: "App.Screen"),
                ],
                retainedBytes: 48)
        ]
        report.tests?[1].keptByTestCase = [kept]
        report.tests?[0].startedAt = 4
        report.tests?[0].finishedAt = 12
        report.tests?[1].startedAt = 12
        report.tests?[1].finishedAt = 20
        report.tests?[2].startedAt = 25
        report.tests?[2].finishedAt = 31
        report.target.durationMilliseconds = 40
        report.watchedInstances = 57
        return report
    }

    /// A leak, then a crash.
    private static func crashed() -> AuditReport {
        report(
            outcome: .signaled(signal: 6),
            types: [
                .init(
                    name: "App.LoginViewModel", max: 0, peakLive: 1, liveAtExit: 1, allocatedTotal: 1,
                    allocations: [.init(count: 1, frames: mainStack, truncated: false)])
            ])
    }

    /// Nothing over budget.
    private static func clean() -> AuditReport {
        report(types: [.init(name: "App.Settings", max: 2, peakLive: 2, liveAtExit: 0, allocatedTotal: 6, allocations: [])])
    }

    /// A program that never attached.
    private static func notAudited() -> AuditReport {
        var report = report(path: "./Tool", notAudited: .neverAttached)
        report.target.attached = false
        report.target.attachedProcesses = 0
        report.target.kind = .dynamicSwift
        return report
    }

    /// A running process `leak-audit inspect` copied: how long it was stopped, its census with
    /// bytes (the toolchain's types folded), and the objects that retain the most, one alone and
    /// a group of cycles of the same shape.
    static func inspected() -> AuditReport {
        let command = ["/srv/app/.build/release/Service", "--port", "8080"]
        var target = AuditReport.Target(
            path: command[0], arguments: Array(command.dropFirst()), attached: false, attachedProcesses: 1,
            outcome: .running, kind: .inspectedProcess, processes: [.init(pid: 4242, commandLine: command)])
        target.stoppedMicroseconds = 41_250
        let entries = [("Service.Request", 120, 5_760), ("Service.Handler", 12, 4_512), ("Service.CacheEntry", 50, 2_000)]
            .map { name, count, bytes in
                var entry = AuditReport.CensusEntry(name: name, liveAtExit: count, isInternal: false, allocations: [])
                entry.bytes = bytes
                return entry
            }
        var report = AuditReport(
            tool: .init(name: "leak-audit", version: "0.1.0"), target: target, types: [],
            census: .init(entries: entries, foldedTypes: 3, foldedInstances: 812), droppedRecords: 0, tornRecords: 0,
            warnings: [
                "no allocation stacks: the process was inspected, not started by leak-audit, so nothing recorded where its objects were allocated"
            ])
        report.largestRetained = [
            Retainer(
                count: 1, root: .init(kind: .global, name: "Service.cache"),
                path: [.init(via: "Service.cache", type: "Service.Cache")], retainedBytes: 1_204_000),
            Retainer(
                count: 12, root: .init(kind: .cycle, name: "a cycle of 2 objects that nothing else holds"),
                path: [
                    .init(via: "", type: "Service.Handler"), .init(via: "request", type: "Service.Request"),
                    .init(via: "handler", type: "Service.Handler"),
                ], retainedBytes: 4_512),
        ]
        return report
    }

    /// Retainers (a collection's storage on a path, a thread, a path left unknown), more processes
    /// than leak-audit keeps and lost records, damaged records, a budget from a configuration file,
    /// a test's global state replaced by later tests, and a test process whose tests were not
    /// counted.
    static func retainersAndCapacity() -> AuditReport {
        let pattern = BudgetPattern(pattern: "App.Rout*", max: 0, origin: ".leak-audit.json")
        let stack = [
            frame("App.Router.init() -> App.Router", "\(cwd)/Sources/App/Router.swift", 3),
            frame("App_main", "\(cwd)/Sources/App/main.swift", 8),
        ]
        var router = AuditReport.TrackedType(
            name: "App.Router", budget: .pattern(pattern), max: 0, peakLive: 2, liveAtExit: 2, allocatedTotal: 2,
            allocations: [.init(count: 2, frames: stack, truncated: false)])
        router.retainers = [
            Retainer(
                count: 1, root: .init(kind: .global, name: "App.routers"),
                path: [
                    .init(via: "routers", type: "Swift._ContiguousArrayStorage<App.Router>", isCollectionStorage: true),
                    .init(via: "[i]", type: "App.Router"),
                ], retainedBytes: 2_400),
            Retainer(
                count: 1, root: .init(kind: .stack, name: "App.Scheduler.run()", thread: "worker"),
                path: [.init(via: "local", type: "App.Router")]),
            // A list of 2,000,000 nodes to the router: the path keeps 10 at each end here (500 in
            // a real walk), the text 8.
            Retainer(
                count: 1, root: .init(kind: .global, name: "App.history"),
                path: [.init(via: "App.history", type: "App.Node")]
                    + (0..<18).map { _ in Retainer.Step(via: "next", type: "App.Node") }
                    + [.init(via: "route", type: "App.Router")],
                omittedSteps: 1_999_980, omittedAfter: 10),
        ]
        router.retainersUnavailable = ["process 12 was killed by a signal before it could be walked"]
        var report = AuditReport(
            tool: .init(name: "leak-audit", version: "0.1.0"),
            target: .init(
                path: "scripts/run-all.sh", arguments: [], attached: true, attachedProcesses: 2, outcome: .exited(code: 0),
                kind: .other,
                processes: [
                    .init(pid: 12, commandLine: ["/home/dev/project/.build/debug/App", "serve"]),
                    .init(pid: 13, commandLine: [".build/debug/AppPackageTests.xctest"], testingLibrary: .xctest),
                ]),
            types: [router], droppedRecords: 1, tornRecords: 0, damagedRecords: 3, exceededCapacity: true,
            warnings: ["more than 256 processes ran; the later ones were not audited"])
        var leaked = AuditReport.TestReport.LeakedType(
            type: "App.Router", count: 1,
            allocations: [.init(count: 1, frames: stack, truncated: false, test: "AppTests.T/testA")])
        leaked.retainers = [
            Retainer(
                count: 1, root: .init(kind: .cycle, name: "a cycle of 2 objects that nothing else holds"),
                path: [
                    .init(via: "delegate", type: "App.Router"), .init(via: "owner", type: "App.Router"),
                ])
        ]
        var replaced = AuditReport.TestReport.LeakedType(
            type: "App.Metrics", count: 1, allocations: [.init(count: 1, frames: stack, truncated: false)],
            globalStateReason: .replacedByLaterTests)
        replaced.retainers = [
            Retainer(count: 1, root: .init(kind: .global, name: "App.metrics"), path: [.init(via: "", type: "App.Metrics")])
        ]
        // What the replaced metrics system held, released with it.
        let held = AuditReport.TestReport.LeakedType(
            type: "App.Counter", count: 2, allocations: [.init(count: 2, frames: stack, truncated: false)],
            globalStateReason: .releasedWithGlobalState)
        // What an event loop released 340 ms after the test finished, while later tests ran.
        var late = AuditReport.TestReport.LeakedType(
            type: "App.IdleTimer", count: 1, allocations: [.init(count: 1, frames: stack, truncated: false)],
            globalStateReason: .releasedLater)
        late.releasedAfterMilliseconds = 340
        late.retainers = [
            Retainer(
                count: 1, root: .init(kind: .stack, name: "App.EventLoop.run()", thread: "event-loop"),
                path: [.init(via: "", type: "App.IdleTimer")])
        ]
        report.tests = [
            .init(name: "AppTests.T/testA", leaked: [leaked], globalState: [replaced, held, late]),
            .init(name: "AppTests.Suite", leaked: [], ran: false),
        ]
        return report
    }

    // MARK: - Unreachable objects

    private static let pairCycle: [Retainer.Step] = [
        .init(via: "", type: "App.PairA"), .init(via: "other", type: "App.PairB"), .init(via: "other", type: "App.PairA"),
    ]

    /// The unreachable check with every status: a failing cycle through an array (with objects
    /// only it holds), one larger than the baseline, a baselined and a suppressed one, an internal
    /// one folded, a process that could not be checked, and a baseline entry gone.
    static func unreachable() -> AuditReport {
        let pairStack = [
            frame("App.PairA.init() -> App.PairA", "\(cwd)/Sources/App/Pairs.swift", 3),
            frame("App.makePairs(count: Swift.Int) -> ()", "\(cwd)/Sources/App/Pairs.swift", 21, column: 17),
            frame("App_main", "\(cwd)/Sources/App/main.swift", 8),
        ]
        let parentStack = [
            frame("App.Parent.init() -> App.Parent", "\(cwd)/Sources/App/Tree.swift", 5),
            frame("App_main", "\(cwd)/Sources/App/main.swift", 12),
        ]
        var report = report(types: [
            .init(name: "App.Settings", max: 2, peakLive: 1, liveAtExit: 0, allocatedTotal: 1, allocations: [])
        ])
        report.watchedInstances = 40
        let groups: [UnreachableObjects.Group] = [
            .init(
                count: 3, objects: 6, bytes: 288, shape: .cycle, path: pairCycle,
                allocations: [.init(count: 6, frames: pairStack, truncated: false)], isInternal: false),
            .init(
                count: 2, objects: 9, bytes: 1_184, shape: .cycle,
                path: [
                    .init(via: "", type: "App.Parent"),
                    .init(
                        via: "children", type: "Swift._ContiguousArrayStorage<App.Child>", isCollectionStorage: true),
                    .init(via: "[0]", type: "App.Child"), .init(via: "parent", type: "App.Parent"),
                ],
                allocations: [.init(count: 2, frames: parentStack, truncated: false)], isInternal: false,
                status: .largerThanBaseline(recorded: 1)),
            .init(
                count: 1, objects: 1, bytes: 48, shape: .overRetained, path: [.init(via: "", type: "App.Token")],
                allocations: [], isInternal: false, status: .baselined(recorded: 2)),
            .init(
                count: 1, objects: 2, bytes: 96, shape: .cycle,
                path: [
                    .init(via: "", type: "App.LegacyView"), .init(via: "delegate", type: "App.LegacyController"),
                    .init(via: "view", type: "App.LegacyView"),
                ],
                allocations: [], isInternal: false,
                status: .suppressed(Suppression(.type("App.Legacy*"), reason: "fixed in #321", origin: ".leak-audit.json"))),
            .init(
                count: 4, objects: 4, bytes: 256, shape: .overRetained,
                path: [.init(via: "", type: "Foundation.__NSCFTimer")], allocations: [], isInternal: true),
        ]
        report.unreachable = UnreachableObjects(
            objects: 22, bytes: 1_872,
            types: [
                .init(name: "App.Child", count: 7, bytes: 784, isInternal: false),
                .init(name: "App.PairA", count: 3, bytes: 144, isInternal: false),
                .init(name: "App.PairB", count: 3, bytes: 144, isInternal: false),
                .init(name: "Foundation.__NSCFTimer", count: 4, bytes: 256, isInternal: true),
                .init(name: "App.Parent", count: 2, bytes: 400, isInternal: false),
                .init(name: "App.LegacyController", count: 1, bytes: 48, isInternal: false),
                .init(name: "App.LegacyView", count: 1, bytes: 48, isInternal: false),
                .init(name: "App.Token", count: 1, bytes: 48, isInternal: false),
            ],
            groups: groups, processesChecked: 1,
            unavailable: ["process 14 was killed by a signal before its heap could be checked"])
        report.baseline = .init(
            path: "leak-baseline.json",
            gone: [.init(key: .unreachable("cycle App.Cache.owner → App.Owner.cache → App.Cache"), count: 1)])
        return report
    }

    /// `leak-audit inspect`'s kind of report: no type tracked and no allocation watched, so no
    /// stacks; a cycle and an object alone fail.
    static func unreachableUnwatched() -> AuditReport {
        var report = report(path: "./Service")
        report.target.kind = .dynamicSwift
        report.unreachable = UnreachableObjects(
            objects: 21, bytes: 2_016,
            types: [
                .init(name: "Service.Request", count: 10, bytes: 960, isInternal: false),
                .init(name: "Service.Handler", count: 10, bytes: 960, isInternal: false),
                .init(name: "Service.Token", count: 1, bytes: 96, isInternal: false),
            ],
            groups: [
                .init(
                    count: 10, objects: 20, bytes: 1_920, shape: .cycle,
                    path: [
                        .init(via: "", type: "Service.Request"), .init(via: "handler", type: "Service.Handler"),
                        .init(via: "captured", type: "Service.Request"),
                    ],
                    allocations: [], isInternal: false),
                .init(
                    count: 1, objects: 1, bytes: 96, shape: .overRetained, path: [.init(via: "", type: "Service.Token")],
                    allocations: [], isInternal: false),
            ],
            processesChecked: 1)
        return report
    }

    /// The unreachable check finding nothing of the program's types (a runtime object folded).
    static func unreachableNone() -> AuditReport {
        var report = report(path: "./Tool")
        report.target.kind = .dynamicSwift
        report.unreachable = UnreachableObjects(
            objects: 1, bytes: 32, types: [.init(name: "Swift.__EmptyArrayStorage", count: 1, bytes: 32, isInternal: true)],
            groups: [
                .init(
                    count: 1, objects: 1, bytes: 32, shape: .overRetained,
                    path: [.init(via: "", type: "Swift.__EmptyArrayStorage")], allocations: [], isInternal: true)
            ],
            processesChecked: 2)
        return report
    }
}
