// Work a test leaves in flight releases its object after the grace period, while later tests run
// (as an event loop releases the future of a connection pool's 60 s idle timer, or of a 2 s
// timeout, when the timer fires): released later, reported apart, not failing. The
// leaky twin leaves its object to a list nothing empties: alive at exit, its leak.
//
// XCTest runs the tests in order. testALeavesAJobToATimer hands its job to a timer on a queue of its
// own that drops it 500 ms later (the end-to-end test sets a grace period of 20 ms);
// testCWaitsForTheTimer, the last, waits until the timer has dropped it, so that its release comes
// while the process's tests still run, however loaded the machine. A release after the last test
// finished would be the process's end, and stay the test's leak.
import Foundation
import XCTest

final class PendingJob {
    var payload = [1, 2, 3]
}

/// Signalled once the timer has released testALeavesAJobToATimer's job (its deallocation recorded).
let timerReleasedTheJob = DispatchSemaphore(value: 0)
let jobTimerQueue = DispatchQueue(label: "fixture.job-timer")

/// Jobs nothing releases: the leaky twin's.
nonisolated(unsafe) var abandonedJobs: [PendingJob] = []

final class LateReleaseTests: XCTestCase {
    func testALeavesAJobToATimer() {
        nonisolated(unsafe) var job: PendingJob? = PendingJob()
        jobTimerQueue.asyncAfter(deadline: .now() + 0.5) {
            if job != nil { job = nil }
            timerReleasedTheJob.signal()
        }
    }

    func testBLeavesAJobThatNothingReleases() {
        abandonedJobs.append(PendingJob())
    }

    func testCWaitsForTheTimer() {
        XCTAssertEqual(timerReleasedTheJob.wait(timeout: .now() + 30), .success)
    }
}
