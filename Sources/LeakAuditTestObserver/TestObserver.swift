// Loaded by libLeakAuditPreload.so into a test bundle's process (when leak-audit asks for test
// attribution) before the tests start. It tells the shim which test is running, so that every
// tracked allocation names its test, with no per-test code from the user:
// - XCTest runs one test at a time: an observer sets the current test and records when each test
//   starts, finishes and, after a grace period for work that finishes asynchronously, settles.
// - Swift Testing runs tests in parallel tasks: a resolver names the calling task's test
//   (`Test.current`), so allocations are attributed exactly whatever runs beside them. Swift
//   Testing has no observer API; the shim asks the same question around each task-local scope
//   Swift Testing's runner opens and closes, which tells when each test starts and ends. The tests
//   it skips never run: they are read from the JUnit report it writes as its run ends.
// The shim's functions are looked up in the global scope, where the preloaded copy exports them:
// this library links no copy of its own.
import Dispatch
import Foundation
import LeakAuditWire
import Synchronization
import Testing
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// The shim's test API, found with dlsym.
private struct ShimTestAPI: Sendable {
    typealias Intern = @convention(c) (UnsafePointer<CChar>?, Int) -> UInt32
    typealias Event = @convention(c) (UInt32, UInt32) -> Void
    typealias Settled = @convention(c) (UnsafePointer<UInt32>?, Int) -> Void
    typealias SetCurrent = @convention(c) (UInt32) -> Void
    typealias Announce = @convention(c) () -> Void
    typealias Question = @convention(c) () -> Bool
    typealias SetExitHook = @convention(c) ((@convention(c) () -> Void)?) -> Void
    typealias SetResolver = @convention(c) ((@convention(c) () -> UInt32)?) -> Void
    typealias ObserveScopes =
        @convention(c) (
            (@convention(c) (Bool) -> UInt32)?, (@convention(c) (UInt32, UInt32) -> Void)?
        ) -> Void

    let intern: Intern
    let event: Event
    let settled: Settled
    let setCurrent: SetCurrent
    let setResolver: SetResolver
    let observeScopes: ObserveScopes
    let xctestStarted: Announce
    let swiftTestingSkipsObserved: Announce
    /// Whether the finished tests not settled still have instances alive (leak-audit answers);
    /// nil from a preloaded library that cannot ask.
    let finishedLeftAlive: Question?
    /// Says that the process ends (`leakaudit_test_exiting`).
    let exiting: Announce?
    /// Sets the end of the run that the walk at exit calls first (`leakaudit_test_set_exit_hook`).
    let setExitHook: SetExitHook?

    static let shared: ShimTestAPI? = {
        guard let intern = dlsym(nil, "leakaudit_test_intern"), let event = dlsym(nil, "leakaudit_test_event"),
            let settled = dlsym(nil, "leakaudit_test_settled"),
            let setCurrent = dlsym(nil, "leakaudit_test_set_current"),
            let setResolver = dlsym(nil, "leakaudit_test_set_resolver"),
            let observeScopes = dlsym(nil, "leakaudit_test_observe_scopes"),
            let xctestStarted = dlsym(nil, "leakaudit_test_xctest_started"),
            let swiftTestingSkipsObserved = dlsym(nil, "leakaudit_test_swift_testing_skips_observed")
        else { return nil }
        return ShimTestAPI(
            intern: unsafeBitCast(intern, to: Intern.self), event: unsafeBitCast(event, to: Event.self),
            settled: unsafeBitCast(settled, to: Settled.self),
            setCurrent: unsafeBitCast(setCurrent, to: SetCurrent.self),
            setResolver: unsafeBitCast(setResolver, to: SetResolver.self),
            observeScopes: unsafeBitCast(observeScopes, to: ObserveScopes.self),
            xctestStarted: unsafeBitCast(xctestStarted, to: Announce.self),
            swiftTestingSkipsObserved: unsafeBitCast(swiftTestingSkipsObserved, to: Announce.self),
            finishedLeftAlive: dlsym(nil, "leakaudit_test_finished_left_alive").map { unsafeBitCast($0, to: Question.self) },
            exiting: dlsym(nil, "leakaudit_test_exiting").map { unsafeBitCast($0, to: Announce.self) },
            setExitHook: dlsym(nil, "leakaudit_test_set_exit_hook").map { unsafeBitCast($0, to: SetExitHook.self) })
    }()

