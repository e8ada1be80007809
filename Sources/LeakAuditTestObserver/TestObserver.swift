// Loaded by libLeakAuditPreload.so into a test bundle's process (when leak-audit asks for test
// attribution) before the tests start. It tells the shim which test is running, so that every
// tracked allocation names its test, with no per-test code from the user:
// - XCTest runs one test at a time: an observer sets the current test and records when each test
//   starts, finishes and, after a grace period for work that finishes asynchronously, settles.
// - Swift Testing runs tests in parallel tasks: a resolver names the calling task's test
//   (`Test.current`), so allocations are attributed exactly whatever runs beside them. Swift
//   Testing has no observer API; the shim asks the same question around each task-local scope
//   Swift Testing's runner opens and closes, which tells when each test starts and ends. The tests
//   it skips never run: they are read from the event stream it writes for tools.
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
    guard let test = Test.current, let api = ShimTestAPI.shared else { return LA_TEST_NONE }
    if afterPush { noteCurrent(test) }
    guard !test.isSuite, Test.Case.current != nil else { return LA_TEST_NONE }
    return swiftTestingID(of: test, api)
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
        condition.lock()
        defer { condition.unlock() }
        waiting.append((Self.now() + grace, id))
        if settler == nil {
            let thread = Thread { [self] in settle(api) }
            thread.name = "leak-audit settler"
            settler = thread
            thread.start()
        }
        condition.signal()
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
    api.setResolver(resolveSwiftTestingTest)
    api.observeScopes(probeSwiftTestingTest, swiftTestingScopeChanged)
    XCTestObservationCenter.shared.addTestObserver(XCTestPhases(api: api))
    if SkippedTestStream.start(api) { api.swiftTestingSkipsObserved() }
    // Swift Testing's run ends with exit(): its end is at exit. The shim's walk at exit calls it
    // first (the shim's destructor runs before this handler), so that the process is copied after
    // its last tests' grace periods, not before.
    api.setExitHook?(endOfRun)
    atexit(endOfRun)
}

/// Whether the run's end began (`endOfRun`).
private let runEnded = Atomic<Bool>(false)

/// The run's end, once: the rest of Swift Testing's event stream read, and the last tests' grace
/// periods waited for (XCTest's were, when its bundle finished). The tests that settle now are
/// not walked one by one: the walk at exit follows.
private let endOfRun: @convention(c) () -> Void = {
    guard !runEnded.exchange(true, ordering: .acquiringAndReleasing) else { return }
    let api = ShimTestAPI.shared
    api?.exiting?()
    SkippedTestStream.drain()
    guard let api else { return }
    gracePeriods.waitForAll(api)
}

/// Swift Testing's skipped tests, read from the event stream it writes for tools (JSON lines, in
/// the runner's own ABI version) to the path its `--event-stream-output-path` argument names: in a Swift Testing run
/// whose command line names none, the observer adds one, the write end of a pipe that a thread of
/// its own reads (record-format.md, "Skipped Swift Testing tests").
private enum SkippedTestStream {
    /// The pipe's read end, the part of a line read so far, and where each pass reads to
    /// (allocated once); nil until started.
    private static let reader = Mutex<(descriptor: Int32, partial: [UInt8], buffer: [UInt8])?>(nil)
    /// What marks a line worth decoding.
    private static let skippedMarker = Array(#""testSkipped""#.utf8)
    /// A longer line is no event of interest: it is dropped rather than kept growing.
    private static let longestLine = 1 << 24
    /// The pipe's size asked for (Linux's largest for a process without privileges, by default),
    /// and how long the reader waits after each pass before it reads again: a runner that fills
    /// the default 64 KiB in less waits for the reader.
    private static let pipeBytes: Int32 = 1 << 20
    private static let batchMicroseconds: UInt32 = 10_000
    /// F_SETPIPE_SZ (linux/fcntl.h), which Glibc's module does not export.
    private static let setPipeSize: Int32 = 1031

    /// Adds the event stream's arguments to the command line Swift Testing is about to read, and
    /// starts reading it; false when this is no Swift Testing run, the command line names a stream
    /// already, or the arguments cannot be changed.
    static func start(_ api: ShimTestAPI) -> Bool {
        let arguments = CommandLine.arguments
        let runsSwiftTesting = zip(arguments, arguments.dropFirst()).contains {
            $0 == "--testing-library" && $1 == "swift-testing"
        }
        let namesStream = arguments.contains { $0 == "--event-stream-output-path" || $0 == "--experimental-event-stream-output" }
        // Swift 6 code cannot call CommandLine.arguments' setter by name; without it, nothing is added.
        guard runsSwiftTesting, !namesStream, let setter = dlsym(nil, "$ss11CommandLineO9argumentsSaySSGvsZ") else {
            return false
        }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return false }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        // Neither end reaches a child process. Only the read end is non-blocking: the runner's
        // writes wait for the reader.
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(readEnd, F_SETFL, fcntl(readEnd, F_GETFL) | O_NONBLOCK)
        // Room for a few seconds of events (Linux's F_SETPIPE_SZ; the default 64 KiB when refused),
        // so that the reader can read them in batches: woken by each write, it cost a context
        // switch on each side of every event (about 1.5 µs of the runner's and 4,000 switches in
        // GraphQL's 881 tests).
        _ = fcntl(writeEnd, Self.setPipeSize, Self.pipeBytes)
        // No `--event-stream-version`: the runner's own, which changes nothing else. An explicit
        // version before 6.3 also turns off the issues a test records as warnings.
        typealias Setter = @convention(thin) (__owned [String]) -> Void
        unsafeBitCast(setter, to: Setter.self)(arguments + ["--event-stream-output-path", "/dev/fd/\(writeEnd)"])
        reader.withLock { $0 = (readEnd, [], [UInt8](repeating: 0, count: 1 << 16)) }
        let thread = Thread {
            var ready = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
            while poll(&ready, 1, -1) >= 0 || errno == EINTR {
                if ready.revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 && ready.revents & Int16(POLLIN) == 0 { return }
                drain()
                // What the runner writes meanwhile waits in the pipe, read in one pass.
                usleep(Self.batchMicroseconds)
            }
        }
        thread.name = "leak-audit: Swift Testing events"
        thread.start()
        return true
    }

