import Dispatch
import Synchronization
import XCTest

@testable import LeakMonitor

private final class Token: Sendable {
    let id: Int
    init(_ id: Int = 0) { self.id = id }
}

private protocol Listener: AnyObject {
    func didUpdate()
}

/// A protocol that is not class-bound, though its only conformer is a class.
private protocol Named {
    var name: String { get }
}

private final class Recorder: Listener, Named {
    var updates = 0
    let name: String
    init(_ name: String = "recorder") { self.name = name }
    func didUpdate() { updates += 1 }
}

/// The seed's multicast example, written against the public API.
private final class EventBroadcaster {
    @WeakArray private var subscribers: [Listener] = []

    func subscribe(_ subscriber: Listener) {
        subscribers.append(subscriber)
    }

    func notifyAll() {
        subscribers.forEach { $0.didUpdate() }
    }

    var subscriberCount: Int { subscribers.count }
}

/// `@WeakArray` with no initial value goes through `init()`.
private final class Registry {
    @WeakArray var references: [AnyObject]

    func count(with reference: AnyObject) -> Int {
        references.append(reference)
        return references.count
    }
}

private struct Stop: Error {}

final class WeakCollectionsTests: XCTestCase {
    // MARK: WeakObject

    func testWeakObjectDoesNotRetainAndBecomesNilOnRelease() {
        var token: Token? = Token(7)
        weak let observer = token
        let reference = WeakObject(token!)
        XCTAssertEqual(reference.value?.id, 7)
        XCTAssertTrue(reference.value === token)
        token = nil
        XCTAssertNil(observer, "WeakObject kept its object alive")
        XCTAssertNil(reference.value)
    }

    func testWeakObjectHoldsClassBoundExistential() {
        var recorder: Recorder? = Recorder()
        let reference = WeakObject<any Listener>(recorder!)
        reference.value?.didUpdate()
        XCTAssertEqual(recorder?.updates, 1)
        recorder = nil
        XCTAssertNil(reference.value)
    }

    func testWeakObjectHoldsNonClassBoundExistentialOfAClass() {
        var recorder: Recorder? = Recorder("kept")
        let reference = WeakObject<any Named>(recorder!)
        XCTAssertEqual(reference.value?.name, "kept")
        recorder = nil
        XCTAssertNil(reference.value)
    }

    func testWeakObjectOfAnyObjectAndAnyBecomesNilOnRelease() {
        var token: Token? = Token(1)
        let asAnyObject = WeakObject<AnyObject>(token!)
        let asAny = WeakObject<Any>(token!)
        XCTAssertTrue(asAnyObject.value === token)
        XCTAssertEqual((asAny.value as? Token)?.id, 1)
        token = nil
        // `nil as? AnyObject` boxes the empty optional rather than failing: it must not leak out.
        XCTAssertNil(asAnyObject.value)
        XCTAssertNil(asAny.value)
    }

    // MARK: WeakArray

    func testWeakArrayKeepsOrderAndDuplicatesAndDropsReleased() {
        let first = Token(1)
        var second: Token? = Token(2)
        let third = Token(3)
        var array = WeakArray(wrappedValue: [first, second!, first, third, second!])
        XCTAssertEqual(array.wrappedValue.map(\.id), [1, 2, 1, 3, 2])

        second = nil
        XCTAssertEqual(array.wrappedValue.map(\.id), [1, 1, 3])
        XCTAssertTrue(array.wrappedValue[0] === first)
        XCTAssertTrue(array.wrappedValue[1] === first)

        array.wrappedValue.append(Token(4))  // released as soon as the call returns
        array.wrappedValue.append(third)
        XCTAssertEqual(array.wrappedValue.map(\.id), [1, 1, 3, 3])
    }

    func testWeakArrayCompactsOnSet() {
        var array = WeakArray<Token>()
        for id in 0..<10_000 {
            array.wrappedValue.append(Token(id))
        }
        XCTAssertEqual(array.wrappedValue.count, 0)
        XCTAssertLessThanOrEqual(array.storageCount, 1, "released slots accumulate on set")

        let kept = (0..<3).map(Token.init)
        array.wrappedValue = kept
        array.wrappedValue.append(Token(99))
        array.wrappedValue.append(kept[0])
        XCTAssertEqual(array.wrappedValue.map(\.id), [0, 1, 2, 0])
        XCTAssertEqual(array.storageCount, 4)
    }

