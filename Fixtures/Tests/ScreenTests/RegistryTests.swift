// A process-wide registry that makes and keeps what it is asked for (a metrics registry's
// counters, by name), against a shared hub that a test hands its own view model to. With
// --retainers: RegistryTests/testRegistersACounter's counter is global state (the registry made it
// and keeps it for the rest of the run), RegistryTests/testSubscribesAFeed's feed is its leak (the
// test made it and the hub keeps it), and RegistryTests/testUnsubscribesAFeed is the clean twin.
// RegistryTests/testFormatsWithThePerThreadFormatter's formatter, kept in the thread's dictionary,
// is global state too. RegistryTests/testPoolStartsItsWorkers first uses a lazily made pool whose
// threads, started through another type's function, each make the worker the pool keeps: global
// state. RegistryTests/testPoolTakesAWorkerFromAThread hands a worker made on another thread to
// that pool, which an earlier test made: its leak; RegistryTests/testPoolTakesAndReleasesAWorker
// is its clean twin. RegistryTests/testLeavesWorkOnThePerThreadLoop leaves a closure that holds
// its session on a per-thread loop kept in the thread's dictionary (as an event loop keeps a
// timer's work): its leak, work it left, not the thread's storage; the loop itself is global
// state. RegistryTests/testRunsItsWorkOnThePerThreadLoop is its clean twin.
import XCTest

final class MetricCounter {
    let name: String
    var value = 0
    init(name: String) { self.name = name }
}

final class MetricRegistry {
    nonisolated(unsafe) static let shared = MetricRegistry()
    private var counters: [String: MetricCounter] = [:]

    func makeCounter(name: String) -> MetricCounter {
        if let known = counters[name] { return known }
        let counter = MetricCounter(name: name)
        counters[name] = counter
        return counter
    }
}

final class FeedViewModel {
    var items: [String] = []
}

/// A per-thread cache, as a library keeps one in the thread's dictionary.
final class ThreadFormatter {
    static var current: ThreadFormatter {
        if let known = Thread.current.threadDictionary["ThreadFormatter"] as? ThreadFormatter { return known }
        let made = ThreadFormatter()
        Thread.current.threadDictionary["ThreadFormatter"] = made
        return made
    }
}

/// A per-thread loop with the work scheduled on it, kept in the thread's dictionary.
final class ThreadLoop {
    var scheduled: [() -> Void] = []

    static var current: ThreadLoop {
        if let known = Thread.current.threadDictionary["ThreadLoop"] as? ThreadLoop { return known }
        let made = ThreadLoop()
        Thread.current.threadDictionary["ThreadLoop"] = made
        return made
    }

    /// Runs the work scheduled last (the test's own), and lets it go.
    func runLast() {
        scheduled.removeLast()()
    }
}

final class LoopSession {
    var pings = 0
}

final class FeedHub {
    nonisolated(unsafe) static let shared = FeedHub()
    var subscribers: [FeedViewModel] = []
}

final class PoolWorker: Sendable {
    let name: String
    init(name: String) { self.name = name }
}

/// Starts a thread that makes its own worker and hands it to `body` (as NIO's `ThreadOpsPosix.run`
/// makes each thread's `NIOThread`).
enum WorkerSpawner {
    static func spawn(name: String, _ body: @escaping @Sendable (PoolWorker) -> Void) {
        Thread { body(PoolWorker(name: name)) }.start()
    }
}

/// A lazily made pool that keeps its threads' workers for the rest of the run.
final class WorkerPool: @unchecked Sendable {
    static let shared = WorkerPool(count: 2)
    private let lock = NSCondition()
    private var workers: [PoolWorker] = []

    init(count: Int) {
        for index in 0..<count {
            WorkerSpawner.spawn(name: "worker \(index)") { [self] worker in adopt(worker) }
        }
        lock.lock()
        while workers.count < count { lock.wait() }
        lock.unlock()
    }

    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return workers.count
    }

    func adopt(_ worker: PoolWorker) {
        lock.lock()
        workers.append(worker)
        lock.broadcast()
        lock.unlock()
    }

    func release(_ worker: PoolWorker) {
        lock.lock()
        workers.removeAll { $0 === worker }
        lock.unlock()
    }
}

final class RegistryTests: XCTestCase {
    func testRegistersACounter() {
        let counter = MetricRegistry.shared.makeCounter(name: "requests")
        counter.value += 1
        XCTAssertEqual(counter.value, 1)
    }

    func testFormatsWithThePerThreadFormatter() {
        XCTAssertTrue(ThreadFormatter.current === ThreadFormatter.current)
    }

    func testLeavesWorkOnThePerThreadLoop() {
        let session = LoopSession()
        let increment = 1
        ThreadLoop.current.scheduled.append { session.pings += increment }
        XCTAssertEqual(ThreadLoop.current.scheduled.count, 1)
    }

    func testRunsItsWorkOnThePerThreadLoop() {
        let session = LoopSession()
        let loop = ThreadLoop.current
        let increment = 1
        loop.scheduled.append { session.pings += increment }
        loop.runLast()
        XCTAssertEqual(session.pings, 1)
    }

    func testSubscribesAFeed() {
        let feed = FeedViewModel()
        FeedHub.shared.subscribers.append(feed)
        XCTAssertEqual(FeedHub.shared.subscribers.count, 1)
    }

    func testUnsubscribesAFeed() {
        let feed = FeedViewModel()
        FeedHub.shared.subscribers.append(feed)
        FeedHub.shared.subscribers.removeAll { $0 === feed }
        XCTAssertTrue(FeedHub.shared.subscribers.allSatisfy { $0 !== feed })
    }

    func testPoolStartsItsWorkers() {
        XCTAssertGreaterThanOrEqual(WorkerPool.shared.count, 2)
    }

    func testPoolTakesAWorkerFromAThread() {
        let (before, after) = handAWorkerToThePool(releasing: false)
        XCTAssertEqual(after, before + 1)
    }

    func testPoolTakesAndReleasesAWorker() {
        let (before, after) = handAWorkerToThePool(releasing: true)
        XCTAssertEqual(after, before)
    }

    /// Hands the shared pool a worker made on a thread of its own (and takes it back when
    /// `releasing`): the pool's worker count before and after.
    private func handAWorkerToThePool(releasing: Bool) -> (before: Int, after: Int) {
        let pool = WorkerPool.shared
        let before = pool.count
        let handed = DispatchSemaphore(value: 0)
        WorkerSpawner.spawn(name: "handed") { worker in
            pool.adopt(worker)
            if releasing { pool.release(worker) }
            handed.signal()
        }
        handed.wait()
        return (before, pool.count)
    }
}
