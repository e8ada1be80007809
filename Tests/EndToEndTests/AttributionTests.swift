import Foundation
import LeakAuditModel
import XCTest

/// Which test allocated each instance, and which tests left instances alive.
final class AttributionTests: XCTestCase {
    private let bundle = "FixturesPackageTests.xctest"
    /// Per-test audit with a ten-minute grace period under a two-minute `--timeout`: a process
    /// that waited for its last tests' grace periods would be stopped, and its run fail.
    private let graceNotWaitedFor = ["--leaks-per-test", "--grace-period", "600000", "--timeout", "120"]

    private func tests(_ audit: Harness.Audit) -> [String: [AuditReport.TestReport.LeakedType]] {
        var result: [String: [AuditReport.TestReport.LeakedType]] = [:]
        for test in audit.report.tests ?? [] {
            result[test.name] = test.leaked
        }
        return result
    }

    func testXCTestAllocationsNameTheirTestWithNoOption() throws {
        let audit = try Harness.audit(bundle, ["ScreenTests.ScreenTests"])
        XCTAssertEqual(audit.status, 1)
        XCTAssertNil(audit.report.tests, "the per-test summary comes with --leaks-per-test")
        let screen = try audit.trackedType(".ProfileScreen")
        let byTest = Dictionary(grouping: screen.allocations) { $0.test ?? "" }
        XCTAssertEqual(byTest["ScreenTests.ScreenTests/testLeaksScreens"]?.first?.count, 3, "\(screen.allocations)")
        XCTAssertEqual(byTest["ScreenTests.ScreenTests/testReleasesScreens"]?.first?.count, 1)
    }

    func testLeaksPerTestBlamesOnlyTheTestThatLeaked() throws {
        let audit = try Harness.audit(bundle, ["ScreenTests.ScreenTests"], extraOptions: ["--leaks-per-test"])
        XCTAssertEqual(audit.status, 1)
        let tests = tests(audit)
        XCTAssertEqual(
            Set(tests.keys), ["ScreenTests.ScreenTests/testLeaksScreens", "ScreenTests.ScreenTests/testReleasesScreens"])
        let leaked = try XCTUnwrap(tests["ScreenTests.ScreenTests/testLeaksScreens"])
        XCTAssertEqual(leaked.map(\.type), ["ScreenTests.ProfileScreen"])
        XCTAssertEqual(leaked.first?.count, 3)
        XCTAssertEqual(
            tests["ScreenTests.ScreenTests/testReleasesScreens"]?.count, 0, "a clean test is listed with nothing leaked")
        XCTAssertEqual(audit.report.target.testsRun, 2)

        let text = Harness.run([
            Harness.leakAudit, "run", "--leaks-per-test", try Harness.fixture(bundle), "ScreenTests.ScreenTests",
        ])
        XCTAssertTrue(
            text.stderr.contains("LEAKED ScreenTests.ScreenTests/testLeaksScreens: 3 ScreenTests.ProfileScreen"), text.stderr)
        XCTAssertTrue(text.stderr.contains("3 × allocated in ScreenTests.ScreenTests/testLeaksScreens at"), text.stderr)
    }

    func testGlobalStateIsReportedApartAndFailsOnlyWhenAskedTo() throws {
        let audit = try Harness.audit(bundle, ["ScreenTests.ThemeTests"], extraOptions: ["--leaks-per-test"])
        XCTAssertEqual(audit.status, 0, audit.stderr)
        XCTAssertEqual(tests(audit).mapValues(\.count), ["ScreenTests.ThemeTests/testUsesSharedTheme": 0])
        let test = try XCTUnwrap(audit.report.tests?.first)
        let global = test.globalState
        XCTAssertEqual(global.map(\.type), ["ScreenTests.ThemeStore"])
        XCTAssertEqual(global.first?.count, 1)

        let text = Harness.run([
            Harness.leakAudit, "run", "--leaks-per-test", try Harness.fixture(bundle), "ScreenTests.ThemeTests",
        ])
        XCTAssertEqual(text.status, 0, text.stderr)
        // The line wraps at 80 columns; read it whole.
        let unwrapped = text.stderr.replacingOccurrences(of: "\n    ", with: " ")
        XCTAssertTrue(
            unwrapped.contains(
                "GLOBAL STATE first created by ScreenTests.ThemeTests/testUsesSharedTheme: 1 ScreenTests.ThemeStore "
                    + "(a global or static's one-time initializer)"),
            text.stderr)
        XCTAssertTrue(text.stderr.contains("tests: 0 of 1 test left instances alive"), text.stderr)

        let strict = try Harness.audit(
            bundle, ["ScreenTests.ThemeTests"], extraOptions: ["--leaks-per-test", "--fail-on-global-state"])
        XCTAssertEqual(strict.status, 1)
        XCTAssertEqual(tests(strict)["ScreenTests.ThemeTests/testUsesSharedTheme"]?.first?.count, 1)
    }