    func id(of name: String) -> UInt32 {
        var name = name
        return name.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { intern($0.baseAddress, $0.count) }
        }
    }
}

/// The shim's ids of Swift Testing tests, by the test's own ID: a known test costs a lookup, not a
/// name built from its ID.
private let swiftTestingIDs = Mutex<[Test.ID: UInt32]>([:])

/// A Swift Testing test's name in reports: its ID (`Module.Suite/function()`) without the source
/// location that the ID of a test function ends with, as `swift test --filter` reads it.
private func reportName(of test: Test) -> String {
    let id = String(describing: test.id)
    let location = test.sourceLocation
    let suffix = "/\(location.fileName):\(location.line):\(location.column)"
    return id.hasSuffix(suffix) ? String(id.dropLast(suffix.count)) : id
}

/// The shim's id for a Swift Testing test (or suite), by its ID, interned once per name.
private func swiftTestingIDByTestID(of test: Test, _ api: ShimTestAPI) -> UInt32 {
    if let known = swiftTestingIDs.withLock({ $0[test.id] }) { return known }
    let id = api.id(of: reportName(of: test))
    swiftTestingIDs.withLock { $0[test.id] = id }
    return id
}

/// What tells a test from most others at a glance: its name and source location (file ID, line,
/// column). Not its identity: the ID also holds the containing type, which only `Test.id` gives,
/// and that builds an array, and hashing it hashes every name component (about half of the
/// resolver's samples in GraphQL's 881 tests). Two tests of different types may share a key (a
/// macro that expands to several types, each with a `@Test func check()`, gives them all the
/// location of its own use), so a key stands for an ID only while one ID was ever seen under it
/// (`KeyedTests`). The location's fields are copied out: `SourceLocation` is resilient, and a key
/// holding one is copied, compared and destroyed through its value witnesses.
private struct TestKey: Hashable {
    let name: String
    let fileID: String
    let line: Int
    let column: Int

    init(_ test: Test) {
        let location = test.sourceLocation
        name = test.name
        fileID = location.fileID
        line = location.line
        column = location.column
    }

    /// Line and column alone: the strings are compared only where both match, and tests on one
    /// line and column of different files are few.
    func hash(into hasher: inout Hasher) {
        hasher.combine(line)
        hasher.combine(column)
    }

    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.line == rhs.line && lhs.column == rhs.column && lhs.fileID == rhs.fileID && lhs.name == rhs.name
    }
}

/// Every test Swift Testing made current, by key, told after each task-local push of its library
/// (`probeSwiftTestingTest`). A task's `Test.current` changes only through such a push (or the pop
/// that undoes one), and a child task inherits its parent's: so a test the resolver sees was made
/// current by a push, and stored here when that push returned, before the code it scopes ran.
/// When one ID was ever seen under a key, the test under that key has that ID, and the resolver
/// maps the key, not the ID, to the shim's id. A key seen with two IDs is ambiguous for the rest
/// of the run: the test's ID is looked up instead (as when the scopes are not observed: nothing is
/// stored then, and every key is unknown).
private struct KeyedTests {
    /// What the resolver reads: whether one ID was seen under the key, and the shim's id for it
    /// once asked for. Trivial values, copied out under the lock without a retain.
    struct Answer {
        var unique = true
        var shimID: UInt32?
    }

    var answers: [TestKey: Answer] = [:]
    /// The ID first seen under each key.
    var ids: [TestKey: Test.ID] = [:]
}

private let keyedTests = Mutex(KeyedTests())

/// Stores a test that a push of Swift Testing's library made current.
private func noteCurrent(_ test: Test) {
    let key = TestKey(test)
    let id = test.id
    keyedTests.withLock { tests in
        if let known = tests.ids[key] {
            if known != id { tests.answers[key]?.unique = false }
        } else {
            tests.ids[key] = id
            tests.answers[key] = KeyedTests.Answer()
        }
    }
}