    /// Reads what the pipe holds now and reports the skipped tests among its complete lines.
    static func drain() {
        guard let api = ShimTestAPI.shared else { return }
        reader.withLock { reader in
            guard let descriptor = reader?.descriptor, var partial = reader?.partial, var buffer = reader?.buffer
            else { return }
            reader?.buffer = []
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                // Every event passes through here (the runner encodes each test's start and end):
                // lines are found by memchr and read only when they hold the marker, so that the
                // others are neither copied nor searched byte by byte in Swift.
                func reportIfSkipped(_ line: UnsafeRawBufferPointer) {
                    if contains(line), let name = skippedTestName(Array(line)) {
                        api.event(api.id(of: name), UInt32(LA_TEST_SKIPPED))
                    }
                }
                buffer.withUnsafeBytes { bytes in
                    guard let base = bytes.baseAddress else { return }
                    var start = 0
                    while start < count, let newline = memchr(base + start, Int32(UInt8(ascii: "\n")), count - start) {
                        let end = base.distance(to: UnsafeRawPointer(newline))
                        let line = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
                        if partial.isEmpty {
                            reportIfSkipped(line)
                        } else {
                            partial += line
                            partial.withUnsafeBytes(reportIfSkipped)
                            partial.removeAll(keepingCapacity: true)
                        }
                        start = end + 1
                    }
                    partial += UnsafeRawBufferPointer(rebasing: bytes[start..<count])
                }
                if partial.count > longestLine { partial = [] }
            }
            reader = (descriptor, partial, buffer)
        }
    }

    /// Whether `line` holds the marker of a `testSkipped` event: each of its quotes found by
    /// memchr, the marker compared there by memcmp (glibc's memmem is not in Swift's Glibc).
    private static func contains(_ line: UnsafeRawBufferPointer) -> Bool {
        guard let base = line.baseAddress else { return false }
        return skippedMarker.withUnsafeBytes { marker in
            guard let markerBase = marker.baseAddress else { return false }
            var offset = 0
            while line.count - offset >= marker.count,
                let quote = memchr(base + offset, Int32(marker[0]), line.count - offset - marker.count + 1)
            {
                if memcmp(quote, markerBase, marker.count) == 0 { return true }
                offset = base.distance(to: UnsafeRawPointer(quote)) + 1
            }
            return false
        }
    }

    /// The name of the test function a `testSkipped` event line is about, as the scopes name it;
    /// nil for any other line, and for a skipped suite (its ID has no source location).
    static func skippedTestName(_ line: [UInt8]) -> String? {
        guard line.firstRange(of: skippedMarker) != nil,
            let record = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
            record["kind"] as? String == "event", let payload = record["payload"] as? [String: Any],
            payload["kind"] as? String == "testSkipped", let id = payload["testID"] as? String,
            let slash = id.lastIndex(of: "/")
        else { return nil }
        let location = id[id.index(after: slash)...].split(separator: ":")
        guard location.count == 3, Int(location[1]) != nil, Int(location[2]) != nil else { return nil }
        return String(id[..<slash])
    }
}
