import Foundation
import XCTest

/// Each leaky fixture must be reported with exact counts and the allocating lines; each clean twin
/// must report nothing.
final class ScenarioTests: XCTestCase {
    /// Asserts that the clean twin of `fixture` is not reported and leak-audit exits `status`.
    private func assertCleanTwin(_ fixture: String, status: Int32 = 0, file: StaticString = #filePath, line: UInt = #line) throws
    {
        let audit = try Harness.audit(fixture, ["clean"])
        XCTAssertEqual(audit.status, status, audit.stderr, file: file, line: line)
        XCTAssertFalse(audit.types.isEmpty, "the clean twin still tracks its types", file: file, line: line)
        for type in audit.types {
            XCTAssertEqual(type.bool("exceeded"), false, "\(type)", file: file, line: line)
            XCTAssertTrue(type.allocations.isEmpty, "\(type)", file: file, line: line)
        }
        let summary = try XCTUnwrap(audit.json["summary"] as? [String: Any])
        XCTAssertEqual(summary.int("exceededTypes"), 0, file: file, line: line)
    }

    func testViewModelKeptByLongLivedOwnerIsReportedWithItsAllocatingLines() throws {
        let audit = try Harness.audit("ViewModelRetention")
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let model = try audit.type(".LoginViewModel")
        XCTAssertEqual(model.string("name"), "ViewModelRetention.LoginViewModel")
        XCTAssertEqual(model.int("max"), 1)
        XCTAssertEqual(model.int("peakLive"), 3)
        XCTAssertEqual(model.int("liveAtExit"), 3)
        XCTAssertEqual(model.bool("exceeded"), true)
        let groups = model.allocations
        XCTAssertEqual(groups.map { $0.int("count") }, [3])
        let frames = try XCTUnwrap(groups.first).frames
        // The first frame is the user's code: LeakMonitor's own frames are dropped.
        let first = try XCTUnwrap(frames.first)
        XCTAssertEqual(first.string("function")?.hasPrefix("ViewModelRetention.LoginViewModel.init("), true, "\(first)")
        XCTAssertEqual(first.string("file")?.hasSuffix("Sources/ViewModelRetention/main.swift"), true)
        let validateLine = try Harness.line(
            of: "MemoryLeakMonitor.validate(self)", inFixtureSource: "Sources/ViewModelRetention/main.swift")
        XCTAssertEqual(first.int("line"), validateLine)
        let openLine = try Harness.line(
            of: "let model = LoginViewModel(title: title)", inFixtureSource: "Sources/ViewModelRetention/main.swift")
        XCTAssertTrue(
            frames.contains { $0.string("function")?.contains("Presenter.open(") == true && $0.int("line") == openLine },
            "\(frames)")
        XCTAssertFalse(frames.contains { $0.string("function")?.contains("MemoryLeakMonitor") == true })
        XCTAssertEqual(
            audit.stdout, "ViewModelRetention: opened and closed 3 screens\n", "the target's stdout passes through untouched")
    }

    func testViewModelCleanTwin() throws { try assertCleanTwin("ViewModelRetention") }

    func testDismissalClosureCapturingItsOwnerLeaksBoth() throws {
        let audit = try Harness.audit("DismissalCapture")
        XCTAssertEqual(audit.status, 1)
        for name in [".CheckoutFlow", ".SheetViewModel"] {
            let type = try audit.type(name)
            XCTAssertEqual(type.int("peakLive"), 2, name)
            XCTAssertEqual(type.int("liveAtExit"), 2, name)
        }
    }

    func testDismissalCleanTwin() throws { try assertCleanTwin("DismissalCapture") }

    func testSubclassHasItsOwnBudget() throws {
        let audit = try Harness.audit("CoordinatorBudgets")
        XCTAssertEqual(audit.status, 1)
        let archive = try audit.type(".ArchiveCoordinator")
        XCTAssertEqual(archive.int("max"), 2)
        XCTAssertEqual(archive.int("peakLive"), 3)
        XCTAssertEqual(archive.bool("exceeded"), true)
        let base = try audit.type(".Coordinator")
        XCTAssertEqual(base.int("max"), 1)
        XCTAssertEqual(base.int("peakLive"), 1)
        XCTAssertEqual(base.bool("exceeded"), false)
    }

    func testSubclassBudgetCleanTwin() throws { try assertCleanTwin("CoordinatorBudgets") }

    func testObserversInAStrongArrayOutliveTheirScreens() throws {
        let audit = try Harness.audit("WeakObservers")
        XCTAssertEqual(audit.status, 1)
        let label = try audit.type(".PriceLabel")
        XCTAssertEqual(label.int("peakLive"), 5)
        XCTAssertEqual(label.int("liveAtExit"), 5)
    }

    func testObserversInAWeakArrayAreReleased() throws {
        try assertCleanTwin("WeakObservers")
        let label = try Harness.audit("WeakObservers", ["clean"]).type(".PriceLabel")
        XCTAssertEqual(label.int("liveAtExit"), 0)
        XCTAssertEqual(label.int("allocatedTotal"), 5)
    }

    func testCountsAreExactAcrossEightThreads() throws {
        let audit = try Harness.audit("ConcurrentSessions")
        XCTAssertEqual(audit.status, 1)
        let session = try audit.type(".Session")
        XCTAssertEqual(session.int("liveAtExit"), 320)
        XCTAssertEqual(session.int("allocatedTotal"), 160_000)
        // The peak is the 320 parked sessions plus at most one in flight per thread.
        let peak = try XCTUnwrap(session.int("peakLive"))
        XCTAssertTrue((320...328).contains(peak), "peak \(peak)")
        XCTAssertEqual(session.allocations.reduce(0) { $0 + ($1.int("count") ?? 0) }, peak)
    }

    func testATinyRingMakesWritersWaitButLosesNothing() throws {
        // 64 slots: eight threads lap the ring constantly and wait for leak-audit to catch up.
        let audit = try Harness.audit(
            path: try Harness.fixture("ConcurrentSessions"), environment: ["LEAK_AUDIT_CHANNEL_SLOTS": "64"])
        XCTAssertEqual(audit.status, 1)
        let session = try audit.type(".Session")
        XCTAssertEqual(session.int("liveAtExit"), 320)
        XCTAssertEqual(session.int("allocatedTotal"), 160_000)
        let summary = try XCTUnwrap(audit.json["summary"] as? [String: Any])
        XCTAssertEqual(summary.int("droppedRecords"), 0)
        XCTAssertEqual(summary.int("tornRecords"), 0)
    }

    func testManyThreadsCleanTwin() throws {
        try assertCleanTwin("ConcurrentSessions")
        let session = try Harness.audit("ConcurrentSessions", ["clean"]).type(".Session")
        XCTAssertEqual(session.int("liveAtExit"), 0)
        XCTAssertEqual(session.int("allocatedTotal"), 160_000)
        XCTAssertLessThanOrEqual(session.int("peakLive") ?? 99, 8)
    }

    /// One thread allocates one type from stacks that differ at their first frame, in their middle
    /// and past the deepest capture, one after another: each instance is counted under its own
    /// stack, and each group shows its own frames.
    func testStacksThatFollowEachOtherOnOneThreadAreCountedApart() throws {
        let audit = try Harness.audit("StackVariety")
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let session = try audit.type(".Session")
        XCTAssertEqual(session.int("peakLive"), 20)
        // Grouped by constructing line: the three recursions' stacks are one group.
        let groups = session.allocations
        XCTAssertEqual(groups.map { $0.int("count") }, [15, 3, 2])
        func functions(_ group: [String: Any]) -> [String] { group.frames.map { $0.string("function") ?? "?" } }
        XCTAssertEqual(groups[0].bool("truncated"), true)
        XCTAssertEqual(functions(groups[0]).filter { $0.contains("openNested(") }.count, functions(groups[0]).count - 2)
        for (group, site, other) in [
            (groups[1], "openFromMenu()", "openFromLink()"), (groups[2], "openFromLink()", "openFromMenu()"),
        ] {
            XCTAssertEqual(group.bool("truncated"), false)
            XCTAssertTrue(functions(group).contains { $0.contains(site) }, "\(functions(group))")
            XCTAssertFalse(functions(group).contains { $0.contains(other) || $0.contains("openNested(") })
            XCTAssertTrue(functions(group).contains { $0.contains("StackVariety_main") || $0 == "main" }, "\(functions(group))")
        }
    }

    func testStackVarietyCleanTwin() throws { try assertCleanTwin("StackVariety") }

    func testHundredThousandLeakedInstancesAreCountedExactly() throws {
        let audit = try Harness.audit("LargeLeak")
        XCTAssertEqual(audit.status, 1)
        let entry = try audit.type(".CacheEntry")
        XCTAssertEqual(entry.int("peakLive"), 100_000)
        XCTAssertEqual(entry.int("liveAtExit"), 100_000)
        XCTAssertEqual(entry.allocations.map { $0.int("count") }, [100_000], "one allocating stack")
        XCTAssertEqual((audit.json["summary"] as? [String: Any])?.int("instancesOverBudget"), 100_000 - 64)
    }

    func testLargeCacheCleanTwin() throws {
        try assertCleanTwin("LargeLeak")
        let entry = try Harness.audit("LargeLeak", ["clean"]).type(".CacheEntry")
        XCTAssertEqual(entry.int("peakLive"), 64)
        XCTAssertEqual(entry.int("allocatedTotal"), 100_000)
    }

    func testReleaseBuildStillNamesTheUserLines() throws {
        let path = try Harness.releaseFixture("ViewModelRetention")
        let audit = try Harness.audit(path: path)
        XCTAssertEqual(audit.status, 1)
        let model = try audit.type(".LoginViewModel")
        XCTAssertEqual(model.int("peakLive"), 3)
        let frames = try XCTUnwrap(model.allocations.first).frames
        let validateLine = try Harness.line(
            of: "MemoryLeakMonitor.validate(self)", inFixtureSource: "Sources/ViewModelRetention/main.swift")
        let first = try XCTUnwrap(frames.first)
        XCTAssertEqual(first.string("function")?.hasPrefix("ViewModelRetention.LoginViewModel.init("), true, "\(frames)")
        XCTAssertEqual(first.int("line"), validateLine)
        XCTAssertTrue(frames.contains { $0.string("function")?.contains("Presenter.open(") == true }, "\(frames)")
    }

    func testContextsKeptByAnActorAcrossConcurrentTasks() throws {
        let audit = try Harness.audit("AsyncRequests")
        XCTAssertEqual(audit.status, 1)
        let context = try audit.type(".RequestContext")
        XCTAssertEqual(context.int("peakLive"), 200)
        XCTAssertEqual(context.int("liveAtExit"), 200)
        let frames = try XCTUnwrap(context.allocations.first).frames
        let initLine = try Harness.line(
            of: "MemoryLeakMonitor.validate(self)", inFixtureSource: "Sources/AsyncRequests/main.swift")
        XCTAssertEqual(frames.first?.int("line"), initLine, "\(frames)")
        let handleLine = try Harness.line(
            of: "let context = RequestContext(path: path)", inFixtureSource: "Sources/AsyncRequests/main.swift")
        XCTAssertTrue(
            frames.contains {
                $0.string("function")?.contains("AsyncRequests.handle(path:") == true && $0.int("line") == handleLine
            },
            "the async function that allocated is named: \(frames)")
    }

    func testConcurrentTasksCleanTwin() throws {
        try assertCleanTwin("AsyncRequests")
        let context = try Harness.audit("AsyncRequests", ["clean"]).type(".RequestContext")
        XCTAssertEqual(context.int("liveAtExit"), 0)
        XCTAssertEqual(context.int("allocatedTotal"), 200)
    }

    func testGenericSpecializationsHaveSeparateBudgets() throws {
        let audit = try Harness.audit("GenericBoxes")
        XCTAssertEqual(audit.status, 1)
        let strings = try audit.type(".Box<Swift.String>")
        XCTAssertEqual(strings.string("name"), "GenericBoxes.Box<Swift.String>")
        XCTAssertEqual(strings.int("peakLive"), 3)
        XCTAssertEqual(strings.bool("exceeded"), true)
        let ints = try audit.type(".Box<Swift.Int>")
        XCTAssertEqual(ints.int("peakLive"), 2)
        XCTAssertEqual(ints.bool("exceeded"), false)
    }

    func testGenericCleanTwin() throws { try assertCleanTwin("GenericBoxes") }

    func testTypeInASharedLibraryIsCountedAndSymbolized() throws {
        let audit = try Harness.audit("DynamicLibraryType")
        XCTAssertEqual(audit.status, 1)
        let widget = try audit.type("WidgetKit.Widget")
        XCTAssertEqual(widget.int("peakLive"), 3)
        let first = try XCTUnwrap(widget.allocations.first?.frames.first)
        XCTAssertEqual(first.string("module")?.hasSuffix("libWidgetKit.so"), true, "\(first)")
        XCTAssertEqual(first.string("file")?.hasSuffix("WidgetKit/Sources/WidgetKit/Widget.swift"), true, "\(first)")
        XCTAssertTrue(
            widget.allocations[0].frames.contains { $0.string("function")?.contains("WidgetFactory.makeWidget") == true })
        // The executable's own copy of LeakMonitor shares the registry with the library's.
        let dashboard = try audit.type("DynamicLibraryType.Dashboard")
        XCTAssertEqual(dashboard.int("allocatedTotal"), 3)
        XCTAssertEqual(dashboard.int("peakLive"), 1)
        XCTAssertEqual(dashboard.int("liveAtExit"), 0)
    }

    func testSharedLibraryCleanTwin() throws { try assertCleanTwin("DynamicLibraryType") }

    func testCrashAfterLeakingStillReportsEverything() throws {
        let audit = try Harness.audit("CrashAfterLeak")
        XCTAssertEqual(audit.status, 1, "over budget wins over the crash")
        let exit = try XCTUnwrap(audit.target["exit"] as? [String: Any])
        XCTAssertNotNil(exit.int("signal"), "\(exit)")
        let model = try audit.type(".DocumentViewModel")
        XCTAssertEqual(model.int("peakLive"), 4)
        XCTAssertEqual(model.allocations.first?.int("count"), 4)
    }

    func testCrashWithoutLeakIsATargetFailure() throws {
        try assertCleanTwin("CrashAfterLeak", status: 2)
    }

    func testNonZeroExitWithLeak() throws {
        let audit = try Harness.audit("ExitNonZero")
        XCTAssertEqual(audit.status, 1)
        XCTAssertEqual((audit.target["exit"] as? [String: Any])?.int("code"), 3)
        XCTAssertEqual(try audit.type(".Parser").int("peakLive"), 2)
    }

    func testNonZeroExitWithoutLeakIsATargetFailure() throws {
        try assertCleanTwin("ExitNonZero", status: 2)
        let audit = try Harness.audit("ExitNonZero", ["clean"])
        XCTAssertEqual((audit.target["exit"] as? [String: Any])?.int("code"), 3)
        XCTAssertEqual((audit.json["summary"] as? [String: Any])?.string("verdict"), "targetFailed")
    }

    func testXCTestBundleLeakyTest() throws {
        let bundle = try Harness.fixture("FixturesPackageTests.xctest")
        let audit = try Harness.audit("FixturesPackageTests.xctest", ["ScreenTests.ScreenTests/testLeaksScreens"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let screen = try audit.type(".ProfileScreen")
        XCTAssertEqual(screen.int("peakLive"), 3)
        let frames = try XCTUnwrap(screen.allocations.first).frames
        XCTAssertTrue(frames.contains { $0.string("function")?.contains("ScreenTests.testLeaksScreens()") == true }, "\(frames)")
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: bundle))
    }

    func testSwiftTestRunUnderLeakAudit() throws {
        // `swift test` starts the bundle once per testing library and closes inherited
        // descriptors on the way: every run of the bundle must still attach.
        _ = try Harness.fixturesBinDirectory.get()
        let swiftTest = ["test", "--skip-build", "--package-path", Harness.fixturesRoot.path, "--filter"]
        let leaky = try Harness.audit(path: "swift", swiftTest + ["ScreenTests.ScreenTests/testLeaksScreens"])
        XCTAssertEqual(leaky.status, 1, leaky.stderr)
        XCTAssertGreaterThanOrEqual(leaky.target["attachedProcesses"] as? Int ?? 0, 2)
        let screen = try leaky.type(".ProfileScreen")
        XCTAssertEqual(screen.int("peakLive"), 3)
        XCTAssertEqual(screen.allocations.first?.int("count"), 3)

        let clean = try Harness.audit(path: "swift", swiftTest + ["ScreenTests.ScreenTests/testReleasesScreens"])
        XCTAssertEqual(clean.status, 0, clean.stderr)
        XCTAssertEqual(try clean.type(".ProfileScreen").bool("exceeded"), false)
    }

    func testEveryInstrumentedProcessOfAScriptIsAudited() throws {
        let script = Harness.scratchPath("processes.sh")
        let text = "#!/bin/sh\n\(try Harness.fixture("GenericBoxes"))\n\(try Harness.fixture("ViewModelRetention")) clean\n"
        try text.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        let audit = try Harness.audit(path: script)
        XCTAssertEqual(audit.status, 1, audit.stderr)
        XCTAssertEqual(audit.target["attachedProcesses"] as? Int, 2)
        XCTAssertEqual(try audit.type(".Box<Swift.String>").bool("exceeded"), true)
        XCTAssertEqual(try audit.type(".Box<Swift.String>").int("peakLive"), 3)
        XCTAssertEqual(try audit.type(".LoginViewModel").int("peakLive"), 1)
        XCTAssertEqual(try audit.type(".LoginViewModel").int("allocatedTotal"), 3)
    }

    func testXCTestBundleCleanTest() throws {
        let audit = try Harness.audit("FixturesPackageTests.xctest", ["ScreenTests.ScreenTests/testReleasesScreens"])
        XCTAssertEqual(audit.status, 0, audit.stderr)
        XCTAssertEqual(try audit.type(".ProfileScreen").int("peakLive"), 1)
    }
}
