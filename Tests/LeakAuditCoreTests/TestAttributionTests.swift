import LeakAuditRendering
import LeakAuditWire
import XCTest

@testable import LeakAuditCore
@testable import LeakAuditModel

/// Which test left what alive: test phases replayed into the ledger, the tests that ran, and the
/// report's per-test findings.
final class TestAttributionTests: XCTestCase {
    private struct Replay {
        var ledger = LifetimeLedger()
        var sequence: UInt64 = 0

        mutating func apply(_ event: WireEvent) {
            ledger.apply(event)
            sequence += 1
        }
        mutating func type(_ id: UInt32, _ name: String, budget: WireBudget = .code) {
            apply(.typeDefined(id: id, name: name, max: 100, budget: budget))
        }
        mutating func test(_ id: UInt32, _ name: String) { apply(.testDefined(id: id, name: name)) }
        mutating func phase(_ id: UInt32, _ phase: Int) {
            apply(.testPhase(id: id, phase: UInt32(phase), sequence: sequence))
        }
        mutating func alloc(_ type: UInt32, _ object: UInt64, test: UInt32?, stack: UInt32 = 0) {
            apply(.allocated(typeID: type, object: object, stackID: stack, sequence: sequence, test: test))
        }
        mutating func free(_ type: UInt32, _ object: UInt64, time: UInt64 = 0) {
            apply(.deallocated(typeID: type, object: object, sequence: sequence, time: time))
        }
        /// The test bundle's process attaches, with these LA_PROCESS_* flags.
        mutating func attach(_ commandLine: [String], flags: Int) {
            apply(.processAttached(AttachedProcess(pid: 7, commandLine: commandLine, flags: UInt32(flags))))
        }
    }

    /// A run of AppPackageTests.xctest that recorded `replay`.
    private func recordedRun(_ replay: Replay, watch: WatchOptions = WatchOptions()) -> RecordedRun {
        RecordedRun(
            request: AuditRequest(target: "AppPackageTests.xctest", arguments: [], watch: watch),
            plan: RunPlan(executablePath: "/b/AppPackageTests.xctest", watch: watch), outcome: .exited(code: 0),
            received: Reception(ledgers: [0: replay.ledger], channel: ChannelSummary(attached: true, attachedProcesses: 1)))
    }

    private func leaks(_ replay: Replay) -> [String: Int] {
        Dictionary(uniqueKeysWithValues: replay.ledger.leaksByTest().map { ($0.name, $0.leaks.count) })
    }

    func testASwiftTestingTestIsJudgedAfterItsLastRunNotAfterPlanning() {
        var replay = Replay()
        replay.type(0, "App.Model")
        replay.test(0, "AppTests/loads()")
        // Planning sets the test as current with no case: the probe reports no run then. A run
        // that was reported early (a retry) must not freeze the verdict while the test runs again.
        replay.phase(0, LA_TEST_STARTED)
        replay.phase(0, LA_TEST_FINISHED)
        replay.phase(0, LA_TEST_STARTED)
        replay.alloc(0, 0x100, test: 0)
        replay.phase(0, LA_TEST_SETTLED)  // the first run's grace period ends during the second run
        replay.free(0, 0x100)
        replay.phase(0, LA_TEST_FINISHED)
        replay.phase(0, LA_TEST_SETTLED)
        XCTAssertEqual(leaks(replay), ["AppTests/loads()": 0])
    }

    func testParallelCasesSettleOnlyWhenEveryCaseHasSettled() {
        var replay = Replay()
        replay.type(0, "App.Model")
        replay.test(0, "AppTests/cases(_:)")
        replay.phase(0, LA_TEST_STARTED)
        replay.phase(0, LA_TEST_STARTED)
        replay.alloc(0, 0x100, test: 0)
        replay.alloc(0, 0x200, test: 0)
        replay.phase(0, LA_TEST_FINISHED)
        replay.phase(0, LA_TEST_SETTLED)  // one case over; the other still runs and holds 0x200
        replay.free(0, 0x200)
        replay.phase(0, LA_TEST_FINISHED)
        replay.phase(0, LA_TEST_SETTLED)
        replay.free(0, 0x100)  // released after both grace periods: leaked by the test
        XCTAssertEqual(leaks(replay), ["AppTests/cases(_:)": 1])
    }

