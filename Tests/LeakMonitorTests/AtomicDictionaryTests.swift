import Dispatch
import Synchronization
import XCTest

@testable import LeakMonitor

private final class Entry: Sendable {
    let key: Int
    init(_ key: Int) { self.key = key }
}

private struct Stop: Error {}

final class AtomicDictionaryTests: XCTestCase {
    func testSubscriptStoresReplacesAndRemoves() {
        let dictionary = AtomicDictionary<String, Int>()
        XCTAssertTrue(dictionary.isEmpty)
        XCTAssertNil(dictionary["a"])

        dictionary["a"] = 1
        dictionary["b"] = 2
        dictionary["a"] = 3
        XCTAssertEqual(dictionary["a"], 3)
        XCTAssertEqual(dictionary.count, 2)
        XCTAssertEqual(dictionary.snapshot, ["a": 3, "b": 2])

        dictionary["a"] = nil
        XCTAssertNil(dictionary["a"])
        XCTAssertEqual(dictionary.removeValue(forKey: "b"), 2)
        XCTAssertNil(dictionary.removeValue(forKey: "b"))
        XCTAssertEqual(dictionary.count, 0)
    }

    func testSnapshotIsACopy() {
        let dictionary = AtomicDictionary(["a": 1])
        let before = dictionary.snapshot
        dictionary["b"] = 2
        XCTAssertEqual(before, ["a": 1])
        dictionary.removeAll()
        XCTAssertTrue(dictionary.isEmpty)
    }

    func testDefaultSubscriptInsertsOnceAndSkipsDefaultWhenPresent() {
        let dictionary = AtomicDictionary<String, Entry>()
        var evaluations = 0
        func make() -> Entry {
            evaluations += 1
            return Entry(evaluations)
        }

        let first = dictionary["k", default: make()]
        let second = dictionary["k", default: make()]
        XCTAssertEqual(evaluations, 1, "default evaluated although the key was present")
        XCTAssertTrue(first === second)
        XCTAssertTrue(dictionary["k"] === first, "the default was returned but not stored")

        dictionary["k", default: make()] = Entry(42)
        XCTAssertEqual(dictionary["k"]?.key, 42)
        XCTAssertEqual(evaluations, 1)
    }

    func testDefaultSubscriptIsOneAtomicGetOrInsertAcrossThreads() {
        let threads = 8
        let keys = 300
        let dictionary = AtomicDictionary<Int, Entry>()
        let evaluations = Mutex([Int](repeating: 0, count: keys))
        // observed[thread][key]: the instance that thread got back for that key.
        let observed = AtomicDictionary<Int, [ObjectIdentifier]>()

        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            var seen: [ObjectIdentifier] = []
            seen.reserveCapacity(keys)
            // Every thread walks the same keys in the same order, so they collide on each one.
            for key in 0..<keys {
                let entry = dictionary[
                    key,
                    default: {
                        evaluations.withLock { $0[key] += 1 }
                        // A slow default widens the window in which a non-atomic lookup-then-insert
                        // would let a second thread miss the key too.
                        usleep(50)
                        return Entry(key)
                    }()
                ]
                seen.append(ObjectIdentifier(entry))
            }
            observed[thread] = seen
        }

        XCTAssertEqual(dictionary.count, keys)
        let counts = evaluations.withLock { $0 }
        XCTAssertEqual(counts.count { $0 != 1 }, 0, "keys whose default was not evaluated once")
        let stored = (0..<keys).compactMap { dictionary[$0].map(ObjectIdentifier.init) }
        XCTAssertEqual(stored.count, keys)
        XCTAssertEqual(observed.count, threads)
        for thread in 0..<threads {
            let seen = observed[thread] ?? []
            XCTAssertEqual(seen.count, keys)
            let differing = zip(seen, stored).count { $0 != $1 }
            XCTAssertEqual(differing, 0, "keys for which thread \(thread) got a different instance")
        }
    }

    func testConcurrentWritesOfDistinctKeysAreAllKept() {
        let threads = 8
        let perThread = 10_000
        let dictionary = AtomicDictionary<Int, Int>()
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<perThread {
                let key = thread * perThread + index
                dictionary[key] = key * 2
                XCTAssertEqual(dictionary[key], key * 2)
            }
        }
        XCTAssertEqual(dictionary.count, threads * perThread)
        let snapshot = dictionary.snapshot
        XCTAssertTrue(snapshot.allSatisfy { $0.value == $0.key * 2 })
    }

    func testWithLockMakesReadModifyWriteAtomic() {
        let threads = 8
        let perThread = 10_000
        let dictionary = AtomicDictionary<String, Int>()
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            for index in 0..<perThread {
                dictionary.withLock { $0["total", default: 0] += 1 }
                dictionary.withLock { $0[index % 2 == 0 ? "even" : "odd", default: 0] += 1 }
            }
        }
        XCTAssertEqual(dictionary["total"], threads * perThread)
        XCTAssertEqual(dictionary["even"], threads * perThread / 2)
        XCTAssertEqual(dictionary["odd"], threads * perThread / 2)
    }

    func testWithLockReturnsAndRethrows() {
        let dictionary = AtomicDictionary(["a": 1, "b": 2])
        let sum = dictionary.withLock { $0.values.reduce(0, +) }
        XCTAssertEqual(sum, 3)
        XCTAssertThrowsError(
            try dictionary.withLock { elements in
                elements["c"] = 3
                throw Stop()
            }
        ) { XCTAssertTrue($0 is Stop) }
        // Changes made before the error stay, and the lock was released.
        XCTAssertEqual(dictionary["c"], 3)
    }

    func testWriteIsVisibleToNextReadFromAnotherThread() {
        let dictionary = AtomicDictionary<Int, Int>()
        for key in 0..<100 {
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                dictionary[key] = key
                done.signal()
            }
            done.wait()
            XCTAssertEqual(dictionary[key], key)
        }
        XCTAssertEqual(dictionary.count, 100)
    }
}
