import Foundation
import XCTest

// A generic subscription that makes its lock on one line for every specialization, as
// combine-schedulers' `Publishers.Timer<S>.Inner` does. XCTest runs the tests in order; each test
// after the first waits longer than the grace period before it starts a timer.
//
// GenericTimerTests.testAKeepsATimerOnInts leaks its `TimerSubscription<Int>` (kept by a list that
// nothing empties), and with it that subscription's lock. testBStartsATimerOnStrings and
// testCStartsATimerOnStrings each keep a `TimerSubscription<String>` in a slot that the next
// test's replaces (global state), and testDStopsTheTimer empties the slot. The lock's line then
// has instances that later tests replaced, but the first test's lock is held by the subscription
// it leaked: its leak, not global state. The clean twin is GenericTimerCleanTests' test, which
// drops its subscription, then GenericTimerTests' other three.

final class TimerLock {}

final class TimerSubscription<Scheduler> {
    /// One line for every specialization.
    let lock = TimerLock()
}

enum CurrentTimer {
    /// The subscription that the last test started; the next one's replaces it.
    nonisolated(unsafe) static var slot: AnyObject?

    /// One line for every test that starts a timer on strings.
    static func startOnStrings() { slot = TimerSubscription<String>() }
}

/// Subscriptions kept for ever: the leaky test's leak.
nonisolated(unsafe) var keptTimerSubscriptions: [AnyObject] = []

/// Well past leak-audit's grace period (100 ms by default; the end-to-end test sets 20).
private func waitPastTheGracePeriod() { Thread.sleep(forTimeInterval: 0.5) }

final class GenericTimerTests: XCTestCase {
    func testAKeepsATimerOnInts() {
        keptTimerSubscriptions.append(TimerSubscription<Int>())
    }

    func testBStartsATimerOnStrings() {
        waitPastTheGracePeriod()
        CurrentTimer.startOnStrings()
    }

    func testCStartsATimerOnStrings() {
        waitPastTheGracePeriod()
        CurrentTimer.startOnStrings()
    }

    func testDStopsTheTimer() {
        waitPastTheGracePeriod()
        CurrentTimer.slot = nil
    }
}

/// The clean twin's first test, run before GenericTimerTests' other three (XCTest runs the classes
/// in order of their names).
final class GenericTimerCleanTests: XCTestCase {
    func testADropsATimerOnInts() {
        var subscription: TimerSubscription<Int>? = TimerSubscription<Int>()
        XCTAssertNotNil(subscription?.lock)
        subscription = nil
    }
}