    /// A lock made on one line by every specialization of a generic subscription: the first
    /// test's is held by the subscription it leaked, the others' by subscriptions that later tests
    /// replaced. Its line is one whose instances later tests replaced, yet the first test's lock
    /// stays its leak, with its holder (combine-schedulers' `Publishers.Timer<RunLoop>.Inner`); the
    /// clean twin leaves nothing but the replaced global state.
    func testWhatATestsOwnLeakHoldsStaysItsLeakWhateverItsLineSays() throws {
        let options = ["--leaks-per-test", "--retainers", "--grace-period", "20"]
        let audit = try Harness.audit(bundle, ["ScreenTests.GenericTimerTests"], extraOptions: options)
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let reports = try XCTUnwrap(audit.report.tests)
        let first = try XCTUnwrap(reports.first { $0.name == "ScreenTests.GenericTimerTests/testAKeepsATimerOnInts" })
        XCTAssertEqual(
            Dictionary(uniqueKeysWithValues: first.leaked.map { ($0.type, $0.count) }),
            ["ScreenTests.TimerSubscription<Swift.Int>": 1, "ScreenTests.TimerLock": 1], audit.stderr)
        XCTAssertEqual(first.globalState.map(\.type), [], audit.stderr)
        let replaced = try XCTUnwrap(
            reports.first { $0.name == "ScreenTests.GenericTimerTests/testBStartsATimerOnStrings" })
        XCTAssertEqual(replaced.leaked.map(\.type), [], audit.stderr)
        XCTAssertEqual(
            Dictionary(uniqueKeysWithValues: replaced.globalState.map { ($0.type, $0.globalStateReason) }),
            [
                "ScreenTests.TimerSubscription<Swift.String>": .replacedByLaterTests,
                "ScreenTests.TimerLock": .replacedByLaterTests,
            ],
            audit.stderr)
        XCTAssertEqual(reports.filter { !$0.leaked.isEmpty }.map(\.name), [first.name], audit.stderr)

        try assertCleanTwin(
            "ScreenTests.GenericTimerCleanTests,ScreenTests.GenericTimerTests/testBStartsATimerOnStrings,"
                + "ScreenTests.GenericTimerTests/testCStartsATimerOnStrings,ScreenTests.GenericTimerTests/testDStopsTheTimer",
            testsRun: 4, options: options)
    }

    /// A line whose instances later tests replaced, run once more by a test that leaves its
    /// instance in a cycle nothing else holds: no global reaches that one, so it is its test's leak,
    /// whatever its line says; the clean twin leaves nothing but the replaced global state.
    func testWhatACycleHoldsIsNoGlobalStateWhateverItsLineSays() throws {
        let options = ["--leaks-per-test", "--census", "--grace-period", "20"]
        let audit = try Harness.audit(bundle, ["ScreenTests.ReplacedLineCycleTests"], extraOptions: options)
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let reports = try XCTUnwrap(audit.report.tests)
        let leaky = try XCTUnwrap(reports.first { $0.name == "ScreenTests.ReplacedLineCycleTests/testDLeaksASessionInACycle" })
        XCTAssertEqual(leaky.leaked.map { "\($0.type) \($0.count)" }, ["ScreenTests.ReplaceableSession 1"], audit.stderr)
        XCTAssertEqual(leaky.globalState.map(\.type), [], audit.stderr)
        let replaced = try XCTUnwrap(reports.first { $0.name == "ScreenTests.ReplacedLineCycleTests/testCOpensASession" })
        XCTAssertEqual(replaced.leaked.map(\.type), [], audit.stderr)
        XCTAssertEqual(
            Dictionary(uniqueKeysWithValues: replaced.globalState.map { ($0.type, $0.globalStateReason) }),
            ["ScreenTests.ReplaceableSession": .replacedByLaterTests], audit.stderr)
        XCTAssertEqual(reports.filter { !$0.leaked.isEmpty }.map(\.name), [leaky.name], audit.stderr)

        try assertCleanTwin(
            "ScreenTests.ReplacedLineCycleCleanTests,ScreenTests.ReplacedLineCycleTests/testAOpensASession,"
                + "ScreenTests.ReplacedLineCycleTests/testBOpensASession,ScreenTests.ReplacedLineCycleTests/testCOpensASession",
            testsRun: 4, options: options)
    }

    /// Asserts that the tests `filter` names all run (`testsRun` of them) and leave nothing: a clean
    /// twin's audit exits 0 and blames no test.
    private func assertCleanTwin(_ filter: String, testsRun: Int, options: [String]) throws {
        let clean = try Harness.audit(bundle, [filter], extraOptions: options)
        XCTAssertEqual(clean.report.target.testsRun, testsRun, clean.stderr)
        XCTAssertEqual(clean.status, 0, clean.stderr)
        XCTAssertEqual(clean.report.tests?.filter { !$0.leaked.isEmpty }.map(\.name), [], clean.stderr)
    }