/// The shim's id for a Swift Testing test (or suite), interned once per name: by its key when only
/// its ID was seen under that key, else by its ID.
private func swiftTestingID(of test: Test, _ api: ShimTestAPI) -> UInt32 {
    let key = TestKey(test)
    guard let answer = keyedTests.withLock({ $0.answers[key] }), answer.unique else {
        return swiftTestingIDByTestID(of: test, api)
    }
    if let known = answer.shimID { return known }
    // The test's ID is the one stored under its key: the same answer as by its ID.
    let id = swiftTestingIDByTestID(of: test, api)
    keyedTests.withLock { $0.answers[key]?.shimID = id }
    return id
}

/// True once a case of a Swift Testing test started running in this process: the runner has
/// finished planning (`Runner.Plan` is built before `Runner.run` starts any test).
private let swiftTestingCasesStarted = Atomic<Bool>(false)

/// Names the calling task's Swift Testing test, for the shim's allocation records.
///
/// While the runner plans the run, it sets `Test.current` to each test function in turn, with no
/// case, to prepare its traits and evaluate its `arguments:` expressions; the plan keeps the
/// arguments until the run ends. What the planning allocates is not the test's: it is the
/// runner's, made before the test started. Planning is over when the first case starts, and the
/// test's own code always runs inside a case (`Test.Case.current`), so this needs no name or
/// symbol of the runner: an allocation of a test function's task with no case, before any case
/// started, names no test.
private let resolveSwiftTestingTest: @convention(c) () -> UInt32 = {
    guard let test = Test.current, let api = ShimTestAPI.shared else { return LA_TEST_NONE }
    if !swiftTestingCasesStarted.load(ordering: .acquiring), !test.isSuite, Test.Case.current == nil {
        return LA_TEST_NONE
    }
    return swiftTestingID(of: test, api)
}

/// Names the calling task's running Swift Testing test function (never a suite), for the shim's
/// test-scope hooks: asked before and after each task-local push and pop of Swift Testing's
/// library, `afterPush` true after a push, which may have made a new test current (stored for the
/// resolver: `keyedTests`). A test counts as running while one of its cases runs: the runner also
/// sets `Test.current` while it plans the run (evaluating traits and arguments), with no case.
private let probeSwiftTestingTest: @convention(c) (Bool) -> UInt32 = { afterPush in
    guard let api = ShimTestAPI.shared else { return LA_TEST_NONE }
    swiftTestingRuns(api)
    guard let test = Test.current else { return LA_TEST_NONE }
    if afterPush { noteCurrent(test) }
    guard !test.isSuite, Test.Case.current != nil else { return LA_TEST_NONE }
    return swiftTestingID(of: test, api)
}

/// Whether Swift Testing's runner runs in this process (`swiftTestingRuns`).
private let swiftTestingRunning = Atomic<Bool>(false)

/// Sets the resolver once Swift Testing runs in this process: its command line asks for it, or its
/// runner opened a task-local scope. Until then no allocation asks it: an XCTest process names
/// its tests by the current one alone, and asking `Test.current` there too cost each of its
/// tracked allocations about 120 ns (Yams' 192 tests: 38 ms of 313,000 allocations).
private func swiftTestingRuns(_ api: ShimTestAPI) {
    guard !swiftTestingRunning.load(ordering: .acquiring),
        !swiftTestingRunning.exchange(true, ordering: .acquiringAndReleasing)
    else { return }
    api.setResolver(resolveSwiftTestingTest)
}

/// Whether the process's command line runs Swift Testing (`--testing-library swift-testing`): a
/// test bundle runs XCTest's tests or Swift Testing's, as its arguments say.
private func commandLineRunsSwiftTesting() -> Bool {
    let arguments = CommandLine.arguments
    return zip(arguments, arguments.dropFirst()).contains { $0 == "--testing-library" && $1 == "swift-testing" }
}

/// Grace periods after finished tests, waited for before the process exits when something is left.
private let gracePeriods = GracePeriods()