    func testWeakArrayAsPropertyWrapperWithProtocolElements() {
        let broadcaster = EventBroadcaster()
        let staying = Recorder()
        var leaving: Recorder? = Recorder()
        broadcaster.subscribe(staying)
        broadcaster.subscribe(leaving!)
        broadcaster.subscribe(staying)
        broadcaster.notifyAll()
        XCTAssertEqual(staying.updates, 2, "duplicate subscription notified once")
        XCTAssertEqual(leaving?.updates, 1)

        leaving = nil
        XCTAssertEqual(broadcaster.subscriberCount, 2)
        broadcaster.notifyAll()
        XCTAssertEqual(staying.updates, 4)
    }

    func testWeakArrayWithoutInitialValueUsesEmptyInit() {
        let registry = Registry()
        let kept = Token()
        XCTAssertEqual(registry.count(with: kept), 1)
        weak var observer: Token?
        do {
            let temporary = Token()
            observer = temporary
            XCTAssertEqual(registry.count(with: temporary), 2)
        }
        XCTAssertNil(observer, "registry retained")
        XCTAssertEqual(registry.count(with: kept), 2)
        XCTAssertTrue(registry.references.allSatisfy { $0 === kept })
    }

    // MARK: AtomicWeakArray

    func testAtomicWeakArrayKeepsOrderAndDuplicatesAndDropsReleased() {
        let array = AtomicWeakArray<Token>()
        let first = Token(1)
        var second: Token? = Token(2)
        array.append(first)
        array.append(second!)
        array.append(first)
        array.append(second!)
        XCTAssertEqual(array.all.map(\.id), [1, 2, 1, 2])
        XCTAssertEqual(array.count, 4)

        second = nil
        XCTAssertEqual(array.count, 2)
        XCTAssertEqual(array.all.map(\.id), [1, 1])
        var visited: [Int] = []
        array.forEach { visited.append($0.id) }
        XCTAssertEqual(visited, [1, 1])

        array.removeAll()
        XCTAssertEqual(array.count, 0)
        XCTAssertTrue(array.all.isEmpty)
        XCTAssertTrue(first.id == 1)  // keeps `first` alive until here
    }

    func testAtomicWeakArrayOfAnyObjectDropsReleased() {
        let array = AtomicWeakArray<AnyObject>()
        let kept = Token(1)
        array.append(kept)
        array.append(Token(2))  // released when the call returns
        XCTAssertEqual(array.count, 1)
        XCTAssertEqual(array.all.count, 1)
        XCTAssertTrue(array.all.first === kept)
    }

    func testAtomicWeakArrayHoldsProtocolExistentials() {
        let array = AtomicWeakArray<any Listener>()
        let staying = Recorder()
        var leaving: Recorder? = Recorder()
        array.append(staying)
        array.append(leaving!)
        array.forEach { $0.didUpdate() }
        XCTAssertEqual(leaving?.updates, 1)
        leaving = nil
        array.forEach { $0.didUpdate() }
        XCTAssertEqual(staying.updates, 2)
        XCTAssertEqual(array.count, 1)
    }

