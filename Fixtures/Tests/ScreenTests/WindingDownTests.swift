// A test case keeps its worker in a property (kept by the test case: reported apart, not failing),
// and a thread the test started, still running when the test is judged (as swift-nio's event loop
// threads winding down from tearDown's syncShutdownGracefully), holds the worker on its stack too.
// The test case keeps the worker after the thread ends: it is named as the holder, and the test is
// not blamed. The leaky twin, RunawayWorkerTests, leaves a worker only its running thread's stack
// holds: the test's leak (Tests/EndToEndTests/RetainersTests.swift). The worker goes to the thread
// through a global the thread clears, so that only the thread's stack holds it there (a closure
// that captured it would hold it from the thread's `Thread` object, in its thread-local storage).
import Foundation
import XCTest

final class Worker {
    var jobs: [String] = ["index"]
}

nonisolated(unsafe) var handedWorker: Worker?
let workerStarted = DispatchSemaphore(value: 0)

/// Takes the handed worker and holds it on this thread's stack for 5 seconds.
@inline(never) func holdHandedWorker() {
    guard let held = handedWorker else { return }
    handedWorker = nil
    workerStarted.signal()
    withExtendedLifetime(held) { Thread.sleep(forTimeInterval: 5) }
}

/// Starts a thread that holds `worker` on its stack for 5 seconds, and returns once it holds it.
func startThread(holding worker: Worker) {
    handedWorker = worker
    let thread = Thread { holdHandedWorker() }
    thread.start()
    workerStarted.wait()
}

final class WindingDownTests: XCTestCase {
    var worker: Worker?

    func testKeepsAWorkerThatARunningThreadHolds() {
        let worker = Worker()
        self.worker = worker
        startThread(holding: worker)
    }
}

final class RunawayWorkerTests: XCTestCase {
    func testLeavesAWorkerToARunningThread() {
        startThread(holding: Worker())
    }
}