/// Records that a test finished, and that it settled once its grace period is over; the process
/// waits for pending grace periods when XCTest's bundle finishes and when it exits, if leak-audit
/// says those tests still have instances alive (else they settle at once).
///
/// One thread of its own settles the tests, in the order they finished, every test whose grace
/// period is over at once: under `--retainers` the settling thread waits while leak-audit copies
/// the process. Settled from Dispatch's global queue, each waiting test held one of the pool's
/// threads, and Swift's concurrency runs on that pool on Linux, which grows by about a thread a
/// second: Swift Testing's tests then waited for threads (GraphQL's 881 tests took minutes).
private final class GracePeriods: @unchecked Sendable {
    let milliseconds = Atomic<UInt32>(0)
    private let condition = NSCondition()
    /// The finished tests not settled yet, in the order they finished (the grace period is the
    /// same for all): when each settles (CLOCK_MONOTONIC, in nanoseconds), and its id.
    private var waiting: [(deadline: UInt64, id: UInt32)] = []
    /// Tests taken from `waiting` whose settling has not returned.
    private var settling = 0
    private var settler: Thread?

    func finished(_ id: UInt32, _ api: ShimTestAPI) {
        api.event(id, UInt32(LA_TEST_FINISHED))
        // What the test left running may still release its objects: judge after the grace period.
        let grace = UInt64(milliseconds.load(ordering: .relaxed)) * 1_000_000
        // Deadlines fall on ticks of a tenth of the grace period (at most 10 ms), so that tests
        // finishing close together settle together: each settle costs a round trip through
        // Dispatch's queue (and under `--retainers` one to leak-audit), and GraphQL's 881 tests
        // settled in about 500 of them. A test settles at most a tick after its grace period.
        let tick = Swift.min(grace / 10, Self.longestTickNanoseconds)
        condition.lock()
        defer { condition.unlock() }
        // Read under the lock, so that the deadlines are in order.
        let end = Self.now() + grace
        let deadline = tick > 0 ? (end + tick - 1) / tick * tick : end
        // The settling thread waits for the first test's deadline, which no later test's comes
        // before (one grace period for all, on a clock that never goes back): it is woken only
        // when it waits for no deadline (else every test cost it a wake-up).
        let settlerWaitsForNone = waiting.isEmpty
        waiting.append((deadline, id))
        if settler == nil {
            let thread = Thread { [self] in settle(api) }
            thread.name = "leak-audit settler"
            settler = thread
            thread.start()
        }
        if settlerWaitsForNone { condition.broadcast() }
    }

    /// The settling thread: waits for the first grace period to end, then settles every test
    /// whose grace period is over with one call.
    private func settle(_ api: ShimTestAPI) {
        var due: [UInt32] = []
        condition.lock()
        while true {
            guard let first = waiting.first else {
                condition.wait()
                continue
            }
            let now = Self.now()
            guard first.deadline <= now else {
                _ = condition.wait(until: Date(timeIntervalSinceNow: Double(first.deadline - now) / 1e9))
                continue
            }
            let count = waiting.prefix { $0.deadline <= now }.count
            due.removeAll(keepingCapacity: true)
            for index in 0..<count { due.append(waiting[index].id) }
            waiting.removeFirst(count)
            settling = count
            condition.unlock()
            if milliseconds.load(ordering: .relaxed) > 0 { Self.awaitDispatchsQueuedWork() }
            due.withUnsafeBufferPointer { api.settled($0.baseAddress, $0.count) }
            condition.lock()
            settling = 0
            condition.broadcast()
        }
    }

    /// The longest time between the deadlines tests settle at (`finished`).
    private static let longestTickNanoseconds: UInt64 = 10_000_000

    /// The longest a settle waits for Dispatch's default global queue (`awaitDispatchsQueuedWork`).
    private static let dispatchWaitSeconds = 1.0

    /// Waits, at most `dispatchWaitSeconds`, until Dispatch's default global queue runs a block
    /// queued now: by then, the work queued there before it has started. libdispatch releases a
    /// freed queue's specific values later, in a block it queues there
    /// (`_dispatch_queue_specific_head_dispose_slow`); while a suite keeps that queue's threads
    /// busy, the block ran after the grace period, and the test that let the queue go was blamed
    /// for what Dispatch was about to release (GRDB's `SchedulingWatchdog`, its database). With
    /// `--grace-period 0` a test is judged as soon as it finishes, without it.
    private static func awaitDispatchsQueuedWork() {
        let ran = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { ran.signal() }
        _ = ran.wait(timeout: .now() + dispatchWaitSeconds)
    }