    func testTestsThatRanAreCountedAndSuitesSeenOnlyOnAllocationsAreNot() throws {
        var replay = Replay()
        replay.attach(
            ["AppPackageTests.xctest", "--testing-library", "swift-testing"],
            flags: LA_PROCESS_TEST_BUNDLE | LA_PROCESS_SWIFT_TESTING | LA_PROCESS_TESTS_OBSERVED)
        replay.type(0, "App.Model", budget: .pattern(index: 0))
        replay.type(1, "Testing.Runner", budget: .pattern(index: 0))
        replay.test(0, "AppTests")  // a suite: allocations only
        replay.test(1, "AppTests/a()")
        replay.test(2, "AppTests/b()")
        replay.alloc(0, 0x100, test: 0)
        replay.alloc(0, 0x110, test: 0)
        for id: UInt32 in [1, 2] {
            replay.phase(id, LA_TEST_STARTED)
            replay.alloc(1, 0x200 + UInt64(id), test: id)  // the harness's own object: never a leak
            replay.phase(id, LA_TEST_FINISHED)
            replay.phase(id, LA_TEST_SETTLED)
        }
        var watch = WatchOptions(budgets: [try BudgetPattern(parsing: "*=100", origin: "--budget")])
        watch.leaksPerTest = true
        let report = ReportBuilder(toolVersion: "1").build(from: recordedRun(replay, watch: watch))
        XCTAssertNil(report.notAudited)
        XCTAssertEqual(report.target.testsRun, 2)
        XCTAssertEqual(report.target.processes.map(\.testingLibrary), [.swiftTesting])
        XCTAssertEqual(report.tests?.map(\.name), ["AppTests", "AppTests/a()", "AppTests/b()"])
        XCTAssertEqual(report.tests?.map(\.ran), [false, true, true])
        XCTAssertEqual(report.tests?.first?.leaked.map(\.count), [2])
        XCTAssertEqual(report.tests?.dropFirst().flatMap(\.leaked).count, 0)
        XCTAssertTrue(
            TextReportRenderer(workingDirectory: "/").render(report)
                .contains("tests: 1 of 2 tests left instances alive after they finished"))
    }

    func testATestBundleThatRanNoTestIsNotAudited() {
        var replay = Replay()
        replay.attach(["AppPackageTests.xctest"], flags: LA_PROCESS_TEST_BUNDLE | LA_PROCESS_TESTS_OBSERVED)
        let report = ReportBuilder(toolVersion: "1").build(from: recordedRun(replay))
        XCTAssertEqual(report.notAudited, .noTestsRan)
        XCTAssertEqual(report.verdict, .notAudited)

        // Tests that could not be counted are not claimed to be none.
        var uncounted = Replay()
        uncounted.attach(["AppPackageTests.xctest"], flags: LA_PROCESS_TEST_BUNDLE)
        XCTAssertNil(ReportBuilder(toolVersion: "1").build(from: recordedRun(uncounted)).notAudited)
    }

    func testOneTimeInitializerFramesMarkGlobalState() {
        func frame(_ function: String?) -> SymbolizedFrame {
            SymbolizedFrame(
                address: 1, module: nil, moduleOffset: nil, function: function, file: nil, line: nil, column: nil, inlined: false)
        }
        XCTAssertTrue(ReportBuilder.isOneTimeInitialization(frame("one-time initialization function for shared")))
        XCTAssertTrue(
            ReportBuilder.isOneTimeInitialization(
                frame("swift::threading_impl::once_slow(swift::threading_impl::once_t&, void (*)(void*), void*)")))
        XCTAssertTrue(ReportBuilder.isOneTimeInitialization(frame("swift_once")))
        XCTAssertFalse(ReportBuilder.isOneTimeInitialization(frame("App.Cache.shared.unsafeMutableAddressor : App.Cache")))
        XCTAssertFalse(ReportBuilder.isOneTimeInitialization(frame("App.once() -> ()")))
        XCTAssertFalse(ReportBuilder.isOneTimeInitialization(frame(nil)))
    }

    private func frame(_ function: String, _ file: String? = nil, _ line: Int? = nil) -> SymbolizedFrame {
        SymbolizedFrame(
            address: 1, module: nil, moduleOffset: nil, function: function, file: file, line: line, column: nil, inlined: false)
    }

