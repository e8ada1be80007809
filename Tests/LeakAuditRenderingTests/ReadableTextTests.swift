import XCTest

@testable import LeakAuditModel
@testable import LeakAuditPresentation
@testable import LeakAuditRendering

/// The text report as a person reads it on real code: the frames that matter, recursion
/// collapsed, the runtime and harness folded, names as Swift spells them, lines that fit.
final class ReadableTextTests: XCTestCase {
    private func frame(
        _ function: String?, _ file: String? = nil, _ line: Int? = nil, module: String? = "/work/.build/debug/AppTests.xctest"
    ) -> SymbolizedFrame {
        SymbolizedFrame(
            address: 0x1000, module: module, moduleOffset: 0x10, function: function, file: file, line: line, column: nil,
            inlined: false)
    }

    private func report(_ groups: [AuditReport.AllocationGroup], type: String = "App.Node") -> AuditReport {
        AuditReport(
            tool: .init(name: "leak-audit", version: "1"),
            target: .init(path: "App", arguments: [], attached: true, attachedProcesses: 1, outcome: .exited(code: 0)),
            notAudited: nil,
            types: [
                AuditReport.TrackedType(
                    name: type, max: 0, peakLive: groups.reduce(0) { $0 + $1.count }, liveAtExit: 0, allocatedTotal: 1,
                    allocations: groups)
            ],
            droppedRecords: 0, tornRecords: 0, warnings: [])
    }

    private func body(_ text: String) -> [String] {
        text.split(separator: "\n").map(String.init).filter { $0.hasPrefix("      ") || $0.hasPrefix("  … and") }
    }

    func testAPathOfACollectionsStorageAloneNamesIt() {
        // An over-retained dictionary's storage is the whole structure: it has a name to show.
        let alone = Retainer(
            count: 5, root: Retainer.Root(kind: .cycle, name: ""),
            path: [.init(via: "", type: "[Swift.String: Logging.Logger.MetadataValue]", isCollectionStorage: true)])
        XCTAssertEqual(ReportPhrases.retainerChain(alone), "[String: Logger.MetadataValue]")
        // Before an element, storage still reads as the step after it.
        let folded = Retainer(
            count: 1, root: Retainer.Root(kind: .cycle, name: ""),
            path: [
                .init(via: "", type: "[App.Node]", isCollectionStorage: true), .init(via: "[0]", type: "App.Node"),
            ])
        XCTAssertEqual(ReportPhrases.retainerChain(folded), "[0] Node")
    }

    func testRecursionIsCollapsedAndTheRuntimeFolded() {
        let frames =
            [frame("App.Node.__allocating_init() -> App.Node")]
            + Array(repeating: frame("App.Tree.insert(_: App.Node) -> ()", "/work/Sources/App/Tree.swift", 12), count: 40)
            + [
                frame("App.walk() -> ()", "/work/Sources/App/Walk.swift", 3),
                frame("App.visit() -> ()", "/work/Sources/App/Walk.swift", 9),
            ]
            + [
                frame("App.walk() -> ()", "/work/Sources/App/Walk.swift", 3),
                frame("App.visit() -> ()", "/work/Sources/App/Walk.swift", 9),
            ]
            + [
                frame("App.walk() -> ()", "/work/Sources/App/Walk.swift", 3),
                frame("App.visit() -> ()", "/work/Sources/App/Walk.swift", 9),
            ]
            + [
                frame(
                    "swift::runJobInEstablishedExecutorContext(swift::Job*)",
                    module: "/usr/lib/swift/linux/libswift_Concurrency.so"),
                frame("swift_job_run", module: "/usr/lib/swift/linux/libswift_Concurrency.so"),
                frame("_dispatch_worker_thread", module: "/usr/lib/swift/linux/libdispatch.so"),
            ]
        let text = TextReportRenderer(workingDirectory: "/work", width: 100).render(
            report([.init(count: 1, frames: frames, truncated: false)]))
        XCTAssertEqual(
            body(text),
            [
                "      App.Tree.insert(_:) at Sources/App/Tree.swift:12 × 40",
                "      App.walk() at Sources/App/Walk.swift:3",
                "      App.visit() at Sources/App/Walk.swift:9",
                "      … the 2 frames above, 3 times over (recursion)",
                "      … 3 frames in libswift_Concurrency, libdispatch",
            ])
    }