    /// How often the process asks leak-audit, while its last grace periods run, whether the tests
    /// still have instances alive.
    private static let askIntervalNanoseconds: UInt64 = 10_000_000

    /// Waits until every finished test settled. While their grace periods run, leak-audit is
    /// asked every `askIntervalNanoseconds` whether those tests still have instances alive that
    /// work in flight may release. Once none has (nothing is left, it was released, or what is
    /// left is held by `let` globals or XCTest's test case objects' properties), they settle at
    /// once; else the grace periods are waited out.
    func waitForAll(_ api: ShimTestAPI) {
        let grace = Double(milliseconds.load(ordering: .relaxed)) / 1000
        let limit = Date(timeIntervalSinceNow: grace + 1 + Self.dispatchWaitSeconds)
        condition.lock()
        defer { condition.unlock() }
        if let ask = api.finishedLeftAlive {
            while let last = waiting.last?.deadline, Self.now() < last {
                // Not asked under the lock: the settling thread takes it while leak-audit answers.
                condition.unlock()
                let leftAlive = ask()
                condition.lock()
                guard leftAlive else {
                    for index in waiting.indices { waiting[index].deadline = 0 }
                    condition.broadcast()
                    break
                }
                let now = Self.now()
                guard now < last else { break }
                let pause = Swift.min(Self.askIntervalNanoseconds, last - now)
                _ = condition.wait(until: Date(timeIntervalSinceNow: Double(pause) / 1e9))
            }
        }
        while !waiting.isEmpty || settling > 0 {
            guard condition.wait(until: limit) else { return }
        }
    }

    /// CLOCK_MONOTONIC, in nanoseconds.
    private static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}

/// Told by the shim when a Swift Testing test starts or finishes.
private let swiftTestingScopeChanged: @convention(c) (UInt32, UInt32) -> Void = { id, phase in
    guard let api = ShimTestAPI.shared else { return }
    if phase == UInt32(LA_TEST_FINISHED) {
        gracePeriods.finished(id, api)
    } else {
        if phase == UInt32(LA_TEST_STARTED) { swiftTestingCasesStarted.store(true, ordering: .releasing) }
        api.event(id, phase)
    }
}

/// Records XCTest's test phases and sets the current test.
private final class XCTestPhases: NSObject, XCTestObservation, @unchecked Sendable {
    let api: ShimTestAPI

    init(api: ShimTestAPI) {
        self.api = api
    }

    /// `Module.Class/testName`, as `swift test --filter` and leak-audit's reports spell it.
    private func name(of testCase: XCTestCase) -> String {
        let method = testCase.name.split(separator: ".").last.map(String.init) ?? testCase.name
        return "\(String(reflecting: type(of: testCase)))/\(method)"
    }

    func testCaseWillStart(_ testCase: XCTestCase) {
        let id = api.id(of: name(of: testCase))
        api.event(id, UInt32(LA_TEST_STARTED))
        api.setCurrent(id)
    }

    func testCaseDidFinish(_ testCase: XCTestCase) {
        let id = api.id(of: name(of: testCase))
        api.setCurrent(LA_TEST_NONE)
        if testCase.testRun?.hasBeenSkipped == true { api.event(id, UInt32(LA_TEST_SKIPPED)) }
        gracePeriods.finished(id, api)
    }

    /// From now on every XCTest test is observed: the process says so (a bundle whose own main
    /// never starts XCTest's run is audited as a program).
    func testBundleWillStart(_ testBundle: Bundle) {
        api.xctestStarted()
    }

    /// The last tests get their grace periods too.
    func testBundleDidFinish(_ testBundle: Bundle) {
        gracePeriods.waitForAll(api)
    }
}