    func testAtomicWeakArrayWriteIsVisibleToNextReadFromAnotherThread() {
        let array = AtomicWeakArray<Token>()
        let tokens = (0..<100).map(Token.init)
        for token in tokens {
            // The seed appended asynchronously, so a read right after could miss the write.
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                array.append(token)
                done.signal()
            }
            done.wait()
            XCTAssertEqual(array.all.last?.id, token.id)
        }
        XCTAssertEqual(array.count, tokens.count)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            array.removeAll()
            done.signal()
        }
        done.wait()
        XCTAssertEqual(array.count, 0)
    }

    func testAtomicWeakArrayConcurrentAppendsAreAllKept() {
        let threads = 8
        let perThread = 10_000
        let array = AtomicWeakArray<Token>()
        let tokens = (0..<threads * perThread).map(Token.init)
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<perThread {
                array.append(tokens[thread * perThread + index])
            }
        }
        XCTAssertEqual(array.count, threads * perThread)
        let ids = array.all.map(\.id)
        XCTAssertEqual(Set(ids).count, threads * perThread)
        // Each thread's appends keep their own order.
        for thread in 0..<threads {
            let own = ids.filter { $0 / perThread == thread }
            XCTAssertEqual(own, Array(thread * perThread..<(thread + 1) * perThread))
        }
    }

    func testAtomicWeakArrayConcurrentReadersAndWritersAgree() {
        let array = AtomicWeakArray<Token>()
        let tokens = (0..<4 * 2_000).map(Token.init)
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            if worker < 4 {
                for index in 0..<2_000 {
                    array.append(tokens[worker * 2_000 + index])
                    array.append(Token(-1))  // dies at once; exercises sweeping under contention
                }
            } else {
                for _ in 0..<20 {
                    let seen = array.count
                    XCTAssertLessThanOrEqual(seen, 2 * tokens.count)
                    var visits = 0
                    array.forEach { _ in visits += 1 }
                    XCTAssertLessThanOrEqual(visits, 2 * tokens.count)
                }
            }
        }
        XCTAssertEqual(array.count, tokens.count)
        XCTAssertFalse(array.all.contains { $0.id == -1 })
    }

    func testAtomicWeakArrayForEachBodyMayAppendWithoutDeadlock() {
        let array = AtomicWeakArray<Token>()
        let originals = (0..<5).map(Token.init)
        let extras = (100..<105).map(Token.init)
        originals.forEach(array.append)

        // On another thread, so that a deadlock fails the wait instead of hanging the run.
        let visited = Mutex<[Int]>([])
        let finished = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            array.forEach { token in
                visited.withLock { $0.append(token.id) }
                array.append(extras[token.id])
                _ = array.count  // reads inside the body must not deadlock either
            }
            finished.signal()
        }
        guard finished.wait(timeout: .now() + 10) == .success else {
            return XCTFail("forEach deadlocked when its body used the array")
        }
        XCTAssertEqual(
            visited.withLock { $0 }, [0, 1, 2, 3, 4],
            "body must see the snapshot, not its own appends")
        XCTAssertEqual(array.all.map(\.id), [0, 1, 2, 3, 4, 100, 101, 102, 103, 104])
    }

    func testAtomicWeakArrayForEachRethrowsAndStops() {
        let array = AtomicWeakArray<Token>()
        let tokens = (0..<5).map(Token.init)
        tokens.forEach(array.append)
        var visited = 0
        XCTAssertThrowsError(
            try array.forEach { token in
                visited += 1
                if token.id == 2 { throw Stop() }
            }
        ) { XCTAssertTrue($0 is Stop) }
        XCTAssertEqual(visited, 3)
        // The lock was released despite the error.
        array.append(tokens[0])
        XCTAssertEqual(array.count, 6)
    }

    func testAtomicWeakArrayForEachSnapshotKeepsElementsAlive() {
        let array = AtomicWeakArray<Token>()
        var token: Token? = Token(5)
        array.append(token!)
        var seen: [Int] = []
        array.forEach { element in
            token = nil  // the snapshot still holds it
            seen.append(element.id)
        }
        XCTAssertEqual(seen, [5])
        XCTAssertEqual(array.count, 0)
    }

    func testAtomicWeakArrayStorageStaysBoundedWithShortLivedObjects() {
        let array = AtomicWeakArray<Token>()
        for id in 0..<100_000 {
            array.append(Token(id))  // released when the call returns
            XCTAssertLessThanOrEqual(array.storageCount, 32)
        }
        XCTAssertEqual(array.count, 0)
        XCTAssertEqual(array.storageCount, 0)
    }

    func testAtomicWeakArrayAppendSweepsOnlyWhenStorageDoubles() {
        let array = AtomicWeakArray<Token>()
        let kept = (0..<100).map(Token.init)
        kept.forEach(array.append)
        // Sweeps ran at 16, 32 and 64 slots, all living, so the next one waits for 128 slots.
        XCTAssertEqual(array.storageCount, 100)
        for _ in 0..<27 {
            array.append(Token(-1))
        }
        XCTAssertEqual(array.storageCount, 127, "an append rescanned storage before it doubled")
        array.append(Token(-1))
        // The token being appended is still alive during that sweep, so it survives it.
        XCTAssertEqual(array.storageCount, 101, "no sweep once storage doubled")
        XCTAssertEqual(array.all.map(\.id), kept.map(\.id))
    }

    func testAtomicWeakArrayStorageStaysProportionalToLivingObjects() {
        let array = AtomicWeakArray<Token>()
        var kept: [Token] = []
        var peakStorage = 0
        for id in 0..<100_000 {
            let token = Token(id)
            array.append(token)
            if id % 100 == 0 { kept.append(token) }
            peakStorage = max(peakStorage, array.storageCount)
        }
        // Sweeps wait for storage to double, so it never exceeds about twice the living count.
        XCTAssertLessThanOrEqual(peakStorage, 2 * kept.count + 16)
        XCTAssertEqual(array.count, kept.count)
        XCTAssertEqual(array.all.map(\.id), kept.map(\.id))
    }
}