    func testAsyncAndPrivateNamesReadAsTheSwiftFunctionTheyBelongTo() {
        XCTAssertEqual(
            ReadableStack.readableFunction(
                "(3) suspend resume partial function for LoggingTests.LocalLoggerTest.errorAndAbove() async throws -> ()"),
            "LoggingTests.LocalLoggerTest.errorAndAbove()")
        XCTAssertEqual(
            ReadableStack.readableFunction(
                "(1) await resume partial function for App.Loader.load(url: Foundation.URL) async -> ()"),
            "App.Loader.load(url:)")
        XCTAssertEqual(
            ReadableStack.readableFunction(
                "Logging.LoggingSystem.(_metadataProviderFactory in _D650F6EB1B9EADA39E73492B4BECA56B).unsafeMutableAddressor : Logging.Box"
            ),
            "Logging.LoggingSystem._metadataProviderFactory.unsafeMutableAddressor")
        XCTAssertEqual(
            ReadableStack.readableFunction(
                "closure #1 (Swift.String) -> Logging.LogHandler in App.Tests.errorAndAbove() throws -> ()"),
            "closure #1 in App.Tests.errorAndAbove()")
        XCTAssertEqual(
            ReadableStack.readableFunction(
                "closure #1 @Sendable (Swift.String) -> Logging.LogHandler in LoggingTests.GlobalLoggerTest.traceAndAbove() throws -> ()"
            ), "closure #1 in LoggingTests.GlobalLoggerTest.traceAndAbove()")
        XCTAssertEqual(
            ReadableStack.readableFunction("App.Screen.init(title: Swift.String, onClose: @escaping () -> ()) -> App.Screen"),
            "App.Screen.init(title:onClose:)")
        XCTAssertEqual(
            ReadableStack.readableFunction("App.(unknown context at $55d7f1c0b9dc).Local.run() -> ()"), "App.(local).Local.run()")
        XCTAssertEqual(ReadableStack.readableFunction("App.Box<A>.store(A) -> ()"), "App.Box<A>.store(_:)")
        // A private type's initializer returns that private type: seen on swift-log's WarnOnceBox.
        XCTAssertEqual(
            ReadableStack.readableFunction(
                "Logging.(WarnOnceBox in _D650F6EB1B9EADA39E73492B4BECA56B).init() -> Logging.(WarnOnceBox in _D650F6EB1B9EADA39E73492B4BECA56B)"
            ), "Logging.WarnOnceBox.init()")
    }

    func testLinesFitTheWidthByShorteningPathsThenNames() {
        let frames = [
            frame("App.Node.init() -> App.Node", "/work/Sources/App/Node.swift", 2),
            frame(
                "App.VeryLongFeatureNamespace.SomeCoordinatorWithALongName.presentDetailScreen(for: App.Item, animated: Swift.Bool) -> ()",
                "/work/Sources/App/Features/Deeply/Nested/Directory/Structure/Coordinator.swift", 120),
        ]
        let text = TextReportRenderer(workingDirectory: "/work", width: 80).render(
            report([.init(count: 1, frames: frames, truncated: false)]))
        for line in text.split(separator: "\n") { XCTAssertLessThanOrEqual(line.count, 80, String(line)) }
        // Too long even with the path cut to its file name: the place gets a line of its own, and
        // only the name, wider than a line by itself, gives way in its middle.
        let shown = body(text)
        XCTAssertEqual(shown.count, 2)
        XCTAssertTrue(shown[0].hasPrefix("      App.VeryLongFeatureNamespace.SomeCoordinator"), shown[0])
        XCTAssertTrue(shown[0].hasSuffix("…n(for:animated:)"), shown[0])
        XCTAssertTrue(shown[1].hasPrefix("        at Sources/…/"), shown[1])
        XCTAssertTrue(shown[1].hasSuffix("/Coordinator.swift:120"), shown[1])

        // A path that can give way enough keeps the frame on one line.
        let short = [
            frame("App.Node.init() -> App.Node", "/work/Sources/App/Node.swift", 2),
            frame("App.Screen.open() -> ()", "/work/Sources/App/Features/Deeply/Nested/Directory/Structure/Screen.swift", 7),
        ]
        let one = body(
            TextReportRenderer(workingDirectory: "/work", width: 80).render(
                report([.init(count: 1, frames: short, truncated: false)])))
        XCTAssertEqual(one, ["      App.Screen.open() at Sources/…/Nested/Directory/Structure/Screen.swift:7"])
        // Without a width (another tool's report) or with --verbose, nothing is cut.
        let full = TextReportRenderer(workingDirectory: "/work").render(
            report([.init(count: 1, frames: frames, truncated: false)]))
        XCTAssertTrue(full.contains("presentDetailScreen(for:animated:) at Sources/App/Features/Deeply/Nested/Directory"), full)
    }

    func testProseBreaksBetweenWordsAndGoesOnTwoSpacesIn() {
        let phrases = ReportPhrases(width: 20)
        XCTAssertEqual(
            phrases.wrapped("  leak-audit: one over budget; a-very-long-word-indeed ends it"),
            ["  leak-audit: one", "    over budget;", "    a-very-long-word", "    -indeed ends it"])
        XCTAssertEqual(phrases.wrapped("fits as it is"), ["fits as it is"])
        // A path wider than a line goes on in parts after its slashes, never cut short.
        XCTAssertEqual(
            ReportPhrases(width: 30).wrapped(
                "  at '/work/main/.build/x86_64-unknown-linux-gnu/debug/AppPackageTests.xctest' ended"),
            [
                "  at", "    '/work/main/.build/", "    x86_64-unknown-linux-gnu/", "    debug/AppPackageTests.",
                "    xctest' ended",
            ])
        XCTAssertEqual(ReportPhrases(width: 20, verbose: true).wrapped(String(repeating: "word ", count: 9)).count, 1)
    }

