// Loaded by libLeakAuditPreload.so into a test bundle's process (when leak-audit asks for test
// attribution) before the tests start. It tells the shim which test is running, so that every
// tracked allocation names its test, with no per-test code from the user:
// - XCTest runs one test at a time: an observer sets the current test and records when each test
//   starts, finishes and, after a grace period for work that finishes asynchronously, settles.
// - Swift Testing runs tests in parallel tasks: a resolver names the calling task's test
//   (`Test.current`), so allocations are attributed exactly whatever runs beside them.
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

    let intern: Intern
    let event: Event
    let setCurrent: SetCurrent
    let setResolver: SetResolver

    static let shared: ShimTestAPI? = {
        guard let intern = dlsym(nil, "leakaudit_test_intern"), let event = dlsym(nil, "leakaudit_test_event"),
            let setCurrent = dlsym(nil, "leakaudit_test_set_current"),
            let setResolver = dlsym(nil, "leakaudit_test_set_resolver")
        else { return nil }
        return ShimTestAPI(
            intern: unsafeBitCast(intern, to: Intern.self), event: unsafeBitCast(event, to: Event.self),
            setCurrent: unsafeBitCast(setCurrent, to: SetCurrent.self),
            setResolver: unsafeBitCast(setResolver, to: SetResolver.self))
    }()

    func id(of name: String) -> UInt32 {
        var name = name
        return name.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { intern($0.baseAddress, $0.count) }
        }
    }
}

/// Test ids by name, so that the resolver interns each Swift Testing test once.
private let swiftTestingIDs = Mutex<[String: UInt32]>([:])

/// Names the calling task's Swift Testing test, for the shim's allocation records.
private let resolveSwiftTestingTest: @convention(c) () -> UInt32 = {
    guard let test = Test.current, let api = ShimTestAPI.shared else { return LA_TEST_NONE }
    let name = String(describing: test.id)
    if let known = swiftTestingIDs.withLock({ $0[name] }) { return known }
    let id = api.id(of: name)
    swiftTestingIDs.withLock { $0[name] = id }
    return id
}

/// Records XCTest's test phases and sets the current test.
private final class XCTestPhases: NSObject, XCTestObservation, @unchecked Sendable {
    let api: ShimTestAPI
    let grace: DispatchTimeInterval
    /// Grace periods still running: the bundle waits for them, so the last tests get theirs too.
    let pending = DispatchGroup()

    init(api: ShimTestAPI, graceMilliseconds: UInt32) {
        self.api = api
        grace = .milliseconds(Int(graceMilliseconds))
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
        api.event(id, UInt32(LA_TEST_FINISHED))
        // What the test left running may still release its objects: judge after the grace period.
        let api = self.api
        pending.enter()
        DispatchQueue.global().asyncAfter(deadline: .now() + grace) { [pending] in
            api.event(id, UInt32(LA_TEST_SETTLED))
            pending.leave()
        }
    }

    func testBundleDidFinish(_ testBundle: Bundle) {
        _ = pending.wait(timeout: .now() + grace + .seconds(1))
    }
}

/// Installs the observers; called by the preloaded library's constructor, before the tests start.
@_cdecl("leakaudit_observer_install")
public func leakauditObserverInstall(_ graceMilliseconds: UInt32) {
    guard let api = ShimTestAPI.shared else { return }
    api.setResolver(resolveSwiftTestingTest)
    XCTestObservationCenter.shared.addTestObserver(XCTestPhases(api: api, graceMilliseconds: graceMilliseconds))
}