    func testTheConstructingFrameIsTheCallerOfTheTypesOutermostInitializer() {
        let frames = [
            frame("App.Base.init(name: Swift.String) -> App.Base", "/s/Base.swift", 4),
            frame("App.Screen.init() -> App.Screen", "/s/Screen.swift", 9),
            frame("App.Screen.__allocating_init() -> App.Screen", "/s/Screen.swift", nil),
            frame("App.Screen.init(title: Swift.String) -> App.Screen", "/s/Screen.swift", 12),
            frame("App.Router.open() -> ()", "/s/Router.swift", 30),
            frame("main", "/s/main.swift", 3),
        ]
        let constructing = AuditReport.AllocationGroup.constructingFrame(in: frames, typeName: "App.Screen")
        XCTAssertEqual(constructing?.line, 30, "past super.init, convenience init and the allocating thunk")
        // Generic arguments are not part of an initializer's name.
        let generic = [frame("App.Box.init(_: A) -> App.Box<A>", "/s/Box.swift", 2), frame("App.f() -> ()", "/s/f.swift", 7)]
        XCTAssertEqual(AuditReport.AllocationGroup.constructingFrame(in: generic, typeName: "App.Box<Swift.Int>")?.line, 7)
        // A type's own initializer not found by name: past the leading run of initializers.
        let unnamed = [
            frame("App.(Hidden in _0ABC).init() -> App.(Hidden in _0ABC)", "/s/h.swift", 5),
            frame("App.g() -> ()", "/s/g.swift", 8),
        ]
        XCTAssertEqual(
            AuditReport.AllocationGroup.constructingFrame(in: unnamed, typeName: "App.(unknown context).Hidden")?.line, 8)
        // An initializer declared in a constrained extension is still the type's own.
        let extended = [
            frame("App.Tree.__allocating_init(A) -> App.Tree<A>"),
            frame(
                "(extension in App):App.Tree<A where A == App.Command.Type>.init(root: App.Command.Type) throws", "/s/Tree.swift",
                95),
            frame("App.Parser.init(App.Command.Type) -> App.Parser", "/s/Parser.swift", 47),
        ]
        XCTAssertEqual(
            AuditReport.AllocationGroup.constructingFrame(in: extended, typeName: "App.Tree<App.Command.Type>")?.line, 47)
        // Only initializers: the first frame with a line.
        XCTAssertEqual(
            AuditReport.AllocationGroup.constructingFrame(in: Array(frames.prefix(2)), typeName: "App.Screen")?.line, 4)
    }

