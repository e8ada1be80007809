// Loaded by libLeakAuditPreload.so into a test bundle's process (when leak-audit asks for test
// attribution) before the tests start. It tells the shim which test is running, so that every
// tracked allocation names its test, with no per-test code from the user:
// - XCTest runs one test at a time: an observer sets the current test and records when each test
//   starts, finishes and, after a grace period for work that finishes asynchronously, settles.
// - Swift Testing runs tests in parallel tasks: a resolver names the calling task's test
//   (`Test.current`), so allocations are attributed exactly whatever runs beside them. Swift
//   Testing has no observer API; the shim asks the same question around each task-local scope
//   Swift Testing's runner opens and closes, which tells when each test starts and ends.
// The shim's functions are looked up in the global scope, where the preloaded copy exports them:
// this library links no copy of its own.
import Dispatch
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
    typealias SetCurrent = @convention(c) (UInt32) -> Void
    typealias SetResolver = @convention(c) ((@convention(c) () -> UInt32)?) -> Void
    typealias ObserveScopes =
        @convention(c) (
            (@convention(c) () -> UInt32)?, (@convention(c) (UInt32, UInt32) -> Void)?
        ) -> Void

    let intern: Intern
    let event: Event
    let setCurrent: SetCurrent
    let setResolver: SetResolver
    let observeScopes: ObserveScopes

    static let shared: ShimTestAPI? = {
        guard let intern = dlsym(nil, "leakaudit_test_intern"), let event = dlsym(nil, "leakaudit_test_event"),
            let setCurrent = dlsym(nil, "leakaudit_test_set_current"),
            let setResolver = dlsym(nil, "leakaudit_test_set_resolver"),
            let observeScopes = dlsym(nil, "leakaudit_test_observe_scopes")
        else { return nil }
        return ShimTestAPI(
            intern: unsafeBitCast(intern, to: Intern.self), event: unsafeBitCast(event, to: Event.self),
            setCurrent: unsafeBitCast(setCurrent, to: SetCurrent.self),
            setResolver: unsafeBitCast(setResolver, to: SetResolver.self),
            observeScopes: unsafeBitCast(observeScopes, to: ObserveScopes.self))
    }()

    func id(of name: String) -> UInt32 {
        var name = name
        return name.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { intern($0.baseAddress, $0.count) }
        }
    }
}

/// The shim's ids of Swift Testing tests, by the test's own ID: the resolver runs on every
/// allocation of a test run and the scope probe around every task-local push and pop, so a known
/// test costs a lookup, not a name built from its ID.
private let swiftTestingIDs = Mutex<[Test.ID: UInt32]>([:])

/// A Swift Testing test's name in reports: its ID (`Module.Suite/function()`) without the source
/// location that the ID of a test function ends with, as `swift test --filter` reads it.
private func reportName(of test: Test) -> String {
    let id = String(describing: test.id)
    let location = test.sourceLocation
    let suffix = "/\(location.fileName):\(location.line):\(location.column)"
    return id.hasSuffix(suffix) ? String(id.dropLast(suffix.count)) : id
}

/// The shim's id for a Swift Testing test (or suite), interned once per name.
private func swiftTestingID(of test: Test, _ api: ShimTestAPI) -> UInt32 {
    if let known = swiftTestingIDs.withLock({ $0[test.id] }) { return known }
    let id = api.id(of: reportName(of: test))
    swiftTestingIDs.withLock { $0[test.id] = id }
    return id
}

/// Names the calling task's Swift Testing test, for the shim's allocation records.
private let resolveSwiftTestingTest: @convention(c) () -> UInt32 = {
    guard let test = Test.current, let api = ShimTestAPI.shared else { return LA_TEST_NONE }
    return swiftTestingID(of: test, api)
}

/// Names the calling task's running Swift Testing test function (never a suite), for the shim's
/// test-scope hooks. A test counts as running while one of its cases runs: the runner also sets
/// `Test.current` while it plans the run (evaluating traits and arguments), with no case.
private let probeSwiftTestingTest: @convention(c) () -> UInt32 = {
    guard let test = Test.current, !test.isSuite, Test.Case.current != nil, let api = ShimTestAPI.shared else {
        return LA_TEST_NONE
    }
    return swiftTestingID(of: test, api)
}

/// Grace periods after finished tests, waited for before the process exits.
private let gracePeriods = GracePeriods()

/// Records that a test finished, and that it settled once its grace period is over; the process
/// waits for pending grace periods when XCTest's bundle finishes and when it exits.
private final class GracePeriods: @unchecked Sendable {
    let pending = DispatchGroup()
    let milliseconds = Atomic<UInt32>(0)

    func finished(_ id: UInt32, _ api: ShimTestAPI) {
        api.event(id, UInt32(LA_TEST_FINISHED))
        // What the test left running may still release its objects: judge after the grace period.
        pending.enter()
        let grace = DispatchTimeInterval.milliseconds(Int(milliseconds.load(ordering: .relaxed)))
        DispatchQueue.global().asyncAfter(deadline: .now() + grace) { [pending] in
            api.event(id, UInt32(LA_TEST_SETTLED))
            pending.leave()
        }
    }

    func waitForAll() {
        let grace = DispatchTimeInterval.milliseconds(Int(milliseconds.load(ordering: .relaxed)))
        _ = pending.wait(timeout: .now() + grace + .seconds(1))
    }
}

/// Told by the shim when a Swift Testing test starts or finishes.
private let swiftTestingScopeChanged: @convention(c) (UInt32, UInt32) -> Void = { id, phase in
    guard let api = ShimTestAPI.shared else { return }
    if phase == UInt32(LA_TEST_FINISHED) {
        gracePeriods.finished(id, api)
    } else {
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
        gracePeriods.finished(id, api)
    }

    /// From now on every XCTest test is observed: the process says so (a bundle whose own main
    /// never starts XCTest's run is audited as a program).
    func testBundleWillStart(_ testBundle: Bundle) {
        guard let started = dlsym(nil, "leakaudit_test_xctest_started") else { return }
        unsafeBitCast(started, to: (@convention(c) () -> Void).self)()
    }

    /// The last tests get their grace periods too.
    func testBundleDidFinish(_ testBundle: Bundle) {
        gracePeriods.waitForAll()
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
    // Swift Testing's run ends with exit(): its last tests' grace periods are waited for here.
    atexit { gracePeriods.waitForAll() }
}