/// Installs the observers; called by the preloaded library's constructor, before the tests start.
@_cdecl("leakaudit_observer_install")
public func leakauditObserverInstall(_ graceMilliseconds: UInt32) {
    guard let api = ShimTestAPI.shared else { return }
    gracePeriods.milliseconds.store(graceMilliseconds, ordering: .relaxed)
    if commandLineRunsSwiftTesting() { swiftTestingRuns(api) }
    api.observeScopes(probeSwiftTestingTest, swiftTestingScopeChanged)
    XCTestObservationCenter.shared.addTestObserver(XCTestPhases(api: api))
    SkippedSwiftTests.start()
    // Swift Testing's run ends with exit(): its end is at exit. The shim's walk at exit calls it
    // first (the shim's destructor runs before this handler), so that the process is copied after
    // its last tests' grace periods, not before.
    api.setExitHook?(endOfRun)
    atexit(endOfRun)
}

/// Whether the run's end began (`endOfRun`).
private let runEnded = Atomic<Bool>(false)

/// The run's end, once: Swift Testing's skipped tests read, and the last tests' grace
/// periods waited for (XCTest's were, when its bundle finished). The tests that settle now are
/// not walked one by one: the walk at exit follows.
private let endOfRun: @convention(c) () -> Void = {
    guard !runEnded.exchange(true, ordering: .acquiringAndReleasing) else { return }
    guard let api = ShimTestAPI.shared else { return }
    api.exiting?()
    SkippedSwiftTests.readAtEnd(api)
    gracePeriods.waitForAll(api)
}

/// Swift Testing's skipped tests, read from the JUnit XML report its runner writes once, as its
/// run ends, to the path its `--xunit-output` argument names (record-format.md, "Skipped Swift
/// Testing tests"). In a Swift Testing run whose command line names none, the observer adds one: a
/// file in memory of its own. The report costs the runner a few dictionary updates a test, where
/// its event stream for tools encoded every event as JSON (about a tenth of GraphQL's 881 tests'
/// plain CPU time, and the encoders' objects, which leak-audit watches).
private enum SkippedSwiftTests {
    /// Where the report is read from at the end of the run; nil until started, and once read.
    private enum Source {
        /// The file in memory the observer made, read from its start.
        case descriptor(Int32)
        /// The command line's own path, read if it is then a regular file.
        case path(String)
    }

    private static let source = Mutex<Source?>(nil)
    /// The argument that names the report, and the form Swift Testing also reads (`--xunit-output=P`).
    private static let label = "--xunit-output"
    /// glibc's `memfd_create` and its MFD_CLOEXEC flag (sys/mman.h), which Glibc's module does not
    /// export.
    private typealias MemoryFileCreate = @convention(c) (UnsafePointer<CChar>, UInt32) -> Int32
    private static let closeOnExec: UInt32 = 1

    /// Adds the report's argument to the command line Swift Testing is about to read, unless it
    /// names a report of its own (then read that one). Nothing when this is no Swift Testing run,
    /// its own report's path is no file that the runner would write and leak-audit could read
    /// back, or the arguments cannot be changed: its skipped tests are then unknown.
    static func start() {
        guard commandLineRunsSwiftTesting() else { return }
        let arguments = CommandLine.arguments
        // The first one, as Swift Testing reads it.
        for (index, argument) in arguments.enumerated() {
            var path: String
            if argument == label, index + 1 < arguments.count {
                path = arguments[index + 1]
            } else if argument.hasPrefix(label + "=") {
                path = String(argument.dropFirst(label.count + 1))
            } else {
                continue
            }
            guard isOrWillBeRegularFile(path) else { return }
            // The runner opens it before any test runs, from the directory the process started
            // in: a test may change directory before the end of the run.
            if !path.hasPrefix("/") { path = FileManager.default.currentDirectoryPath + "/" + path }
            source.withLock { $0 = .path(path) }
            return
        }
        // Swift 6 code cannot call CommandLine.arguments' setter by name; without it, nothing is added.
        guard let setter = dlsym(nil, "$ss11CommandLineO9argumentsSaySSGvsZ"),
            let create = dlsym(nil, "memfd_create").map({ unsafeBitCast($0, to: MemoryFileCreate.self) })
        else { return }
        // Not inherited by a child process (an exit test's, which has an observer of its own);
        // the runner opens it again through /dev/fd, with an offset of its own.
        let descriptor = create("leak-audit: Swift Testing's JUnit report", closeOnExec)
        guard descriptor >= 0 else { return }
        typealias Setter = @convention(thin) (__owned [String]) -> Void
        unsafeBitCast(setter, to: Setter.self)(arguments + [label, "/dev/fd/\(descriptor)"])
        source.withLock { $0 = .descriptor(descriptor) }
    }