    func testALineWhoseInstancesLaterTestsReplacedIsGlobalStateButOneThatAccumulatesIsALeak() {
        // Tests 0 and 1 each run `Harness.init` (helper.swift:10), which makes a Config; a bootstrap
        // keeps the latest one past the test's end, until the next test replaces it.
        func stack(_ test: String) -> [SymbolizedFrame] {
            [
                frame("App.Config.__allocating_init() -> App.Config"),
                frame("AppTests.Harness.init() -> AppTests.Harness", "/t/helper.swift", 10),
                frame("AppTests.\(test)() -> ()", "/t/Tests.swift", test == "a" ? 20 : 30),
            ]
        }
        let frames: [UInt32: [SymbolizedFrame]] = [1: stack("a"), 2: stack("b")]
        func classify(_ replay: Replay) -> [String: AuditReport.GlobalStateReason] {
            let leaks = replay.ledger.leaksByTest().flatMap { test in test.leaks.map { (test.name, $0) } }
            let outlived = replay.ledger.outlivedByTest().flatMap { test in test.outlived.map { (test.name, $0) } }
            let reasons = ReportBuilder.globalState(among: leaks, outlived: outlived, in: replay.ledger) { frames[$0] ?? [] }
            return Dictionary(uniqueKeysWithValues: leaks.compactMap { test, leak in reasons[leak].map { (test, $0) } })
        }
        func run(_ body: (inout Replay) -> Void) -> Replay {
            var replay = Replay()
            replay.type(0, "App.Config")
            replay.test(0, "a")
            replay.test(1, "b")
            body(&replay)
            return replay
        }

        // Replaced: each test's Config outlives the test; a's is released while b runs.
        let bootstrap = run { replay in
            replay.phase(0, LA_TEST_STARTED)
            replay.alloc(0, 0x100, test: 0, stack: 1)
            replay.phase(0, LA_TEST_FINISHED)
            replay.phase(0, LA_TEST_SETTLED)
            replay.phase(1, LA_TEST_STARTED)
            replay.alloc(0, 0x200, test: 1, stack: 2)
            replay.free(0, 0x100)
            replay.phase(1, LA_TEST_FINISHED)
            replay.phase(1, LA_TEST_SETTLED)
        }
        XCTAssertEqual(classify(bootstrap), ["a": .replacedByLaterTests, "b": .replacedByLaterTests])

        // A shared helper line whose instance dies within the test that does not leak: b's leak is b's.
        let helper = run { replay in
            replay.phase(0, LA_TEST_STARTED)
            replay.alloc(0, 0x100, test: 0, stack: 1)
            replay.free(0, 0x100)
            replay.phase(0, LA_TEST_FINISHED)
            replay.phase(0, LA_TEST_SETTLED)
            replay.phase(1, LA_TEST_STARTED)
            replay.alloc(0, 0x200, test: 1, stack: 2)
            replay.phase(1, LA_TEST_FINISHED)
            replay.phase(1, LA_TEST_SETTLED)
        }
        XCTAssertEqual(classify(helper), [:])
        XCTAssertEqual(leaks(helper), ["a": 0, "b": 1])

        // Both still alive at the end: they accumulate, each test leaked its own.
        let accumulating = run { replay in
            for test: UInt32 in [0, 1] {
                replay.phase(test, LA_TEST_STARTED)
                replay.alloc(0, 0x100 + UInt64(test) * 0x100, test: test, stack: test + 1)
                replay.phase(test, LA_TEST_FINISHED)
                replay.phase(test, LA_TEST_SETTLED)
            }
        }
        XCTAssertEqual(classify(accumulating), [:])
        XCTAssertEqual(leaks(accumulating), ["a": 1, "b": 1])
    }

