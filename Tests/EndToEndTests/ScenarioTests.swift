import Foundation
import LeakAuditModel
import XCTest

/// Each leaky fixture must be reported with exact counts and the allocating lines; each clean twin
/// must report nothing.
final class ScenarioTests: XCTestCase {
    /// Asserts that the clean twin of `fixture` is not reported and leak-audit exits `status`.
    private func assertCleanTwin(_ fixture: String, status: Int32 = 0, file: StaticString = #filePath, line: UInt = #line) throws
    {
        let audit = try Harness.audit(fixture, ["clean"])
        XCTAssertEqual(audit.status, status, audit.stderr, file: file, line: line)
        XCTAssertFalse(audit.report.types.isEmpty, "the clean twin still tracks its types", file: file, line: line)
        for type in audit.report.types {
            XCTAssertEqual(type.exceeded, false, "\(type)", file: file, line: line)
            XCTAssertTrue(type.allocations.isEmpty, "\(type)", file: file, line: line)
        }
        XCTAssertEqual(audit.report.exceededTypes.count, 0, file: file, line: line)
    }

    func testViewModelKeptByLongLivedOwnerIsReportedWithItsAllocatingLines() throws {
        let audit = try Harness.audit("ViewModelRetention")
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let model = try audit.trackedType(".LoginViewModel")
        XCTAssertEqual(model.name, "ViewModelRetention.LoginViewModel")
        XCTAssertEqual(model.max, 1)
        XCTAssertEqual(model.peakLive, 3)
        XCTAssertEqual(model.liveAtExit, 3)
        XCTAssertEqual(model.exceeded, true)
        let groups = model.allocations
        XCTAssertEqual(groups.map { $0.count }, [3])
        let frames = try XCTUnwrap(groups.first).frames
        // The first frame is the user's code: LeakMonitor's own frames are dropped.
        let first = try XCTUnwrap(frames.first)
        XCTAssertEqual(first.function?.hasPrefix("ViewModelRetention.LoginViewModel.init("), true, "\(first)")
        XCTAssertEqual(first.file?.hasSuffix("Sources/ViewModelRetention/main.swift"), true)
        let validateLine = try Harness.line(
            of: "MemoryLeakMonitor.validate(self)", inFixtureSource: "Sources/ViewModelRetention/main.swift")
        XCTAssertEqual(first.line, validateLine)
        let openLine = try Harness.line(
            of: "let model = LoginViewModel(title: title)", inFixtureSource: "Sources/ViewModelRetention/main.swift")
        XCTAssertTrue(
            frames.contains { $0.function?.contains("Presenter.open(") == true && $0.line == openLine },
            "\(frames)")
        XCTAssertFalse(frames.contains { $0.function?.contains("MemoryLeakMonitor") == true })
        XCTAssertEqual(
            audit.stdout, "ViewModelRetention: opened and closed 3 screens\n", "the target's stdout passes through untouched")
    }

    func testViewModelCleanTwin() throws { try assertCleanTwin("ViewModelRetention") }

    func testDismissalClosureCapturingItsOwnerLeaksBoth() throws {
        let audit = try Harness.audit("DismissalCapture")
        XCTAssertEqual(audit.status, 1)
        for name in [".CheckoutFlow", ".SheetViewModel"] {
            let type = try audit.trackedType(name)
            XCTAssertEqual(type.peakLive, 2, name)
            XCTAssertEqual(type.liveAtExit, 2, name)
        }
    }

    func testDismissalCleanTwin() throws { try assertCleanTwin("DismissalCapture") }

    func testSubclassHasItsOwnBudget() throws {
        let audit = try Harness.audit("CoordinatorBudgets")
        XCTAssertEqual(audit.status, 1)
        let archive = try audit.trackedType(".ArchiveCoordinator")
        XCTAssertEqual(archive.max, 2)
        XCTAssertEqual(archive.peakLive, 3)
        XCTAssertEqual(archive.exceeded, true)
        let base = try audit.trackedType(".Coordinator")
        XCTAssertEqual(base.max, 1)
        XCTAssertEqual(base.peakLive, 1)
        XCTAssertEqual(base.exceeded, false)
    }

    func testSubclassBudgetCleanTwin() throws { try assertCleanTwin("CoordinatorBudgets") }

    func testObserversInAStrongArrayOutliveTheirScreens() throws {
        let audit = try Harness.audit("WeakObservers")
        XCTAssertEqual(audit.status, 1)
        let label = try audit.trackedType(".PriceLabel")
        XCTAssertEqual(label.peakLive, 5)
        XCTAssertEqual(label.liveAtExit, 5)
    }

    func testObserversInAWeakArrayAreReleased() throws {
        try assertCleanTwin("WeakObservers")
        let label = try Harness.audit("WeakObservers", ["clean"]).trackedType(".PriceLabel")
        XCTAssertEqual(label.liveAtExit, 0)
        XCTAssertEqual(label.allocatedTotal, 5)
    }

    func testCountsAreExactAcrossEightThreads() throws {
        let audit = try Harness.audit("ConcurrentSessions")
        XCTAssertEqual(audit.status, 1)
        let session = try audit.trackedType(".Session")
        XCTAssertEqual(session.liveAtExit, 320)
        XCTAssertEqual(session.allocatedTotal, 160_000)
        // The peak is the 320 parked sessions plus at most one in flight per thread.
        let peak = session.peakLive
        XCTAssertTrue((320...328).contains(peak), "peak \(peak)")
        XCTAssertEqual(session.allocations.reduce(0) { $0 + $1.count }, peak)
    }

    func testATinyRingMakesWritersWaitButLosesNothing() throws {
        // 64 slots: eight threads lap the ring constantly and wait for leak-audit to catch up.
        let audit = try Harness.audit(
            path: try Harness.fixture("ConcurrentSessions"), environment: ["LEAK_AUDIT_CHANNEL_SLOTS": "64"])
        XCTAssertEqual(audit.status, 1)
        let session = try audit.trackedType(".Session")
        XCTAssertEqual(session.liveAtExit, 320)
        XCTAssertEqual(session.allocatedTotal, 160_000)
        XCTAssertEqual(audit.report.droppedRecords, 0)
        XCTAssertEqual(audit.report.tornRecords, 0)
    }

    func testManyThreadsCleanTwin() throws {
        try assertCleanTwin("ConcurrentSessions")
        let session = try Harness.audit("ConcurrentSessions", ["clean"]).trackedType(".Session")
        XCTAssertEqual(session.liveAtExit, 0)
        XCTAssertEqual(session.allocatedTotal, 160_000)
        XCTAssertLessThanOrEqual(session.peakLive, 8)
    }

    /// One thread allocates one type from stacks that differ at their first frame, in their middle
    /// and past the deepest capture, one after another: each instance is counted under its own
    /// stack, and each group shows its own frames.
    func testStacksThatFollowEachOtherOnOneThreadAreCountedApart() throws {
        let audit = try Harness.audit("StackVariety")
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let session = try audit.trackedType(".Session")
        XCTAssertEqual(session.peakLive, 20)
        // Grouped by constructing line: the three recursions' stacks are one group.
        let groups = session.allocations
        XCTAssertEqual(groups.map { $0.count }, [15, 3, 2])
        func functions(_ group: AuditReport.AllocationGroup) -> [String] { group.frames.map { $0.function ?? "?" } }
        XCTAssertEqual(groups[0].truncated, true)
        XCTAssertEqual(functions(groups[0]).filter { $0.contains("openNested(") }.count, functions(groups[0]).count - 2)
        for (group, site, other) in [
            (groups[1], "openFromMenu()", "openFromLink()"), (groups[2], "openFromLink()", "openFromMenu()"),
        ] {
            XCTAssertEqual(group.truncated, false)
            XCTAssertTrue(functions(group).contains { $0.contains(site) }, "\(functions(group))")
            XCTAssertFalse(functions(group).contains { $0.contains(other) || $0.contains("openNested(") })
            XCTAssertTrue(functions(group).contains { $0.contains("StackVariety_main") || $0 == "main" }, "\(functions(group))")
        }
    }

    func testStackVarietyCleanTwin() throws { try assertCleanTwin("StackVariety") }

    /// More distinct stacks than the shim's first table holds (262,144 from one recursion, before
    /// the leaky run's sessions): the sessions kept after them still have their stacks, grouped as
    /// without them, and no warning says stacks were lost.
    func testStacksPastTheFirstStackTableAreStillRecorded() throws {
        let audit = try Harness.audit("StackVariety", ["flood"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        XCTAssertFalse(audit.report.warnings.contains { $0.contains("allocation stacks") }, "\(audit.report.warnings)")
        let session = try audit.trackedType(".Session")
        XCTAssertEqual(session.allocatedTotal, (1 << 18) + 20)
        XCTAssertEqual(session.allocations.map { $0.count }, [15, 3, 2])
        XCTAssertFalse(session.allocations.contains { $0.frames.isEmpty }, "\(session.allocations)")
    }

    func testHundredThousandLeakedInstancesAreCountedExactly() throws {
        let audit = try Harness.audit("LargeLeak")
        XCTAssertEqual(audit.status, 1)
        let entry = try audit.trackedType(".CacheEntry")
        XCTAssertEqual(entry.peakLive, 100_000)
        XCTAssertEqual(entry.liveAtExit, 100_000)
        XCTAssertEqual(entry.allocations.map { $0.count }, [100_000], "one allocating stack")
        XCTAssertEqual(audit.report.exceededTypes.reduce(0) { $0 + $1.overBudget }, 100_000 - 64)
    }

    func testLargeCacheCleanTwin() throws {
        try assertCleanTwin("LargeLeak")
        let entry = try Harness.audit("LargeLeak", ["clean"]).trackedType(".CacheEntry")
        XCTAssertEqual(entry.peakLive, 64)
        XCTAssertEqual(entry.allocatedTotal, 100_000)
    }

    func testReleaseBuildStillNamesTheUserLines() throws {
        let path = try Harness.releaseFixture("ViewModelRetention")
        let audit = try Harness.audit(path: path)
        XCTAssertEqual(audit.status, 1)
        let model = try audit.trackedType(".LoginViewModel")
        XCTAssertEqual(model.peakLive, 3)
        let frames = try XCTUnwrap(model.allocations.first).frames
        let validateLine = try Harness.line(
            of: "MemoryLeakMonitor.validate(self)", inFixtureSource: "Sources/ViewModelRetention/main.swift")
        let first = try XCTUnwrap(frames.first)
        XCTAssertEqual(first.function?.hasPrefix("ViewModelRetention.LoginViewModel.init("), true, "\(frames)")
        XCTAssertEqual(first.line, validateLine)
        XCTAssertTrue(frames.contains { $0.function?.contains("Presenter.open(") == true }, "\(frames)")
    }

    func testContextsKeptByAnActorAcrossConcurrentTasks() throws {
        let audit = try Harness.audit("AsyncRequests")
        XCTAssertEqual(audit.status, 1)
        let context = try audit.trackedType(".RequestContext")
        XCTAssertEqual(context.peakLive, 200)
        XCTAssertEqual(context.liveAtExit, 200)
        let frames = try XCTUnwrap(context.allocations.first).frames
        let initLine = try Harness.line(
            of: "MemoryLeakMonitor.validate(self)", inFixtureSource: "Sources/AsyncRequests/main.swift")
        XCTAssertEqual(frames.first?.line, initLine, "\(frames)")
        let handleLine = try Harness.line(
            of: "let context = RequestContext(path: path)", inFixtureSource: "Sources/AsyncRequests/main.swift")
        XCTAssertTrue(
            frames.contains {
                $0.function?.contains("AsyncRequests.handle(path:") == true && $0.line == handleLine
            },
            "the async function that allocated is named: \(frames)")
    }

    func testConcurrentTasksCleanTwin() throws {
        try assertCleanTwin("AsyncRequests")
        let context = try Harness.audit("AsyncRequests", ["clean"]).trackedType(".RequestContext")
        XCTAssertEqual(context.liveAtExit, 0)
        XCTAssertEqual(context.allocatedTotal, 200)
    }

    func testGenericSpecializationsHaveSeparateBudgets() throws {
        let audit = try Harness.audit("GenericBoxes")
        XCTAssertEqual(audit.status, 1)
        let strings = try audit.trackedType(".Box<Swift.String>")
        XCTAssertEqual(strings.name, "GenericBoxes.Box<Swift.String>")
        XCTAssertEqual(strings.peakLive, 3)
        XCTAssertEqual(strings.exceeded, true)
        let ints = try audit.trackedType(".Box<Swift.Int>")
        XCTAssertEqual(ints.peakLive, 2)
        XCTAssertEqual(ints.exceeded, false)
    }

    func testGenericCleanTwin() throws { try assertCleanTwin("GenericBoxes") }

    func testTypeInASharedLibraryIsCountedAndSymbolized() throws {
        let audit = try Harness.audit("DynamicLibraryType")
        XCTAssertEqual(audit.status, 1)
        let widget = try audit.trackedType("WidgetKit.Widget")
        XCTAssertEqual(widget.peakLive, 3)
        let first = try XCTUnwrap(widget.allocations.first?.frames.first)
        XCTAssertEqual(first.module?.hasSuffix("libWidgetKit.so"), true, "\(first)")
        XCTAssertEqual(first.file?.hasSuffix("WidgetKit/Sources/WidgetKit/Widget.swift"), true, "\(first)")
        XCTAssertTrue(
            widget.allocations[0].frames.contains { $0.function?.contains("WidgetFactory.makeWidget") == true })
        // The executable's own copy of LeakMonitor shares the registry with the library's.
        let dashboard = try audit.trackedType("DynamicLibraryType.Dashboard")
        XCTAssertEqual(dashboard.allocatedTotal, 3)
        XCTAssertEqual(dashboard.peakLive, 1)
        XCTAssertEqual(dashboard.liveAtExit, 0)
    }

    func testSharedLibraryCleanTwin() throws { try assertCleanTwin("DynamicLibraryType") }

    func testCrashAfterLeakingStillReportsEverything() throws {
        let audit = try Harness.audit("CrashAfterLeak")
        XCTAssertEqual(audit.status, 1, "over budget wins over the crash")
        XCTAssertNotNil(audit.report.target.outcome.signal, "\(audit.report.target.outcome)")
        let model = try audit.trackedType(".DocumentViewModel")
        XCTAssertEqual(model.peakLive, 4)
        XCTAssertEqual(model.allocations.first?.count, 4)
    }

    func testCrashWithoutLeakIsATargetFailure() throws {
        try assertCleanTwin("CrashAfterLeak", status: 2)
    }

    func testNonZeroExitWithLeak() throws {
        let audit = try Harness.audit("ExitNonZero")
        XCTAssertEqual(audit.status, 1)
        XCTAssertEqual(audit.report.target.outcome.exitCode, 3)
        XCTAssertEqual(try audit.trackedType(".Parser").peakLive, 2)
    }

    func testNonZeroExitWithoutLeakIsATargetFailure() throws {
        try assertCleanTwin("ExitNonZero", status: 2)
        let audit = try Harness.audit("ExitNonZero", ["clean"])
        XCTAssertEqual(audit.report.target.outcome.exitCode, 3)
        XCTAssertEqual(audit.report.verdict, .targetFailed)
    }

    func testXCTestBundleLeakyTest() throws {
        let bundle = try Harness.fixture("FixturesPackageTests.xctest")
        let audit = try Harness.audit("FixturesPackageTests.xctest", ["ScreenTests.ScreenTests/testLeaksScreens"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let screen = try audit.trackedType(".ProfileScreen")
        XCTAssertEqual(screen.peakLive, 3)
        let frames = try XCTUnwrap(screen.allocations.first).frames
        XCTAssertTrue(frames.contains { $0.function?.contains("ScreenTests.testLeaksScreens()") == true }, "\(frames)")
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: bundle))
    }

    func testSwiftTestRunUnderLeakAudit() throws {
        // `swift test` starts the bundle once per testing library and closes inherited
        // descriptors on the way: every run of the bundle must still attach.
        _ = try Harness.fixturesBinDirectory.get()
        let swiftTest = ["test", "--skip-build", "--package-path", Harness.fixturesRoot.path, "--filter"]
        let leaky = try Harness.audit(path: "swift", swiftTest + ["ScreenTests.ScreenTests/testLeaksScreens"])
        XCTAssertEqual(leaky.status, 1, leaky.stderr)
        XCTAssertGreaterThanOrEqual(leaky.report.target.attachedProcesses, 2)
        let screen = try leaky.trackedType(".ProfileScreen")
        XCTAssertEqual(screen.peakLive, 3)
        XCTAssertEqual(screen.allocations.first?.count, 3)

        let clean = try Harness.audit(path: "swift", swiftTest + ["ScreenTests.ScreenTests/testReleasesScreens"])
        XCTAssertEqual(clean.status, 0, clean.stderr)
        XCTAssertEqual(try clean.trackedType(".ProfileScreen").exceeded, false)
    }

    func testEveryInstrumentedProcessOfAScriptIsAudited() throws {
        let script = Harness.scratchPath("processes.sh")
        let text = "#!/bin/sh\n\(try Harness.fixture("GenericBoxes"))\n\(try Harness.fixture("ViewModelRetention")) clean\n"
        try text.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        let audit = try Harness.audit(path: script)
        XCTAssertEqual(audit.status, 1, audit.stderr)
        XCTAssertEqual(audit.report.target.attachedProcesses, 2)
        XCTAssertEqual(try audit.trackedType(".Box<Swift.String>").exceeded, true)
        XCTAssertEqual(try audit.trackedType(".Box<Swift.String>").peakLive, 3)
        XCTAssertEqual(try audit.trackedType(".LoginViewModel").peakLive, 1)
        XCTAssertEqual(try audit.trackedType(".LoginViewModel").allocatedTotal, 3)
    }

    func testXCTestBundleCleanTest() throws {
        let audit = try Harness.audit("FixturesPackageTests.xctest", ["ScreenTests.ScreenTests/testReleasesScreens"])
        XCTAssertEqual(audit.status, 0, audit.stderr)
        XCTAssertEqual(try audit.trackedType(".ProfileScreen").peakLive, 1)
    }
}