    func testWhatReplacedGlobalStateHeldIsGlobalStateButWhatOutlivesItIsALeak() throws {
        // Each test bootstraps a metrics registry that the next test's bootstrap replaces, 500 ms
        // in, well after the grace period: the first test's counter is alive when it is judged, and
        // goes with its registry; the second test's counter is also kept elsewhere and outlives its
        // registry.
        let audit = try Harness.audit(
            bundle, ["ScreenTests.MetricsBootstrapTests"], extraOptions: ["--leaks-per-test", "--grace-period", "20"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let reports = try XCTUnwrap(audit.report.tests)
        func test(_ name: String) throws -> (leaked: [String: Int], global: [String: AuditReport.GlobalStateReason?]) {
            let report = try XCTUnwrap(reports.first { $0.name == "ScreenTests.MetricsBootstrapTests/\(name)" })
            let leaked = report.leaked.map { ($0.type, $0.count) }
            let global = report.globalState.map { ($0.type, $0.globalStateReason) }
            return (Dictionary(uniqueKeysWithValues: leaked), Dictionary(uniqueKeysWithValues: global))
        }
        let first = try test("testACountsRequests")
        XCTAssertEqual(first.leaked, [:], audit.stderr)
        XCTAssertEqual(
            first.global,
            ["ScreenTests.MetricsRegistry": .replacedByLaterTests, "ScreenTests.RequestCounter": .releasedWithGlobalState],
            audit.stderr)
        let twin = try test("testBKeepsACounter")
        XCTAssertEqual(twin.leaked, ["ScreenTests.RequestCounter": 1], audit.stderr)
        XCTAssertEqual(twin.global, ["ScreenTests.MetricsRegistry": .replacedByLaterTests], audit.stderr)
    }

    func testACleanTestAloneIsClean() throws {
        let audit = try Harness.audit(bundle, ["ScreenTests.ScreenTests/testReleasesScreens"], extraOptions: ["--leaks-per-test"])
        XCTAssertEqual(audit.status, 0, audit.stderr)
        XCTAssertEqual(tests(audit).mapValues(\.count), ["ScreenTests.ScreenTests/testReleasesScreens": 0])
    }

    func testGracePeriodCoversWorkThatFinishesAsynchronously() throws {
        let generous = try Harness.audit(
            bundle, ["ScreenTests.AsyncReleaseTests"], extraOptions: ["--leaks-per-test", "--grace-period", "500"])
        XCTAssertEqual(generous.status, 0, generous.stderr)
        XCTAssertEqual(tests(generous).mapValues(\.count), ["ScreenTests.AsyncReleaseTests/testReleasesLater": 0])

        let none = try Harness.audit(
            bundle, ["ScreenTests.AsyncReleaseTests"], extraOptions: ["--leaks-per-test", "--grace-period", "0"])
        XCTAssertEqual(none.status, 1)
        XCTAssertEqual(tests(none)["ScreenTests.AsyncReleaseTests/testReleasesLater"]?.first?.count, 1)

        let bad = Harness.run([Harness.leakAudit, "run", "--grace-period", "-5", try Harness.fixture(bundle)])
        XCTAssertEqual(bad.status, 64)
    }

    /// A process waits at its end for its last tests' grace periods only when they left an instance
    /// alive that work in flight may release (`testGracePeriodCoversWorkThatFinishesAsynchronously`):
    /// clean tests under a ten-minute grace period end at once, in XCTest and in Swift Testing,
    /// where they waited the grace period out (until `--timeout` stopped them).
    func testAProcessWaitsForItsLastGracePeriodsOnlyWhenItsTestsLeftSomethingAlive() throws {
        let xctest = try Harness.audit(bundle, ["ScreenTests.ScreenTests/testReleasesScreens"], extraOptions: graceNotWaitedFor)
        XCTAssertEqual(xctest.status, 0, xctest.stderr)
        XCTAssertEqual(tests(xctest).mapValues(\.count), ["ScreenTests.ScreenTests/testReleasesScreens": 0])

        let swiftTesting = try Harness.audit(
            bundle, ["--testing-library", "swift-testing", "--filter", "releasesSettings"], extraOptions: graceNotWaitedFor)
        XCTAssertEqual(swiftTesting.status, 0, swiftTesting.stderr)
        XCTAssertEqual(tests(swiftTesting).mapValues(\.count), ["ScreenTests.ProfileSwiftTests/releasesSettings()": 0])
    }

    /// Nor when all its last tests left is what XCTest's test case objects keep in their own
    /// properties (set in setUp, a lazy var, set by the test): XCTest releases those when the run
    /// ends, and only work a test left in flight that sets such a property again could before.
    /// What work in flight holds (a receipt), or may take out of an object a property holds (the
    /// cart's item, through the cart), is waited for, and released within the grace period: no leak
    /// (without the wait, each would be one).
    func testAProcessWaitsForNoGracePeriodForWhatOnlyItsTestCaseObjectsPropertiesKeep() throws {
        let kept = try Harness.audit(bundle, ["ScreenTests.CartKeptTests"], extraOptions: graceNotWaitedFor)
        XCTAssertEqual(kept.status, 0, kept.stderr)
        let test = try XCTUnwrap(kept.report.tests?.first)
        XCTAssertEqual(test.leaked.map(\.type), [])
        XCTAssertEqual(
            test.keptByTestCase.map(\.type).sorted(),
            ["ScreenTests.Cart", "ScreenTests.PriceFormatter", "ScreenTests.Receipt"])

        let keptBesideWorkInFlight = [
            "testEmptiesCartLater": ["ScreenTests.Cart"],
            "testSendsReceiptLater": ["ScreenTests.Cart", "ScreenTests.CartItem"],
        ]
        for (name, keeps) in keptBesideWorkInFlight.sorted(by: { $0.key < $1.key }) {
            let inFlight = try Harness.audit(
                bundle, ["ScreenTests.CartInFlightTests/\(name)"], extraOptions: ["--leaks-per-test", "--grace-period", "600"])
            XCTAssertEqual(inFlight.status, 0, "\(name): \(inFlight.stderr)")
            let waited = try XCTUnwrap(inFlight.report.tests?.first)
            XCTAssertEqual(waited.leaked.map(\.type), [], name)
            XCTAssertEqual(waited.keptByTestCase.map(\.type).sorted(), keeps, name)
        }
    }

    /// Once work in flight has released what the properties do not hold, the process waits no
    /// longer: its question is answered again from a copy, and what is left is the test case
    /// object's (with a ten-minute grace period, a process that waited it out would be stopped by
    /// `--timeout`).
    func testAProcessStopsWaitingOnceOnlyWhatItsTestCaseObjectsPropertiesKeepIsLeft() throws {
        let audit = try Harness.audit(bundle, ["ScreenTests.CartAfterWorkTests"], extraOptions: graceNotWaitedFor)
        XCTAssertEqual(audit.status, 0, audit.stderr)
        let test = try XCTUnwrap(audit.report.tests?.first)
        XCTAssertEqual(test.leaked.map(\.type), [])
        XCTAssertEqual(test.keptByTestCase.map(\.type), ["ScreenTests.Cart"])
    }

    /// Nor for what the objects those properties hold keep in `let` properties, and theirs: a
    /// `let` is never set again. What they keep in a `var`, work in flight may take back, and is
    /// waited for (without the wait, the coupon would be kept by the test case).
    func testAProcessWaitsForNoGracePeriodForWhatItsTestCaseObjectsKeepThroughLets() throws {
        let kept = try Harness.audit(bundle, ["ScreenTests.CheckoutKeptTests"], extraOptions: graceNotWaitedFor)
        XCTAssertEqual(kept.status, 0, kept.stderr)
        let test = try XCTUnwrap(kept.report.tests?.first)
        XCTAssertEqual(test.leaked.map(\.type), [])
        XCTAssertEqual(test.keptByTestCase.map(\.type).sorted(), ["ScreenTests.Checkout", "ScreenTests.CheckoutLedger"])

        let coupon = try Harness.audit(
            path: Harness.fixture(bundle), ["ScreenTests.CheckoutKeptTests"],
            extraOptions: ["--leaks-per-test", "--grace-period", "5000"],
            environment: ["FIXTURE_COUPON": "1"])
        XCTAssertEqual(coupon.status, 0, coupon.stderr)
        let waited = try XCTUnwrap(coupon.report.tests?.first)
        XCTAssertEqual(waited.leaked.map(\.type), [])
        XCTAssertEqual(waited.keptByTestCase.map(\.type).sorted(), ["ScreenTests.Checkout", "ScreenTests.CheckoutLedger"])
    }

    /// Nor for what a `let` global or `static let` of a class type holds (read in the running
    /// process): nothing can store another reference there. What a `static var` holds, work in
    /// flight may release, and is waited for (without the wait, the session would be a leak).
    func testAProcessWaitsForNoGracePeriodForWhatAStaticLetHolds() throws {
        let almanac = try Harness.audit(
            bundle, ["--testing-library", "swift-testing", "--filter", "makesTheAlmanac"], extraOptions: graceNotWaitedFor)
        XCTAssertEqual(almanac.status, 0, almanac.stderr)
        let made = try XCTUnwrap(almanac.report.tests?.first)
        XCTAssertEqual(made.leaked.map(\.type), [])
        XCTAssertEqual(made.globalState.map(\.type), ["ScreenTests.Almanac"])

        let session = try Harness.audit(
            path: Harness.fixture(bundle), ["--testing-library", "swift-testing", "--filter", "opensASession"],
            extraOptions: ["--leaks-per-test", "--grace-period", "5000"], environment: ["FIXTURE_SHOP_SESSION": "1"])
        XCTAssertEqual(session.status, 0, session.stderr)
        let opened = try XCTUnwrap(session.report.tests?.first)
        XCTAssertEqual(opened.leaked.map(\.type), [])
        XCTAssertEqual(opened.globalState.map(\.type), [])
    }

    /// A Swift Testing process is copied for its walk at exit after its last tests' grace periods,
    /// not before: work its last test left in flight has let go of what it held by then. The pair
    /// that test leaves holding each other, which that work held for 300 ms, is found unreachable;
    /// copied before the wait, the work still held it, and the unreachable check found nothing.
    func testTheWalkAtExitComesAfterTheLastTestsGracePeriods() throws {
        let audit = try Harness.audit(
            path: Harness.fixture(bundle), ["--testing-library", "swift-testing", "--filter", "handsAParcelToWorkInFlight"],
            extraOptions: ["--leaks-per-test", "--grace-period", "1000", "--unreachable"],
            environment: ["FIXTURE_PARCEL_IN_FLIGHT": "1"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let test = try XCTUnwrap(audit.report.tests?.first, audit.stderr)
        XCTAssertEqual(test.leaked.map(\.type).sorted(), ["ScreenTests.Courier", "ScreenTests.Parcel"], audit.stderr)
        let unreachable = try XCTUnwrap(audit.report.unreachable, audit.stderr)
        XCTAssertEqual(unreachable.groups.map(\.shape), [.cycle], audit.stderr)
        XCTAssertEqual(
            unreachable.groups.first?.path.map(\.type), ["ScreenTests.Courier", "ScreenTests.Parcel", "ScreenTests.Courier"])
        // One process, listed once.
        XCTAssertEqual(unreachable.processesChecked, 1)
        XCTAssertEqual(audit.report.target.processes.count, 1, audit.stderr)
    }

    /// What work a test left in flight releases after the grace period, while later tests run, is
    /// reported apart as released later, not failing, with how long after the test finished; what
    /// nothing releases before the process ends is the test's leak.
    func testWhatWorkLeftInFlightReleasesWhileTestsRunIsReleasedLaterNotALeak() throws {
        let options = ["--leaks-per-test", "--grace-period", "20"]
        let audit = try Harness.audit(bundle, ["ScreenTests.LateReleaseTests"], extraOptions: options)
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let reports = try XCTUnwrap(audit.report.tests)
        func test(_ name: String) throws -> AuditReport.TestReport {
            try XCTUnwrap(reports.first { $0.name == "ScreenTests.LateReleaseTests/\(name)" }, "\(reports.map(\.name))")
        }
        let timer = try test("testALeavesAJobToATimer")
        XCTAssertEqual(timer.leaked.map(\.type), [], audit.stderr)
        XCTAssertEqual(timer.globalState.map(\.type), ["ScreenTests.PendingJob"], audit.stderr)
        XCTAssertEqual(timer.globalState.first?.globalStateReason, .releasedLater)
        XCTAssertNotNil(timer.globalState.first?.releasedAfterMilliseconds)
        let kept = try test("testBLeavesAJobThatNothingReleases")
        XCTAssertEqual(kept.leaked.map(\.type), ["ScreenTests.PendingJob"], audit.stderr)
        XCTAssertEqual(kept.globalState.map(\.type), [], audit.stderr)
        XCTAssertEqual(reports.filter { !$0.leaked.isEmpty }.map(\.name), [kept.name], audit.stderr)

        let text = Harness.run(
            [Harness.leakAudit, "run"] + options + [try Harness.fixture(bundle), "ScreenTests.LateReleaseTests"])
        let unwrapped = text.stderr.replacingOccurrences(of: "\n    ", with: " ")
        XCTAssertTrue(
            unwrapped.contains(
                "RELEASED LATER, left by ScreenTests.LateReleaseTests/testALeavesAJobToATimer: 1 ScreenTests.PendingJob ("),
            text.stderr)
        XCTAssertTrue(text.stderr.contains("--grace-period "), text.stderr)

        // Without a later test to run on, the job goes after the process's last test finished (or
        // not at all): the process's end, when XCTest releases its test case objects, is no
        // release of the run's, and the job is the test's leak.
        let alone = try Harness.audit(bundle, ["ScreenTests.LateReleaseTests/testALeavesAJobToATimer"], extraOptions: options)
        XCTAssertEqual(alone.status, 1, alone.stderr)
        let lone = try XCTUnwrap(alone.report.tests?.first { $0.name == timer.name }, alone.stderr)
        XCTAssertEqual(lone.leaked.map(\.type), ["ScreenTests.PendingJob"], alone.stderr)
    }

    /// What Dispatch releases for a freed queue (its specific values), in a block queued on its
    /// default global queue whose threads are busy past the grace period, is released before the
    /// test is judged: the test leaks nothing. A test that also hands that value to a global leaks it.
    func testWhatDispatchReleasesForAFreedQueueIsNotTheTestsLeak() throws {
        let released = try Harness.audit(bundle, ["ScreenTests.SchedulerQueueTests"], extraOptions: ["--leaks-per-test"])
        XCTAssertEqual(released.status, 0, released.stderr)
        XCTAssertEqual(
            tests(released).mapValues(\.count),
            ["ScreenTests.SchedulerQueueTests/testLetsAQueueWithASpecificValueGoWhileTheGlobalQueueIsBusy": 0])

        let kept = try Harness.audit(bundle, ["ScreenTests.SchedulerRegistryTests"], extraOptions: ["--leaks-per-test"])
        XCTAssertEqual(kept.status, 1, kept.stderr)
        XCTAssertEqual(
            tests(kept)["ScreenTests.SchedulerRegistryTests/testRegistersTheQueuesWatchdog"]?.map(\.type),
            ["ScreenTests.SchedulingWatchdog"])
    }

    func testSwiftTestingTestsRunningInParallelAreAttributedExactly() throws {
        let audit = try Harness.audit(bundle, ["--testing-library", "swift-testing"], extraOptions: ["--leaks-per-test"])
        XCTAssertEqual(audit.status, 1)
        let tests = tests(audit)
        // Test names read as `swift test --filter` takes them, without the source location.
        let leaky = try XCTUnwrap(tests.first { $0.key == "ScreenTests.ProfileSwiftTests/leaksSettings()" }, "\(tests.keys)")
        XCTAssertEqual(leaky.value.first?.count, 3)
        let clean = try XCTUnwrap(tests.first { $0.key == "ScreenTests.ProfileSwiftTests/releasesSettings()" })
        XCTAssertEqual(clean.value.count, 0, "never blamed for the other test's objects")
        // Every Swift Testing test that ran is counted, though it has no observer API:
        // ProfileSwiftTests' two, ParameterizedSwiftTests' two, SkippedTests.swift's two,
        // SharedLocationTests.swift's four, SingletonSwiftTests.swift's two,
        // ParcelInFlightSwiftTests.swift's one and SerializedSwiftTests' three.
        XCTAssertEqual(audit.report.target.testsRun, 16)
        let processes = audit.report.target.processes
        XCTAssertEqual(processes.map(\.testingLibrary), [.swiftTesting, .swiftTesting])
    }

    func testSwiftTestingTestsRunOneAfterAnotherAreEachBlamedForTheirOwn() throws {
        // A `.serialized` suite's tests run in turn, each made current by a push of the runner:
        // the test an allocation names is asked again after each (SerializedSwiftTests.swift).
        let audit = try Harness.audit(
            bundle, ["--testing-library", "swift-testing", "--filter", "SerializedSwiftTests"],
            extraOptions: ["--leaks-per-test"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let leaked = tests(audit).mapValues { $0.map { "\($0.type) \($0.count)" } }
        XCTAssertEqual(leaked["ScreenTests.SerializedSwiftTests/keepsTickets()"], ["ScreenTests.Ticket 2"], "\(leaked)")
        XCTAssertEqual(leaked["ScreenTests.SerializedSwiftTests/keepsStamps()"], ["ScreenTests.Stamp 3"], "\(leaked)")
        XCTAssertEqual(leaked["ScreenTests.SerializedSwiftTests/releasesStamps()"], [], "\(leaked)")
    }

    func testSwiftTestingTestsSharingANameAndALocationAreToldApart() throws {
        // The resolver knows a test by its name and location while only one test ID was seen with
        // them; these pairs share both, in different types (SharedLocationTests.swift). Taken for
        // one another, a pair's leak is blamed on its clean twin, in one pair or the other, or
        // the two tests read as one.
        let audit = try Harness.audit(bundle, ["--testing-library", "swift-testing"], extraOptions: ["--leaks-per-test"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let leaked = tests(audit).mapValues { $0.map { "\($0.type) \($0.count)" } }
        XCTAssertEqual(leaked["ScreenTests.KeepsLedgers/check()"], ["ScreenTests.Ledger 3"], "\(leaked)")
        XCTAssertEqual(leaked["ScreenTests.ReleasesLedgers/check()"], [], "\(leaked)")
        XCTAssertEqual(leaked["ScreenTests.KeepsVouchers/check()"], ["ScreenTests.Voucher 3"], "\(leaked)")
        XCTAssertEqual(leaked["ScreenTests.ClearsVouchers/check()"], [], "\(leaked)")
    }

    func testAParameterizedTestIsNotBlamedForTheArgumentsTheRunnerKeeps() throws {
        // A parameterized test's arguments are made while the runner plans the run (with
        // `Test.current` set to the test), and its plan keeps them until the run ends: they are
        // not the test's. With no grace period each test settles as it finishes, long before the
        // plan is released. Its leaky twin keeps an invoice of its own from each of its two cases.
        let audit = try Harness.audit(
            bundle, ["--testing-library", "swift-testing"], extraOptions: ["--leaks-per-test", "--grace-period", "0"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let tests = tests(audit)
        let arguments = try XCTUnwrap(tests["ScreenTests.ParameterizedSwiftTests/checksInvoice(_:)"], "\(tests.keys)")
        XCTAssertEqual(arguments.count, 0, "never blamed for the arguments the runner keeps: \(arguments)")
        let archived = try XCTUnwrap(tests["ScreenTests.ParameterizedSwiftTests/archivesInvoice(amount:)"], "\(tests.keys)")
        XCTAssertEqual(archived.map(\.type), ["ScreenTests.Invoice"])
        XCTAssertEqual(archived.first?.count, 2)
    }

    func testSkippedTestsAndExitTestsAreCountedAsTheRunnersCountThem() throws {
        // Swift Testing: 19 tests, as its runner says ("Test run with 19 tests"): 16 ran (one of
        // them an exit test, whose child process is not counted again), 3 skipped without running.
        // They pass as they do plainly: the JUnit report the observer asks for changes nothing in
        // the run (a test sees the warning it records).
        let swiftTesting = try Harness.audit(bundle, ["--testing-library", "swift-testing"], extraOptions: ["--leaks-per-test"])
        XCTAssertTrue(
            (swiftTesting.stdout + swiftTesting.stderr).contains("Test run with 19 tests in 12 suites passed"),
            swiftTesting.stderr)
        XCTAssertEqual(swiftTesting.report.target.testsRun, 16)
        XCTAssertEqual(swiftTesting.report.target.testsSkipped, 3)
        let processes = swiftTesting.report.target.processes
        XCTAssertEqual(
            processes.first?.skippedTests,
            [
                "ScreenTests.SkippedSwiftSuite/insideASkippedSuite()", "ScreenTests.SkippingSwiftTests/skippedByCondition()",
                "ScreenTests.SkippingSwiftTests/skippedByTrait()",
            ])
        let parent = try XCTUnwrap(processes.first?.pid)
        XCTAssertEqual(processes.dropFirst().map(\.startedByTestProcess), [parent], "the exit test's child")
        // Read unwrapped: the report wraps its lines at 80 columns.
        let swiftTestingText = Harness.run([Harness.leakAudit, "report", swiftTesting.jsonPath]).stdout
            .replacingOccurrences(of: "\n  ", with: " ")
        XCTAssertTrue(swiftTestingText.contains("(Swift Testing, 16 tests, 3 skipped)"), swiftTestingText)

        // XCTest counts a test that threw XCTSkip as executed and as skipped: so does leak-audit.
        let xctest = try Harness.audit(bundle, ["ScreenTests.SkippedXCTests"], extraOptions: ["--leaks-per-test"])
        XCTAssertEqual(xctest.status, 0, xctest.stderr)
        XCTAssertTrue((xctest.stdout + xctest.stderr).contains("Executed 2 tests, with 1 test skipped"), xctest.stdout)
        XCTAssertEqual(xctest.report.target.testsRun, 2)
        XCTAssertEqual(xctest.report.target.testsSkipped, 1)
        let xctestText = Harness.run([Harness.leakAudit, "report", xctest.jsonPath]).stdout
            .replacingOccurrences(of: "\n  ", with: " ")
        XCTAssertTrue(xctestText.contains("2 tests ran, 1 skipped"), xctestText)

        // A run whose command line names an event stream of its own keeps it, and its skipped
        // tests are counted from the JUnit report the observer asks for.
        let stream = Harness.scratchPath("events.jsonl")
        let withStream = try Harness.audit(
            bundle, ["--testing-library", "swift-testing", "--event-stream-output-path", stream, "--event-stream-version", "0"],
            extraOptions: ["--leaks-per-test"])
        XCTAssertEqual(withStream.report.target.testsRun, 16)
        XCTAssertEqual(withStream.report.target.testsSkipped, 3, "\(withStream.report.target)")
        XCTAssertTrue(try String(contentsOfFile: stream, encoding: .utf8).contains("\"testSkipped\""))

        // One that names a JUnit report of its own gets it whole, and its skipped tests are read
        // from it; one whose report goes where it cannot be read back has them unknown, not 0.
        let junit = Harness.scratchPath("junit.xml")
        let withReport = try Harness.audit(
            bundle, ["--testing-library", "swift-testing", "--xunit-output=" + junit], extraOptions: ["--leaks-per-test"])
        XCTAssertEqual(withReport.report.target.testsSkipped, 3, "\(withReport.report.target)")
        let written = try String(contentsOfFile: junit, encoding: .utf8)
        XCTAssertTrue(written.contains(#"skipped="3""#) && written.contains("</testsuites>"), written)
        let unread = try Harness.audit(
            bundle, ["--testing-library", "swift-testing", "--xunit-output", "/dev/null"], extraOptions: ["--leaks-per-test"])
        XCTAssertEqual(unread.report.target.testsRun, 16)
        XCTAssertNil(unread.report.target.testsSkipped, "\(unread.report.target)")

        // A run that crashes never writes its report: its skipped tests are unknown, not 0.
        let crashed = try Harness.audit(
            path: try Harness.fixture(bundle), ["--testing-library", "swift-testing"], extraOptions: ["--leaks-per-test"],
            environment: ["FIXTURE_CRASH": "1"])
        XCTAssertEqual(crashed.report.target.outcome, .signaled(signal: 4), crashed.stderr)
        XCTAssertNil(crashed.report.target.testsSkipped, "\(crashed.report.target)")
    }

    func testATestProcessThatCrashesIsReportedAndItsUnfinishedTestIsNotBlamed() throws {
        let bundle = try Harness.fixture("FixturesPackageTests.xctest")
        let crashed = try Harness.audit(
            path: bundle, ["ScreenTests.CrashingTests"], extraOptions: ["--leaks-per-test"], environment: ["FIXTURE_CRASH": "1"])
        // The target was killed by the trap's signal; no test is blamed for what the crash left.
        XCTAssertEqual(crashed.status, 2, crashed.stderr)
        XCTAssertEqual(crashed.report.target.outcome, .signaled(signal: 4))
        let process = try XCTUnwrap(crashed.report.target.processes.first)
        XCTAssertEqual(process.interruptedTests, ["ScreenTests.CrashingTests/testBCrashes"])
        XCTAssertEqual(crashed.report.target.testsRun, 2)
        let tests = crashed.report.tests ?? []
        XCTAssertEqual(
            tests.map(\.name).sorted(),
            [
                "ScreenTests.CrashingTests/testASettles", "ScreenTests.CrashingTests/testBCrashes",
            ])
        XCTAssertTrue(tests.allSatisfy(\.leaked.isEmpty), "\(tests)")
        let warnings = crashed.report.warnings
        XCTAssertTrue(
            warnings.contains {
                $0.contains("ended while 1 test was running (ScreenTests.CrashingTests/testBCrashes)")
            }, "\(warnings)")

        // Without the crash: both tests finish and settle, nothing is interrupted.
        let clean = try Harness.audit(path: bundle, ["ScreenTests.CrashingTests"], extraOptions: ["--leaks-per-test"])
        XCTAssertEqual(clean.status, 0, clean.stderr)
        let cleanProcess = try XCTUnwrap(clean.report.target.processes.first)
        XCTAssertEqual(cleanProcess.interruptedTests, [])
    }

    func testATestBundleThatAnotherStartedIsNotCountedTwice() throws {
        let audit = try Harness.audit(
            path: try Harness.fixture("FixturesPackageTests.xctest"), ["ScreenTests.ChildRunTests"],
            extraOptions: ["--leaks-per-test"])
        XCTAssertEqual(audit.status, 0, audit.stderr)
        let processes = audit.report.target.processes
        XCTAssertEqual(processes.count, 2, "\(processes)")
        let parent = try XCTUnwrap(processes.first { $0.startedByTestProcess == nil })
        let child = try XCTUnwrap(processes.first { $0.startedByTestProcess != nil })
        XCTAssertEqual(child.startedByTestProcess, parent.pid)
        XCTAssertNil(child.testsRun, "\(child)")
        // XCTest's runner executed one test: the child's is that test's work.
        XCTAssertEqual(audit.report.target.testsRun, 1)
    }

    func testAProgramThatLinksXCTestButNeverStartsItsRunIsAuditedAsAProgram() throws {
        // As a bundle whose own LinuxMain runs its checks itself: no XCTest test ran, and that is
        // no test run in which none ran (exit 3) but a program, audited.
        let audit = try Harness.audit("OwnTestMain", extraOptions: ["--leaks-per-test"])
        XCTAssertEqual(audit.status, 0, audit.stderr)
        XCTAssertNil(audit.report.notAudited, "\(audit.report.target)")
        let process = try XCTUnwrap(audit.report.target.processes.first)
        XCTAssertEqual(process.testingLibrary, .xctest)
        XCTAssertNil(process.testsRun, "\(process)")
        // A bundle whose run starts and matches no test is still a test run in which none ran.
        let none = try Harness.audit(
            path: try Harness.fixture("FixturesPackageTests.xctest"), ["ScreenTests.NoSuchTests"],
            extraOptions: ["--leaks-per-test"])
        XCTAssertEqual(none.status, 3, none.stderr)
        XCTAssertEqual(none.report.notAudited, .noTestsRan)
    }
}