    func testWhatATestsGlobalStateHeldIsGlobalStateWhenItDiesRightAfterItAndALeakOtherwise() {
        // Tests a, b and c each bootstrap a metrics system (Harness.init, helper.swift:10), which the
        // next bootstrap replaces; a also makes a counter (Tests.swift:40), which a's system keeps.
        // Both are alive when a settles; b's bootstrap releases them (swift-metrics' counters()).
        func system(_ test: String) -> [SymbolizedFrame] {
            [
                frame("App.Metrics.__allocating_init() -> App.Metrics"),
                frame("AppTests.Harness.init() -> AppTests.Harness", "/t/helper.swift", 10),
                frame("AppTests.\(test)() -> ()", "/t/Tests.swift", ["a": 20, "b": 30, "c": 50][test]),
            ]
        }
        let counter = [
            frame("App.Counter.__allocating_init() -> App.Counter"),
            frame("AppTests.a() -> ()", "/t/Tests.swift", 40),
        ]
        let frames: [UInt32: [SymbolizedFrame]] = [1: system("a"), 2: system("b"), 3: counter, 4: system("c")]
        /// Why a's instances are global state, by type name ("leak": they are not), when `duringB`
        /// runs in b after its bootstrap, and `duringC` in c after its own has released b's system.
        func reasons(duringB: (inout Replay) -> Void, duringC: (inout Replay) -> Void = { _ in }) -> [String: String] {
            var replay = Replay()
            replay.type(0, "App.Metrics")
            replay.type(1, "App.Counter")
            replay.type(2, "App.Scratch")
            for (id, name) in ["a", "b", "c"].enumerated() { replay.test(UInt32(id), name) }
            replay.phase(0, LA_TEST_STARTED)
            replay.alloc(0, 0x100, test: 0, stack: 1)
            replay.alloc(1, 0x180, test: 0, stack: 3)
            replay.phase(0, LA_TEST_FINISHED)
            replay.phase(0, LA_TEST_SETTLED)
            replay.phase(1, LA_TEST_STARTED)
            replay.alloc(0, 0x200, test: 1, stack: 2)
            duringB(&replay)
            replay.phase(1, LA_TEST_FINISHED)
            replay.phase(1, LA_TEST_SETTLED)
            replay.phase(2, LA_TEST_STARTED)
            replay.alloc(0, 0x300, test: 2, stack: 4)
            replay.free(0, 0x200, time: 900)  // c's bootstrap releases b's system
            duringC(&replay)
            replay.phase(2, LA_TEST_FINISHED)
            replay.phase(2, LA_TEST_SETTLED)
            let leaks = replay.ledger.leaksByTest().flatMap { test in test.leaks.map { (test.name, $0) } }
            let outlived = replay.ledger.outlivedByTest().flatMap { test in test.outlived.map { (test.name, $0) } }
            let found = ReportBuilder.globalState(among: leaks, outlived: outlived, in: replay.ledger) { frames[$0] ?? [] }
            return Dictionary(
                uniqueKeysWithValues: leaks.filter { $0.0 == "a" }.map { _, leak in
                    (leak.typeID == 0 ? "App.Metrics" : "App.Counter", found[leak]?.rawValue ?? "leak")
                })
        }
        /// `count` instances of b, each made and released during it: deaths of tests' instances.
        func scratch(_ replay: inout Replay, count: Int) {
            for index in 0..<UInt64(count) {
                replay.alloc(2, 0x1000 + index * 0x10, test: 1, stack: 5)
                replay.free(2, 0x1000 + index * 0x10, time: 500)
            }
        }
        let held = ["App.Metrics": "replacedByLaterTests", "App.Counter": "releasedWithGlobalState"]
        let leaked = ["App.Metrics": "replacedByLaterTests", "App.Counter": "leak"]

        /// b's bootstrap releases a's system; then `between` other deaths of tests' instances; then
        /// a's counter dies, at `time`.
        func counterAfterSystem(between: Int, at time: UInt64) -> [String: String] {
            reasons { replay in
                replay.free(0, 0x100, time: 500)
                scratch(&replay, count: between)
                replay.free(1, 0x180, time: time)
            }
        }
        // Released right after the system that held it, as one deinit releases them; or with other
        // deaths in between (what the system held that a did not leave, other tests'), and a later
        // stamp (a cascade that the reader's clock moved on during).
        XCTAssertEqual(counterAfterSystem(between: 0, at: 500), held)
        XCTAssertEqual(counterAfterSystem(between: 64, at: 550), held)
        // Too many deaths after it, or too long after it: a's leak. So is a counter released before
        // the system, or never.
        XCTAssertEqual(counterAfterSystem(between: 65, at: 500), leaked)
        XCTAssertEqual(counterAfterSystem(between: 0, at: 551), leaked)
        XCTAssertEqual(
            reasons {
                $0.free(1, 0x180, time: 500)
                $0.free(0, 0x100, time: 500)
            }, leaked)
        XCTAssertEqual(reasons { $0.free(0, 0x100, time: 500) }, leaked)
        // Released right after another test's global state (b's system, which c replaces): a's leak.
        XCTAssertEqual(
            reasons(
                duringB: { replay in
                    replay.free(0, 0x100, time: 500)
                    scratch(&replay, count: 65)
                },
                duringC: { $0.free(1, 0x180, time: 900) }), leaked)
    }