    /// True for a path that names a regular file, or nothing yet (the runner creates a file
    /// there): not a terminal, a pipe or a device, which cannot be read back.
    private static func isOrWillBeRegularFile(_ path: String) -> Bool {
        var status = stat()
        if stat(path, &status) == 0 { return status.st_mode & S_IFMT == S_IFREG }
        return errno == ENOENT
    }

    /// Reads the report, which the runner wrote as its run ended, once, and reports its skipped
    /// tests, then that they were all reported. A report that is not whole (the run did not end)
    /// reports none: the process's skipped tests stay unknown.
    static func readAtEnd(_ api: ShimTestAPI) {
        guard let source = source.withLock({ $0.take() }) else { return }
        let report: [UInt8]
        switch source {
        case .descriptor(let descriptor):
            report = readAll(descriptor)
            close(descriptor)
        case .path(let path):
            let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard descriptor >= 0 else { return }
            defer { close(descriptor) }
            var status = stat()
            guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return }
            report = readAll(descriptor)
        }
        guard report.firstRange(of: Array("</testsuites>".utf8)) != nil else { return }
        for name in skippedTestNames(inReport: report) {
            api.event(api.id(of: name), UInt32(LA_TEST_SKIPPED))
        }
        api.swiftTestingSkipsObserved()
    }

    /// The bytes of file `descriptor` from its start to its end.
    private static func readAll(_ descriptor: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, off_t(bytes.count)) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return bytes }
            bytes += chunk[..<count]
        }
    }

    /// The names of the test functions a JUnit report of Swift Testing's marks skipped, as the
    /// scopes name them (`Module.Suite/Nested/function()`): each `<testcase classname="C"
    /// name="N" …>` with a `<skipped` element in it, C being the module and the suites' names
    /// joined by periods. Swift Testing writes one element a line and does not escape either
    /// attribute.
    static func skippedTestNames(inReport report: [UInt8]) -> [String] {
        var names: [String] = []
        var current: String? = nil
        for rawLine in report.split(separator: UInt8(ascii: "\n")) {
            let line = rawLine.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
            if line.starts(with: Array("<testcase ".utf8)) {
                current = testName(ofTestCase: String(decoding: line, as: UTF8.self))
            } else if line.starts(with: Array("<skipped".utf8)), let name = current {
                names.append(name)
                current = nil
            } else if line.starts(with: Array("</testcase>".utf8)) {
                current = nil
            }
        }
        return names
    }

    /// `Module.Suite/function()` of a `<testcase classname="Module.Suite" name="function()" …>`
    /// line that has elements inside (a self-closing one has no `<skipped`); nil for another.
    private static func testName(ofTestCase line: String) -> String? {
        guard !line.hasSuffix("/>"), let classStart = line.firstRange(of: #"classname=""#),
            let nameStart = line[classStart.upperBound...].firstRange(of: #"" name=""#)
        else { return nil }
        let className = line[classStart.upperBound..<nameStart.lowerBound]
        var name = line[nameStart.upperBound...]
        // `" time="…" >` when the test ran, `" >` when it did not.
        if let time = name.ranges(of: #"" time=""#).last {
            name = name[..<time.lowerBound]
        } else if let end = name.ranges(of: "\"").last {
            name = name[..<end.lowerBound]
        } else {
            return nil
        }
        let components = className.split(separator: ".", omittingEmptySubsequences: false)
        guard let module = components.first, !module.isEmpty, !name.isEmpty else { return nil }
        return module + "." + (components.dropFirst() + [name]).joined(separator: "/")
    }
}
