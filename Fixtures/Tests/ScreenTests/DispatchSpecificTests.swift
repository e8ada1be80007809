// libdispatch releases a freed queue's specific values later, in a block it queues on the default
// global queue (`_dispatch_queue_specific_head_dispose_slow`): while the suite keeps that queue's
// threads busy, the block runs after the test's grace period. SchedulerQueueTests makes a queue
// with a specific value (a watchdog, as GRDB's `SchedulingWatchdog`) and lets the queue go while
// every thread of the default global queue spins past the grace period: Dispatch frees the
// watchdog once they are done, and the test leaks nothing. Its leaky twin,
// SchedulerRegistryTests, also hands the watchdog to a global: the test's leak
// (Tests/EndToEndTests/AttributionTests.swift).
import Dispatch
import Foundation
import XCTest

final class SchedulingWatchdog {
    var allowedQueues: [String] = ["main"]
}

enum WatchdogRegistry {
    nonisolated(unsafe) static var watchdogs: [SchedulingWatchdog] = []
}

/// Makes a queue with `watchdog` as its specific value and lets it go while every thread the
/// default global queue runs at once is busy for `seconds`.
func releaseSchedulerQueue(with watchdog: SchedulingWatchdog, whileTheGlobalQueueSpinsFor seconds: Double) {
    let threads = ProcessInfo.processInfo.activeProcessorCount
    let started = DispatchSemaphore(value: 0)
    for _ in 0..<threads {
        DispatchQueue.global().async {
            started.signal()
            let end = Date(timeIntervalSinceNow: seconds)
            while Date() < end {}
        }
    }
    for _ in 0..<threads { started.wait() }
    let key = DispatchSpecificKey<SchedulingWatchdog>()
    var queue: DispatchQueue? = DispatchQueue(label: "fixture.scheduler")
    queue?.setSpecific(key: key, value: watchdog)
    queue?.sync {}
    queue = nil
}

final class SchedulerQueueTests: XCTestCase {
    func testLetsAQueueWithASpecificValueGoWhileTheGlobalQueueIsBusy() {
        releaseSchedulerQueue(with: SchedulingWatchdog(), whileTheGlobalQueueSpinsFor: 0.6)
    }
}

final class SchedulerRegistryTests: XCTestCase {
    func testRegistersTheQueuesWatchdog() {
        let watchdog = SchedulingWatchdog()
        WatchdogRegistry.watchdogs.append(watchdog)
        releaseSchedulerQueue(with: watchdog, whileTheGlobalQueueSpinsFor: 0.6)
    }
}
