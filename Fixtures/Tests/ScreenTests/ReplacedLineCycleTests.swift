import Foundation
import XCTest

// A line whose instances later tests replace, run once more by a test that leaves its instance in
// a cycle. XCTest runs the tests in order; each waits longer than the grace period first.
//
// ReplacedLineCycleTests.testA, testB and testC each open a `ReplaceableSession` on one line and
// keep it in a slot that the next test's replaces (global state). testDLeaksASessionInACycle opens
// one on the same line, then its handler captures it: a cycle that nothing else holds, so when
// its test settles no global reaches it. The line has instances that later tests replaced, yet
// that one is its test's leak. The clean twin is ReplacedLineCycleCleanTests' test, which drops
// its session, with testA, testB and testC.

final class ReplaceableSession {
    var onClose: (() -> Void)?
}

enum CurrentSession {
    /// The session that the last test opened; the next one's replaces it.
    nonisolated(unsafe) static var slot: ReplaceableSession?

    /// One line for every test's session.
    static func open() -> ReplaceableSession { ReplaceableSession() }
}

/// Well past leak-audit's grace period (100 ms by default; the end-to-end test sets 20).
private func waitPastTheGracePeriod() { Thread.sleep(forTimeInterval: 0.3) }

final class ReplacedLineCycleTests: XCTestCase {
    func testAOpensASession() {
        waitPastTheGracePeriod()
        CurrentSession.slot = CurrentSession.open()
    }

    func testBOpensASession() {
        waitPastTheGracePeriod()
        CurrentSession.slot = CurrentSession.open()
    }

    func testCOpensASession() {
        waitPastTheGracePeriod()
        CurrentSession.slot = CurrentSession.open()
    }

    func testDLeaksASessionInACycle() {
        waitPastTheGracePeriod()
        let session = CurrentSession.open()
        session.onClose = { _ = session }
    }
}

/// The clean twin's own test, run with ReplacedLineCycleTests' first three.
final class ReplacedLineCycleCleanTests: XCTestCase {
    func testDClosesItsSession() {
        waitPastTheGracePeriod()
        var session: ReplaceableSession? = CurrentSession.open()
        session?.onClose = {}
        session = nil
    }
}