    func testTheFirstSitesAreShownAndTheRestCounted() {
        let groups = (1...5).map { index in
            AuditReport.AllocationGroup(
                count: 6 - index, frames: [frame("App.make\(index)() -> ()", "/work/Sources/App/Make.swift", index)],
                truncated: false)
        }
        let text = TextReportRenderer(workingDirectory: "/work", width: 80).render(report(groups))
        XCTAssertEqual(
            body(text),
            [
                "      App.make1() at Sources/App/Make.swift:1",
                "      App.make2() at Sources/App/Make.swift:2",
                "      App.make3() at Sources/App/Make.swift:3",
                "  … and 2 more allocation sites (--verbose shows them here, --format json lists",
            ])
        XCTAssertTrue(text.contains("json lists\n    them all)"), text)
        let verbose = TextReportRenderer(workingDirectory: "/work", width: 80, verbose: true).render(report(groups))
        XCTAssertEqual(body(verbose).count, 5)
        XCTAssertTrue(verbose.contains("App.make5() -> () at Sources/App/Make.swift:5"), "verbose shows the names in full")
    }

    func testOnlyTheFirstFewSourceFramesAreShown() {
        let frames = (1...9).map { (level: Int) in frame("App.level\(level)() -> ()", "/work/Sources/App/Deep.swift", level) }
        let text = TextReportRenderer(workingDirectory: "/work", width: 80).render(
            report([.init(count: 1, frames: frames, truncated: false)]))
        XCTAssertEqual(body(text).count, ReportPhrases.sourceFramesShown + 1)
        XCTAssertEqual(body(text).last, "      … 4 more frames (--verbose or --format json shows them)")
    }

    func testPluralsAgreeWithTheirCounts() {
        XCTAssertEqual(counted(1, "test"), "1 test")
        XCTAssertEqual(counted(2, "test"), "2 tests")
        XCTAssertEqual(counted(1, "process", plural: "processes"), "1 process")
        XCTAssertEqual(counted(0, "object"), "0 objects")
    }

    /// Hundreds of failing tests and types alive stay readable in a log: the first entries in
    /// full, then the other tests by the types they left, and the census's first types.
    func testALargeSuiteIsShownInFullFirstThenInBrief() {
        var report = report([])
        report.types = []
        let frames = [frame("App.make() -> ()", "/work/Sources/App/Make.swift", 3)]
        report.tests = (1...9).map { index in
            let type = index <= 6 ? "App.Model\(index)" : "App.Shared<Swift.Int>"
            return .init(
                name: "AppTests.T/test\(index)",
                leaked: [.init(type: type, count: 1, allocations: [.init(count: 1, frames: frames, truncated: false)])])
        }
        report.census = .init(
            entries: (1...60).map { .init(name: "App.Kept\($0)", liveAtExit: 100 - $0, isInternal: false, allocations: []) },
            foldedTypes: 0, foldedInstances: 0)
        let text = TextReportRenderer(workingDirectory: "/work", width: 80).render(report)
        XCTAssertEqual(text.components(separatedBy: "  LEAKED ").count - 1, TextReportRenderer.detailedGroups, text)
        // The three that left the same are one entry, first; the last two tests go in brief.
        XCTAssertTrue(text.contains("  LEAKED by 3 tests: each left 1 App.Shared<Swift.Int>"), text)
        XCTAssertTrue(text.contains("  … and 2 more tests that left instances alive, by the types they left"), text)
        XCTAssertTrue(text.contains("    1 left Model6: AppTests.T/test6"), text)
        XCTAssertEqual(TextReportRenderer.testsShownPerGroup, 5, "a brief line names at most 5 tests, then how many more")
        XCTAssertTrue(text.contains("  … and 10 more types with 445 instances"), text)
        XCTAssertFalse(text.contains("App.Kept51"), text)
        let verbose = TextReportRenderer(workingDirectory: "/work", width: 80, verbose: true).render(report)
        XCTAssertEqual(verbose.components(separatedBy: "  LEAKED ").count - 1, 7, "one entry for the three that left the same")
        XCTAssertTrue(verbose.contains("App.Kept60"), verbose)
    }

    /// Past the sets of types the brief part lists, the other tests are counted, not named.
    func testTheBriefPartListsTheCommonestSetsOfTypesAndCountsTheRest() {
        var report = report([])
        report.types = []
        let frames = [frame("App.make() -> ()", "/work/Sources/App/Make.swift", 3)]
        let tests = TextReportRenderer.detailedGroups + TextReportRenderer.briefGroups + 3
        report.tests = (1...tests).map { index in
            .init(
                name: "AppTests.T/test\(index)",
                leaked: [
                    .init(type: "App.Model\(index)", count: 1, allocations: [.init(count: 1, frames: frames, truncated: false)])
                ])
        }
        let text = TextReportRenderer(workingDirectory: "/work", width: 80).render(report)
        XCTAssertEqual(text.components(separatedBy: "    1 left Model").count - 1, TextReportRenderer.briefGroups, text)
        XCTAssertTrue(text.contains("    and 3 more tests that left 3 other sets of types"), text)
    }
}