    /// What a test left alive when it settled and the run released while its process's tests still
    /// ran is set apart (`releasedLater`), with how long after the test finished it went; so is what
    /// the walk made for the test did not find alive, and whose death the ledger records. What died
    /// only after the last test finished (XCTest releases its test case objects then), or never,
    /// stays the test's leak.
    func testWhatTheRunReleasesIsReleasedLaterAndWhatItKeepsToItsEndIsALeak() {
        var replay = Replay()
        replay.type(0, "App.Job")
        replay.test(0, "AppTests.T/testA")
        replay.test(1, "AppTests.T/testB")
        replay.phase(0, Int(LA_TEST_STARTED))
        for object: UInt64 in [0x100, 0x200, 0x300, 0x400, 0x500] { replay.alloc(0, object, test: 0) }
        replay.apply(.testPhase(id: 0, phase: UInt32(LA_TEST_FINISHED), sequence: replay.sequence, time: 1000))
        replay.phase(0, Int(LA_TEST_SETTLED))
        replay.phase(1, Int(LA_TEST_STARTED))
        replay.free(0, 0x100, time: 1300)  // a timer's: released 300 ms after testA finished
        replay.free(0, 0x400, time: 1010)
        replay.phase(1, Int(LA_TEST_FINISHED))
        replay.free(0, 0x200, time: 9000)  // released at the process's end; 0x300 never
        replay.free(0, 0x500, time: 9000)  // likewise, but the walk for testA found it dead already
        var watch = WatchOptions()
        watch.leaksPerTest = true
        watch.watchesEveryClass = true
        func report(deadWhenSettled: Set<UInt64>, watch: WatchOptions) -> AuditReport.TestReport? {
            let leaks = replay.ledger.leaksByTest().first { $0.name == "AppTests.T/testA" }?.leaks ?? []
            let dead = Set(
                leaks.filter { deadWhenSettled.contains($0.object) }.map {
                    HeapWalks.Instance(object: $0.object, sequence: $0.sequence)
                })
            let naming = RetainerNaming(
                symbolizer: HeapSnapshotReplay.FixedSymbolizer(), modules: [], walk: .searched([:]),
                deadWhenTestsSettled: dead)
            let grouping = AllocationGrouping(
                ledger: replay.ledger, symbolizer: HeapSnapshotReplay.FixedSymbolizer(), progress: nil)
            let process = ProcessReport(ledger: replay.ledger, watch: watch, grouping: grouping, naming: naming)
            return process.tests().first { $0.name == "AppTests.T/testA" }
        }
        // The walk found 0x300 dead too, which the ledger never saw die: a walk that missed a live
        // object does not clear it.
        let test = report(deadWhenSettled: [0x300, 0x400, 0x500], watch: watch)
        XCTAssertEqual(test?.leaked.map(\.count), [2], "0x200 and 0x300: \(String(describing: test))")
        XCTAssertEqual(test?.globalState.map(\.globalStateReason), [.releasedLater])
        XCTAssertEqual(test?.globalState.map(\.count), [3])
        XCTAssertEqual(test?.globalState.first?.releasedAfterMilliseconds, 8000)
        // Without the walk's word, only what died while tests ran.
        let unwalked = report(deadWhenSettled: [], watch: watch)
        XCTAssertEqual(unwalked?.leaked.map(\.count), [3])
        XCTAssertEqual(unwalked?.globalState.map(\.count), [2])
        XCTAssertEqual(unwalked?.globalState.first?.releasedAfterMilliseconds, 300)
        // --fail-on-global-state fails for it.
        watch.failsOnGlobalState = true
        XCTAssertEqual(report(deadWhenSettled: [0x400], watch: watch)?.leaked.map(\.count), [5])
    }

    /// One test's reports of two processes: what each released later is one entry, with the longer
    /// delay, apart from the same type's other global state.
    func testMergedTestsKeepWhatWasReleasedLaterApartWithTheLongerDelay() {
        func entry(_ reason: AuditReport.GlobalStateReason, after: Int?) -> AuditReport.TestReport.LeakedType {
            var type = AuditReport.TestReport.LeakedType(
                type: "App.Job", count: 1, allocations: [], globalStateReason: reason)
            type.releasedAfterMilliseconds = after
            return type
        }
        let merged = ReportBuilder.mergedTests([
            .init(name: "T/a", leaked: [], globalState: [entry(.releasedLater, after: 300)]),
            .init(
                name: "T/a", leaked: [],
                globalState: [entry(.oneTimeInitializer, after: nil), entry(.releasedLater, after: 800)]),
        ])
        let global = merged.first?.globalState ?? []
        XCTAssertEqual(global.map(\.globalStateReason), [.releasedLater, .oneTimeInitializer])
        XCTAssertEqual(global.map(\.count), [2, 1])
        XCTAssertEqual(global.map(\.releasedAfterMilliseconds), [800, nil])
    }

    /// The walk at a process's exit explains what every test leaves alive, settled or not: a test
    /// whose grace period had not ended when its process exited is judged by what it leaves then,
    /// and its instances were left out of the walk ("no longer alive when the heap was walked").
    func testTheExitWalkExplainsTheInstancesOfTestsThatNeverSettled() {
        var replay = Replay()
        replay.type(1, "App.Model")
        replay.test(1, "AppTests.T/testSettles")
        replay.test(2, "AppTests.T/testNeverSettles")
        replay.phase(1, Int(LA_TEST_STARTED))
        replay.alloc(1, 0x100, test: 1)
        replay.phase(1, Int(LA_TEST_FINISHED))
        replay.phase(1, Int(LA_TEST_SETTLED))
        replay.phase(2, Int(LA_TEST_STARTED))
        replay.alloc(1, 0x200, test: 2)
        replay.alloc(1, 0x300, test: 2)
        replay.free(1, 0x300)
        replay.phase(2, Int(LA_TEST_FINISHED))
        var watch = WatchOptions()
        watch.leaksPerTest = true
        XCTAssertEqual(HeapWalks.instancesToExplain(replay.ledger, watch: watch).sorted(), [0x100, 0x200])
    }

