import LeakAuditModel
import XCTest

/// `--retainers`: who holds each instance still alive at exit, checked on real fixture programs
/// (docs/retainers.md).
final class RetainersTests: XCTestCase {
    /// The retainers of the tracked type named …`suffix`, as (count, root kind, root name, vias).
    private func retainers(_ audit: Harness.Audit, _ suffix: String) throws -> [(Int, String, String, [String])] {
        let type = try audit.trackedType(suffix)
        let groups = try XCTUnwrap(type.retainers, "no retainers in \(type)")
        return groups.map { ($0.count, $0.root.kind.rawValue, $0.root.name, $0.path.map(\.via)) }
    }

    func testAViewModelHeldByASharedHubIsTracedToTheStaticProperty() throws {
        let audit = try Harness.audit("ViewModelRetention", ["leaky"], extraOptions: ["--retainers"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let found = try retainers(audit, ".LoginViewModel")
        XCTAssertEqual(found.count, 1, "\(found)")
        let (count, kind, name, vias) = try XCTUnwrap(found.first)
        XCTAssertEqual(count, 3)
        XCTAssertEqual(kind, "global")
        XCTAssertEqual(name, "ViewModelRetention.EventHub.shared")
        XCTAssertEqual(vias, ["ViewModelRetention.EventHub.shared", "subscribers", "[key]"])
        let type = try audit.trackedType(".LoginViewModel")
        let path = try XCTUnwrap(type.retainers?.first?.path)
        XCTAssertEqual(
            path.map(\.type),
            [
                "ViewModelRetention.EventHub", "[Swift.ObjectIdentifier: ViewModelRetention.LoginViewModel]",
                "ViewModelRetention.LoginViewModel",
            ])

        let text = Harness.run([Harness.leakAudit, "run", "--retainers", try Harness.fixture("ViewModelRetention"), "leaky"])
        // A line too long for the terminal continues, indented, on the next.
        let unwrapped = text.stderr.replacingOccurrences(of: "\n    ", with: " ")
        XCTAssertTrue(
            unwrapped.contains(
                "3 × held by global ViewModelRetention.EventHub.shared: EventHub.subscribers → [key] LoginViewModel"),
            text.stderr)
    }

    func testAClosureCycleIsShownAsTheCycle() throws {
        let audit = try Harness.audit("DismissalCapture", ["leaky"], extraOptions: ["--retainers"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        // The dismissal closure captures only `self`, which is then its whole context: the
        // closure is a step of its own, and its capture is named.
        for (type, vias) in [
            (".CheckoutFlow", ["", "sheet", "onDismiss", "captured self"]),
            (".SheetViewModel", ["", "onDismiss", "captured self", "sheet"]),
        ] {
            let found = try retainers(audit, type)
            XCTAssertEqual(found.count, 1, "\(type): \(found)")
            XCTAssertEqual(found.first?.0, 2)
            XCTAssertEqual(found.first?.1, "cycle")
            XCTAssertEqual(found.first?.3, vias)
        }
    }

    func testElementsOfAGlobalArrayAreCountedAndTheirIndexesGrouped() throws {
        let audit = try Harness.audit("WeakObservers", ["leaky"], extraOptions: ["--retainers"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let found = try retainers(audit, ".PriceLabel")
        XCTAssertEqual(found.map(\.0), [5])
        XCTAssertEqual(found.first?.2, "WeakObservers.strong")
        XCTAssertEqual(found.first?.3, ["WeakObservers.strong", "observers", "[i]"])
    }

    func testTaskCycleEnumPayloadAndWeakWatcherEachGetTheirHolder() throws {
        let audit = try Harness.audit("RetainerKinds", ["leaky"], extraOptions: ["--retainers"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        // A detached task that never ends holds its view model through the closures it runs.
        let polling = try retainers(audit, ".PollingViewModel")
        XCTAssertEqual(polling.map(\.0), [3], "\(polling)")
        XCTAssertEqual(polling.first?.1, "task")
        // The task is named by the closure it runs, and the closure's capture by its variable.
        XCTAssertEqual(polling.first?.2, "closure #1 in RetainerKinds.openScreen()")
        XCTAssertEqual(polling.first?.3.last, "captured model")
        // Two nodes that hold each other keep the image: the cycle is named, then the property.
        let image = try retainers(audit, ".ImageViewModel")
        XCTAssertEqual(image.map(\.0), [3], "\(image)")
        XCTAssertEqual(image.first?.1, "cycle")
        XCTAssertEqual(image.first?.3.last, "image")
        let imageGroup = try XCTUnwrap(try audit.trackedType(".ImageViewModel").retainers?.first)
        // Each image keeps its 2 MB of pixels: releasing the three frees at least 6 MB.
        XCTAssertGreaterThanOrEqual(imageGroup.retainedBytes, 6_000_000)
        // An enum payload: the property, then the case.
        let requests = try retainers(audit, ".RequestViewModel")
        XCTAssertEqual(requests.map(\.0).reduce(0, +), 3, "\(requests)")
        XCTAssertTrue(requests.contains { $0.3 == ["RetainerKinds.session", "state", ".loading"] }, "\(requests)")
        XCTAssertTrue(requests.contains { $0.3 == ["RetainerKinds.session", "history", "[i]", ".loading"] }, "\(requests)")
        // The watcher's weak and unowned references to each document never hold it: the store does.
        let documents = try retainers(audit, ".DocumentViewModel")
        XCTAssertEqual(documents.map(\.0), [3], "\(documents)")
        XCTAssertEqual(documents.first?.3, ["RetainerKinds.store", "open", "[i]"])
        XCTAssertFalse(audit.stderr.contains("Watcher"), audit.stderr)
        // A thread waiting forever holds its upload model in a local of the function it runs.
        let uploads = try retainers(audit, ".UploadViewModel")
        XCTAssertEqual(uploads.map(\.0), [3], "\(uploads)")
        XCTAssertEqual(uploads.first?.1, "stack")
        XCTAssertEqual(uploads.first?.2, "RetainerKinds.uploadLoop(started:release:done:)")
    }

    /// A thread stopped in a system call keeps, below the frame that holds its model, words a
    /// returned call left there (in a buffer the wait has not filled, and in a register): the
    /// frame that holds the model is named, not the wait.
    func testAThreadsStaleWordsBelowItsHolderNeverNameTheHolder() throws {
        let audit = try Harness.audit("StaleStackWords", ["leaky"], extraOptions: ["--retainers"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let transfers = try retainers(audit, ".TransferViewModel")
        XCTAssertEqual(transfers.map(\.0), [3], "\(transfers)")
        XCTAssertEqual(transfers.first?.1, "stack", "\(transfers)")
        XCTAssertEqual(transfers.first?.2, "StaleStackWords.transferLoop(reading:started:done:)", "\(transfers)")
    }

    func testAWordInAFieldThatCannotHoldAReferenceIsNeverAHolder() throws {
        let audit = try Harness.audit("FalseHolders", ["leaky"], extraOptions: ["--retainers"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        // Each receipt's address sits in an Int, a Date and an optional struct of plain values of
        // the global ledger: none of them holds it (it is over-retained, held by nothing).
        let receipts = try retainers(audit, ".Receipt")
        XCTAssertFalse(receipts.isEmpty, "\(receipts)")
        XCTAssertTrue(receipts.allSatisfy { $0.2 != "FalseHolders.ledger" }, "\(receipts)")
        XCTAssertTrue(receipts.allSatisfy { !$0.3.contains("serial") && !$0.3.contains("recordedAt") }, "\(receipts)")
        // The printer is held by the struct that also holds a C function pointer: no closure on the way.
        let printers = try retainers(audit, ".Printer")
        XCTAssertEqual(printers.map(\.0), [3], "\(printers)")
        XCTAssertEqual(printers.first?.3, ["FalseHolders.ledger", "entries", "[i]", "job"])
        let group = try XCTUnwrap(try audit.trackedType(".Printer").retainers?.first)
        let types = group.path.map(\.type)
        XCTAssertEqual(types.last, "FalseHolders.Printer")
        XCTAssertFalse(types.contains { $0.contains("closure") || $0.contains("context") }, "\(types)")

        // A generic argument that is an existential is named by its protocol.
        let spoolers = try XCTUnwrap(try audit.trackedType(".Spooler").retainers?.first)
        let spoolerTypes = spoolers.path.map(\.type)
        XCTAssertTrue(spoolerTypes.contains("FalseHolders.SinkBox<any FalseHolders.PrintSink>"), "\(spoolerTypes)")

        // Of three tickets yielded to a stream a global keeps, a task took two: only the third is
        // held by the stream's deque, in its first slot; the slots the two were taken from keep
        // their stale words, which hold nothing.
        let tickets = try retainers(audit, ".Ticket")
        let throughStream = tickets.filter { $0.2 == "FalseHolders.tickets" }
        XCTAssertEqual(throughStream.map(\.0), [1], "\(tickets)")
        XCTAssertEqual(throughStream.first?.3.last, "[0]", "\(tickets)")
        // The two taken are held by the task that took them, in its frames: they outgrew the
        // slab inside the task, and lie in a slab its allocator took from malloc.
        XCTAssertEqual(tickets.filter { $0.1 == "task" }.map(\.0).reduce(0, +), 2, "\(tickets)")
        // Named by the closure it runs, whose frame lies there too.
        XCTAssertTrue(tickets.filter { $0.1 == "task" }.allSatisfy { $0.2.contains("closure #") }, "\(tickets)")

        let clean = try Harness.audit("FalseHolders", ["clean"], extraOptions: ["--retainers"])
        XCTAssertEqual(clean.status, 0, clean.stderr)
    }

    func testObjectsHandedToCAsOpaquePointersAreHeldByUntypedMemory() throws {
        // Six callback boxes (two in cycles) whose only references are opaque retained pointers
        // in malloc'd blocks, an `UnsafeMutableRawPointer.allocate` buffer and an array of C
        // structs: each is held by the block, never by nothing or by its cycle.
        let audit = try Harness.audit(
            "ReachableHolders", ["opaque-pointers"],
            extraOptions: ["--retainers", "--budget", "ReachableHolders.CallbackBox=0"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let boxes = try retainers(audit, ".CallbackBox")
        XCTAssertEqual(boxes.map(\.0).reduce(0, +), 6, "\(boxes)")
        XCTAssertTrue(boxes.allSatisfy { $0.1 == "memory" && $0.2.hasPrefix("a malloc block of ") }, "\(boxes)")
        let text = Harness.run([
            Harness.leakAudit, "run", "--retainers", "--budget", "ReachableHolders.CallbackBox=0",
            try Harness.fixture("ReachableHolders"), "opaque-pointers",
        ])
        let unwrapped = text.stderr.replacingOccurrences(of: "\n    ", with: " ")
        XCTAssertTrue(unwrapped.contains("held by untyped memory (a malloc block of "), text.stderr)
        // Cycles held by a sleeping thread's locals are held by its stack.
        let threads = try Harness.audit(
            "ReachableHolders", ["sleeping-threads"], extraOptions: ["--retainers", "--budget", "ReachableHolders.Worker=0"])
        let workers = try retainers(threads, ".Worker")
        XCTAssertEqual(workers.map(\.0).reduce(0, +), 2, "\(workers)")
        XCTAssertTrue(workers.allSatisfy { $0.1 == "stack" }, "\(workers)")
    }

    func testATestsLeakIsTracedWhenTheTestSettles() throws {
        let audit = try Harness.audit(
            "FixturesPackageTests.xctest", ["ScreenTests.ScreenTests"], extraOptions: ["--leaks-per-test", "--retainers"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let tests = audit.report.tests ?? []
        let leaking = try XCTUnwrap(tests.first { $0.name == "ScreenTests.ScreenTests/testLeaksScreens" })
        let leaked = try XCTUnwrap(leaking.leaked.first)
        let groups = try XCTUnwrap(leaked.retainers, "\(leaked)")
        XCTAssertEqual(groups.map(\.count), [3])
        let root = groups.first?.root
        XCTAssertEqual(root?.kind, .global)
        XCTAssertEqual(root?.name, "ScreenTests.ScreenHistory.visited")
        XCTAssertEqual(groups.first?.path.map(\.via), ["ScreenTests.ScreenHistory.visited", "[i]"])
        // The clean test left nothing, so nothing was walked for it.
        let clean = try XCTUnwrap(tests.first { $0.name == "ScreenTests.ScreenTests/testReleasesScreens" })
        XCTAssertEqual(clean.leaked.count, 0)
    }

    func testObserversThatCaptureAViewModelAreTracedThroughFoundationAndObservation() throws {
        let audit = try Harness.audit("ObserverRetention", ["leaky"], extraOptions: ["--retainers"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        // A NotificationCenter block: the default center's registrar holds it.
        let profile = try retainers(audit, ".ProfileViewModel")
        XCTAssertEqual(profile.map(\.0), [3], "\(profile)")
        XCTAssertEqual(profile.first?.1, "global")
        XCTAssertEqual(profile.first?.3.dropFirst().first, "registrar")
        XCTAssertEqual(profile.first?.3.last, "captured")
        let profilePath = try XCTUnwrap(try audit.trackedType(".ProfileViewModel").retainers?.first?.path)
        XCTAssertEqual(profilePath.first?.type.hasSuffix(".NotificationCenter"), true, "\(profilePath)")
        // An Observation onChange closure: the global cart's registrar holds it.
        let cart = try retainers(audit, ".CartViewModel")
        XCTAssertEqual(cart.map(\.0), [3], "\(cart)")
        XCTAssertEqual(cart.first?.2, "ObserverRetention.cart")
        XCTAssertEqual(Array(cart.first?.3.prefix(2) ?? []), ["ObserverRetention.cart", "_$observationRegistrar"])
        XCTAssertEqual(cart.first?.3.last, "captured")
    }

    func testATestThatLeaksACycleShowsTheCycleThroughTheClosure() throws {
        let audit = try Harness.audit(
            "FixturesPackageTests.xctest", ["ScreenTests.CheckoutTests"], extraOptions: ["--leaks-per-test", "--retainers"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let tests = audit.report.tests ?? []
        let leaking = try XCTUnwrap(tests.first { $0.name == "ScreenTests.CheckoutTests/testDismissLeaksController" })
        let leaked = try XCTUnwrap(leaking.leaked.first)
        let group = try XCTUnwrap(leaked.retainers?.first, "\(leaked)")
        XCTAssertEqual(group.root.kind, .cycle)
        let path = group.path
        // The closure's debug information names the captured variable.
        XCTAssertEqual(path.map(\.via), ["", "onDismiss", "captured controller"])
        XCTAssertEqual(
            path.map(\.type),
            [
                "ScreenTests.CheckoutController",
                "context of closure #1 in ScreenTests.CheckoutTests.testDismissLeaksController()",
                "ScreenTests.CheckoutController",
            ])
        let clean = try XCTUnwrap(tests.first { $0.name == "ScreenTests.CheckoutTests/testDismissReleasesController" })
        XCTAssertEqual(clean.leaked.count, 0)
        let text = Harness.run([
            Harness.leakAudit, "run", "--leaks-per-test", "--retainers", try Harness.fixture("FixturesPackageTests.xctest"),
            "ScreenTests.CheckoutTests",
        ])
        XCTAssertTrue(
            text.stderr.replacingOccurrences(of: "\n      ", with: " ").contains(
                "held by a cycle of 2 objects that nothing else holds: CheckoutController.onDismiss → context of closure #1 in CheckoutTests.testDismissLeaksController() → (captured controller) → CheckoutController"
            ), text.stderr)
    }

    /// The fixtures' bundle audited per test with retainers on the XCTest class `testClass`, and
    /// a reader of its tests' entries by test name.
    private func auditedTests(_ testClass: String) throws -> (Harness.Audit, (String) throws -> AuditReport.TestReport) {
        let audit = try Harness.audit(
            "FixturesPackageTests.xctest", ["ScreenTests.\(testClass)"], extraOptions: ["--leaks-per-test", "--retainers"])
        let tests = audit.report.tests ?? []
        return (
            audit,
            { name in
                try XCTUnwrap(tests.first { $0.name == "ScreenTests.\(testClass)/" + name }, "\(tests.map(\.name))")
            }
        )
    }

    func testWhatOnlyTheTestCaseKeepsIsReportedApartButACycleOrAGlobalStillFails() throws {
        let (audit, test) = try auditedTests("CartTests")
        XCTAssertEqual(audit.status, 1, audit.stderr)
        func types(_ test: AuditReport.TestReport, _ list: KeyPath<AuditReport.TestReport, [AuditReport.TestReport.LeakedType]>)
            -> [String]
        {
            test[keyPath: list].map(\.type).sorted()
        }
        // Set in setUp, a lazy var, a property a test sets: what the test case keeps, not failing.
        let adds = try test("testAddsItem")
        XCTAssertEqual(types(adds, \.leaked), [])
        XCTAssertEqual(
            types(adds, \.keptByTestCase),
            ["ScreenTests.Cart", "ScreenTests.CartItem", "ScreenTests.PriceFormatter", "ScreenTests.Receipt"])
        var properties: [String: String] = [:]
        for kept in adds.keptByTestCase {
            let group = try XCTUnwrap(kept.retainers?.first, "\(kept)")
            XCTAssertEqual(group.root.kind, .testCase)
            XCTAssertEqual(group.root.name, "ScreenTests.CartTests")
            properties[kept.type] = group.path.dropFirst().first?.via
        }
        XCTAssertEqual(
            properties,
            [
                "ScreenTests.Cart": "cart", "ScreenTests.CartItem": "cart", "ScreenTests.PriceFormatter": "formatter",
                "ScreenTests.Receipt": "receipt",
            ])
        // A cycle the test made outlives the test case: the test's leak, held by the cycle.
        let cycle = try test("testCartCycleLeaks")
        XCTAssertEqual(types(cycle, \.leaked), ["ScreenTests.Cart", "ScreenTests.CartItem"])
        XCTAssertEqual(types(cycle, \.keptByTestCase), [])
        // A global registry holds it too: the test's leak, held by the global.
        let registers = try test("testRegistersCart")
        XCTAssertEqual(types(registers, \.leaked), ["ScreenTests.Cart"])
        let global = try XCTUnwrap(registers.leaked.first?.retainers?.first)
        XCTAssertEqual(global.root.name, "ScreenTests.CartRegistry.carts")
        // The text names each property once, with what to do.
        let run = Harness.run([
            Harness.leakAudit, "run", "--leaks-per-test", "--retainers", try Harness.fixture("FixturesPackageTests.xctest"),
            "ScreenTests.CartTests",
        ])
        let text = run.stderr.replacingOccurrences(of: "\n    ", with: " ")
        XCTAssertTrue(text.contains("KEPT BY CartTests.formatter: 1 ScreenTests.PriceFormatter, in 1 test"), text)
        XCTAssertTrue(text.contains("set each property below to nil in tearDown"), text)
        XCTAssertTrue(text.contains("tests: 2 of 3 tests left instances alive"), text)

        // --fail-on-test-case-state makes them fail, with their paths from the test case.
        let failing = try Harness.audit(
            "FixturesPackageTests.xctest", ["ScreenTests.CartTests/testAddsItem"],
            extraOptions: ["--leaks-per-test", "--retainers", "--fail-on-test-case-state"])
        XCTAssertEqual(failing.status, 1, failing.stderr)
        let failed = try XCTUnwrap(failing.report.tests?.first)
        XCTAssertEqual(types(failed, \.leaked).count, 4, "\(failed)")
        XCTAssertEqual(types(failed, \.keptByTestCase), [])

        // Without --retainers, one walk at the process's exit tells the same apart; the tests' leaks
        // show no paths, what the test case keeps names its property.
        let atExit = try Harness.audit(
            "FixturesPackageTests.xctest", ["ScreenTests.CartTests"], extraOptions: ["--leaks-per-test"])
        XCTAssertEqual(atExit.status, 1, atExit.stderr)
        let exitTests = atExit.report.tests ?? []
        let exitAdds = try XCTUnwrap(exitTests.first { $0.name == "ScreenTests.CartTests/testAddsItem" })
        XCTAssertEqual(types(exitAdds, \.leaked), [])
        XCTAssertEqual(types(exitAdds, \.keptByTestCase).count, 4, "\(exitAdds)")
        let exitCycle = try XCTUnwrap(exitTests.first { $0.name == "ScreenTests.CartTests/testCartCycleLeaks" })
        XCTAssertEqual(types(exitCycle, \.leaked), ["ScreenTests.Cart", "ScreenTests.CartItem"])
        XCTAssertNil(exitCycle.leaked.first?.retainers ?? nil)

        // The clean twin lets go in tearDown: nothing kept, nothing leaked.
        let clean = try Harness.audit(
            "FixturesPackageTests.xctest", ["ScreenTests.CartTearDownTests"], extraOptions: ["--leaks-per-test", "--retainers"])
        XCTAssertEqual(clean.status, 0, clean.stderr)
        let cleanTests = clean.report.tests ?? []
        XCTAssertEqual(cleanTests.count, 1)
        XCTAssertEqual(types(cleanTests[0], \.leaked) + types(cleanTests[0], \.keptByTestCase), [])
        XCTAssertFalse(clean.stderr.contains("kept by test case"), clean.stderr)
    }

    /// Asserts that `testClass`'s `test` passes and that its test case keeps its `type`.
    private func assertKeptByTestCase(_ testClass: String, _ test: String, _ type: String) throws {
        let (audit, report) = try auditedTests(testClass)
        XCTAssertEqual(audit.status, 0, audit.stderr)
        let entry = try report(test)
        XCTAssertEqual(entry.leaked.map(\.type), [], "\(entry)")
        let kept = try XCTUnwrap(entry.keptByTestCase.first { $0.type == type }, "\(entry)")
        XCTAssertEqual(kept.retainers?.first?.root.kind, .testCase, "\(kept)")
    }

    /// `testClass`'s `test`, asserted to fail for leaking exactly one `type`, with its paths.
    private func leakingTest(_ testClass: String, _ test: String, _ type: String) throws -> AuditReport.TestReport.LeakedType {
        let (audit, report) = try auditedTests(testClass)
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let entry = try report(test)
        XCTAssertEqual(entry.leaked.map(\.type), [type], "\(entry)")
        return try XCTUnwrap(entry.leaked.first, "\(entry)")
    }

    /// A cycle its test case also keeps, which a word of a malloc block in use points into, is
    /// held by the cycle: the block is read conservatively (its word may be stale) and is named
    /// beside it, not as the holder. One node that the test case keeps and such a word points at
    /// is kept by the test case.
    func testAWordOfUntypedMemoryIntoACycleIsNamedBesideTheCycle() throws {
        let ring = try leakingTest("UntypedWordCycleTests", "testKeepsARingThatAnUntypedWordPointsAt", "ScreenTests.RingNode")
        XCTAssertEqual(ring.count, 2, "\(ring)")
        let paths = try XCTUnwrap(ring.retainers, "\(ring)")
        XCTAssertEqual(paths.map(\.root.kind), [.cycle], "\(paths)")
        let root = paths.first?.root.name ?? ""
        XCTAssertTrue(
            root.hasPrefix("a cycle of 2 objects that nothing else holds but a word in untyped memory (a malloc block of "),
            root)
        try assertKeptByTestCase("UntypedWordNodeTests", "testKeepsANodeThatAnUntypedWordPointsAt", "ScreenTests.RingNode")
    }

    /// A static `any Error`'s box of a case without payload holds nothing, whatever its stale
    /// bytes past the value read as: what the test case keeps is kept by it, not blamed on a global.
    /// A global error whose case holds the test's object still holds it: the test's leak.
    func testAnErrorBoxHoldsOnlyWhatItsValueHolds() throws {
        try assertKeptByTestCase("LinkErrorTests", "testKeepsALinkBesideAStaleErrorBox", "ScreenTests.Link")
        let link = try leakingTest("LinkFailureTests", "testKeepsTheRefusedLinkInAGlobalError", "ScreenTests.Link")
        let path = try XCTUnwrap(link.retainers?.first, "\(link)")
        XCTAssertEqual(path.root.name, "ScreenTests.LinkErrors.lastFailure", "\(path)")
        XCTAssertEqual(path.path.map(\.type).last, "ScreenTests.Link", "\(path)")
    }

    /// What a test case keeps and a thread still running also holds on its stack is kept by the
    /// test case, which keeps it after the thread ends; what only the running thread holds is
    /// the test's leak, held by the thread's stack.
    func testATestCaseIsNamedBeforeARunningThreadsStack() throws {
        try assertKeptByTestCase("WindingDownTests", "testKeepsAWorkerThatARunningThreadHolds", "ScreenTests.Worker")
        let worker = try leakingTest("RunawayWorkerTests", "testLeavesAWorkerToARunningThread", "ScreenTests.Worker")
        XCTAssertEqual(worker.retainers?.first?.root.kind, .stack, "\(worker)")
    }

    func testWhatAGlobalRegistryMadeIsGlobalStateButWhatATestHandedToAGlobalIsItsLeak() throws {
        let (audit, test) = try auditedTests("RegistryTests")
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let registers = try test("testRegistersACounter")
        XCTAssertEqual(registers.leaked.count, 0, "\(registers)")
        let global = registers.globalState
        let counter = try XCTUnwrap(global.first { $0.type == "ScreenTests.MetricCounter" }, "\(global)")
        XCTAssertEqual(counter.globalStateReason, .madeByItsGlobalHolder)
        let subscribes = try test("testSubscribesAFeed")
        XCTAssertEqual(subscribes.leaked.map(\.type), ["ScreenTests.FeedViewModel"])
        let formats = try test("testFormatsWithThePerThreadFormatter")
        XCTAssertEqual(formats.leaked.count, 0, "\(formats)")
        XCTAssertEqual(formats.globalState.map(\.globalStateReason), [.heldByThreadStorage])
        // Work a test left on a loop that a thread keeps in its storage is the test's: what it
        // holds is its leak. The loop itself is the thread's storage.
        let leaves = try test("testLeavesWorkOnThePerThreadLoop")
        XCTAssertEqual(leaves.leaked.map(\.type), ["ScreenTests.LoopSession"], "\(leaves)")
        XCTAssertEqual(
            leaves.globalState.first { $0.type == "ScreenTests.ThreadLoop" }?.globalStateReason, .heldByThreadStorage,
            "\(leaves)")
        let runs = try test("testRunsItsWorkOnThePerThreadLoop")
        XCTAssertEqual(runs.leaked.count, 0, "\(runs)")
        let unsubscribes = try test("testUnsubscribesAFeed")
        XCTAssertEqual(unsubscribes.leaked.count, 0, "\(unsubscribes)")
        // A lazily made pool's threads, started through another type's function, made its workers
        // during the test that first used it: global state, though no frame of the pool's type is on
        // their allocation stacks.
        let starts = try test("testPoolStartsItsWorkers")
        XCTAssertEqual(starts.leaked.count, 0, "\(starts)")
        let workers = try XCTUnwrap(starts.globalState.first { $0.type == "ScreenTests.PoolWorker" }, "\(starts)")
        XCTAssertEqual(workers.count, 2)
        XCTAssertEqual(workers.globalStateReason, .madeByItsGlobalHolder)
        // A worker a later test hands to that pool from a thread of its own is its leak.
        let takes = try test("testPoolTakesAWorkerFromAThread")
        XCTAssertEqual(takes.leaked.map(\.type), ["ScreenTests.PoolWorker"], "\(takes)")
        XCTAssertEqual(takes.globalState.count, 0, "\(takes)")
        let returns = try test("testPoolTakesAndReleasesAWorker")
        XCTAssertEqual(returns.leaked.count + returns.globalState.count, 0, "\(returns)")
    }

    /// What a closure of a static's initializer made on a Dispatch queue, and the static keeps, is
    /// global state, though no one-time initializer is on its stack; what a test hands to that
    /// static is its leak.
    func testWhatAGlobalsInitializerMadeOnAQueueIsGlobalStateButWhatATestAddsIsItsLeak() throws {
        let (audit, test) = try auditedTests("TrustRootTests")
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let loads = try test("testLoadsTheTrustRoots")
        XCTAssertEqual(loads.leaked.count, 0, "\(loads)")
        let roots = try XCTUnwrap(loads.globalState.first { $0.type == "ScreenTests.TrustRoot" }, "\(loads)")
        XCTAssertEqual(roots.count, 3)
        XCTAssertEqual(roots.globalStateReason, .madeByItsGlobalHolder)
        XCTAssertEqual(roots.retainers?.first?.root.name, "ScreenTests.TrustStore.cachedRoots", "\(roots)")
        let trusts = try test("testTrustsAnExtraRoot")
        XCTAssertEqual(trusts.leaked.map(\.type), ["ScreenTests.TrustRoot"], "\(trusts)")
        XCTAssertEqual(trusts.leaked.first?.count, 1, "\(trusts)")
        XCTAssertEqual(trusts.globalState.count, 0, "\(trusts)")
    }

    func testHeavyLeaksAmongALargeHeapAreFoundWithWhatTheyKeep() throws {
        let audit = try Harness.audit("LargeHeapRetention", ["leaky"], extraOptions: ["--retainers"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let found = try retainers(audit, ".PhotoViewModel")
        XCTAssertEqual(found.map(\.0), [50], "\(found)")
        XCTAssertEqual(found.first?.2, "LargeHeapRetention.app")
        XCTAssertEqual(found.first?.3, ["LargeHeapRetention.app", "thumbnails", "byPhoto", "[i]"])
        let group = try XCTUnwrap(try audit.trackedType(".PhotoViewModel").retainers?.first)
        // 50 view models of 100 KB of pixels each: releasing them frees at least 5 MB.
        XCTAssertGreaterThanOrEqual(group.retainedBytes, 5_000_000)
        XCTAssertTrue(audit.stderr.isEmpty || !audit.stderr.contains("Record"), audit.stderr)
    }

    /// Issue 29: an untouched 64 GiB reservation was copied whole ("failed to allocate
    /// 68719476736 bytes", no report); only the pages the target holds are copied now.
    func testAnUntouchedReservationOfAnySizeIsNotCopied() throws {
        let audit = try Harness.audit(
            "AllocationChurn", ["reservation", "64"],
            extraOptions: ["--retainers", "--budget", "AllocationChurn.DetailViewModel=10"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let found = try retainers(audit, ".DetailViewModel")
        XCTAssertEqual(found.map(\.0), [20_000], "\(found)")
        XCTAssertEqual(found.first?.2, "AllocationChurn.registry")
        XCTAssertEqual(found.first?.3, ["AllocationChurn.registry", "models", "[i]"])
    }

    /// Issue 29: a list of 2,000,000 nodes to the leaked object printed the whole path (29 MB of
    /// text, a 292 MB JSON). The JSON keeps 500 objects at each end, the text 8.
    func testAPathThroughALongListIsShortened() throws {
        let audit = try Harness.audit(
            "AllocationChurn", ["list", "200000"],
            extraOptions: ["--retainers", "--budget", "AllocationChurn.DetailViewModel=0"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let group = try XCTUnwrap(try audit.trackedType(".DetailViewModel").retainers?.first)
        let path = group.path
        // The registry, 200,000 nodes and the model: 200,002 objects, 1,000 of them kept.
        XCTAssertEqual(path.count, 1_000)
        XCTAssertEqual(group.omittedAfter, 500)
        XCTAssertEqual(group.omittedSteps, 199_002)
        XCTAssertEqual(path.last?.type, "AllocationChurn.DetailViewModel")
        XCTAssertEqual(path.last?.via, "model")
        let text = Harness.run([
            Harness.leakAudit, "run", "--retainers", "--budget", "AllocationChurn.DetailViewModel=0",
            try Harness.fixture("AllocationChurn"), "list", "200000",
        ])
        XCTAssertTrue(text.stderr.contains("… 199986 more objects …"), text.stderr)
        XCTAssertLessThan(text.stderr.utf8.count, 4_000, text.stderr)
    }

    func testATargetThatCrashesSaysWhyNoHolderIsKnown() throws {
        let audit = try Harness.audit("CrashAfterLeak", ["leaky"], extraOptions: ["--retainers"])
        let type = try audit.trackedType(".DocumentViewModel")
        XCTAssertEqual(type.retainers?.count, 0)
        let reasons = type.retainersUnavailable
        XCTAssertTrue(reasons.contains { $0.contains("did not exit normally") }, "\(reasons)")
        let text = Harness.run([Harness.leakAudit, "run", "--retainers", try Harness.fixture("CrashAfterLeak"), "leaky"])
        XCTAssertTrue(text.stderr.contains("who holds them is unknown: the process did not exit normally"), text.stderr)
    }

    func testCleanTwinsHaveNothingToExplain() throws {
        for fixture in [
            "ViewModelRetention", "DismissalCapture", "WeakObservers", "RetainerKinds", "ObserverRetention", "LargeHeapRetention",
            "StaleStackWords",
        ] {
            let audit = try Harness.audit(fixture, ["clean"], extraOptions: ["--retainers"])
            XCTAssertEqual(audit.status, 0, "\(fixture): \(audit.stderr)")
            XCTAssertTrue(audit.report.types.allSatisfy { $0.retainers == nil }, "\(fixture): \(audit.report.types)")
        }
    }

    func testWithoutTheOptionTheReportHasNoRetainers() throws {
        let audit = try Harness.audit("ViewModelRetention", ["leaky"])
        XCTAssertEqual(audit.status, 1)
        XCTAssertNil(try audit.trackedType(".LoginViewModel").retainers)
    }
}