    /// Without --retainers the walk at exit only tells apart what tests left of the types judged
    /// per test: a run whose tests left only the toolchain's objects, and a type over budget
    /// outside any test, needs no walk; with --retainers both are explained.
    func testTheExitWalkWithoutRetainersExplainsOnlyWhatTestsAreJudgedBy() {
        var replay = Replay()
        replay.type(1, "App.Model", budget: .none)
        replay.type(2, "Foundation.NSCache", budget: .none)
        replay.apply(.typeDefined(id: 3, name: "App.Pool", max: 1, budget: .code))
        replay.test(1, "AppTests.T/testCaches")
        replay.alloc(3, 0x400, test: nil)
        replay.alloc(3, 0x500, test: nil)
        replay.phase(1, Int(LA_TEST_STARTED))
        replay.alloc(2, 0x100, test: 1)
        replay.alloc(1, 0x200, test: 1)
        replay.free(1, 0x200)
        replay.phase(1, Int(LA_TEST_FINISHED))
        replay.phase(1, Int(LA_TEST_SETTLED))
        var watch = WatchOptions()
        watch.leaksPerTest = true
        watch.watchesEveryClass = true
        XCTAssertTrue(watch.walksAtExitForTestCases)
        XCTAssertEqual(HeapWalks.instancesToExplain(replay.ledger, watch: watch), [])
        replay.phase(1, Int(LA_TEST_STARTED))
        replay.alloc(1, 0x300, test: 1)
        replay.phase(1, Int(LA_TEST_FINISHED))
        replay.phase(1, Int(LA_TEST_SETTLED))
        XCTAssertEqual(HeapWalks.instancesToExplain(replay.ledger, watch: watch), [0x300])
        watch.retainers = true
        XCTAssertEqual(HeapWalks.instancesToExplain(replay.ledger, watch: watch).sorted(), [0x100, 0x300, 0x400, 0x500])
    }

    /// The census takes the toolchain's classes without their stacks unless it shows them: no
    /// report shows where they were made (they are folded into a count). The shim matches the
    /// patterns LEAK_AUDIT_WATCH gives it with the wire's glob, so they must say what
    /// `TypeOrigin.isInternalType` says of every class the writer watches (never `Swift.`'s).
    func testTheCensusTakesTheToolchainsClassesWithoutStacksUnlessItShowsThem() {
        let names = [
            "Foundation.JSONEncoder", "FoundationEssentials.__JSONEncoder", "XCTest.XCTestRun", "Testing.Runner",
            "__C.NSObject", "_Concurrency.Task", "Dispatch.DispatchQueue", "Foundation.Box<App.Model>", "App.Model",
            "App.Box<Foundation.Data>", "_NIOFileSystem.FileHandle", "Foundationx.Model", "Testing2.Suite", "CxxModule.Box",
            "Glibc.Thing", "_TestingInterop.Bridge",
        ]
        for name in names {
            XCTAssertEqual(
                TypeOrigin.internalTypePatterns.contains { globMatches($0, name) }, TypeOrigin.isInternalType(name), name)
        }
        var watch = WatchOptions(census: true)
        let lines = watch.environmentValue(targetPath: "/app").split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "census /app")
        XCTAssertEqual(Array(lines.dropFirst()), TypeOrigin.internalTypePatterns.map { "no-stacks \($0)" })
        XCTAssertTrue(lines.contains("no-stacks Foundation.*") && lines.contains("no-stacks __*"), "\(lines)")
        XCTAssertFalse(lines.contains { $0.hasPrefix("no-stacks Swift.") }, "\(lines)")
        watch.censusShowsInternals = true
        XCTAssertEqual(watch.environmentValue(targetPath: "/app"), "census /app")
        // A test run watches every class too.
        var tests = WatchOptions()
        tests.watchesEveryClass = true
        XCTAssertTrue(tests.environmentValue(targetPath: "/app").contains("\nno-stacks Foundation.*"))
    }
}
