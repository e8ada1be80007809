import Synchronization

/// An array of objects that it does not retain, which any number of threads can use at once.
///
/// Every member takes one lock for its whole effect, so an `append` is visible to any read that
/// starts after it returns, on any thread. Reads report only elements still alive, in insertion
/// order with duplicates kept. Slots of released objects are dropped by reads and, on appends,
/// whenever storage has doubled since the last sweep, so memory stays proportional to the peak
/// number of living elements and an append costs amortized O(1).
public final class AtomicWeakArray<Element> {
    private struct State {
        var slots: [WeakSlot<Element>] = []
        /// The slot count at which the next append sweeps out released slots.
        var sweepThreshold = AtomicWeakArray.minimumSweepThreshold

        /// Drops released slots, then waits for storage to double before sweeping again, so that
        /// the sweep's O(n) cost is spread over at least n appends.
        mutating func sweep() {
            slots.removeAll { $0.isReleased }
            sweepThreshold = Swift.max(AtomicWeakArray.minimumSweepThreshold, slots.count * 2)
        }
    }

    /// Below this many slots sweeping is not worth its cost.
    private static var minimumSweepThreshold: Int { 16 }

    private let state = LockedState(State())

    /// Creates an empty array.
    public init() {}

    /// Adds `newElement` at the end without retaining it.
    ///
    /// - Parameter newElement: An object (a class instance, possibly behind an existential).
    public func append(_ newElement: Element) {
        let slot = WeakSlot(newElement)
        state.withLock { state in
            state.slots.append(slot)
            if state.slots.count >= state.sweepThreshold {
                state.sweep()
            }
        }
    }

    /// Removes every element.
    public func removeAll() {
        state.withLock { $0 = State() }
    }

    /// The elements still alive, in insertion order; the array retains them until it is dropped.
    public var all: [Element] {
        state.withLock { state in
            // The read walks every slot anyway, so dropping released ones here is nearly free.
            state.sweep()
            return state.slots.compactMap(\.value)
        }
    }

    /// The number of elements still alive.
    public var count: Int {
        state.withLock { state in
            state.sweep()
            return state.slots.count
        }
    }

    /// Calls `body` on each element alive when the call starts, in insertion order.
    ///
    /// `body` runs on a snapshot without the lock held, so it may use this array (an `append`
    /// made by `body` is not visited), and the snapshot keeps each element alive until the end.
    ///
    /// - Parameter body: Called once per element; an error it throws ends the iteration.
    public func forEach(_ body: (Element) throws -> Void) rethrows {
        try all.forEach(body)
    }

    /// Slots held, released ones included, so that tests can check that they stay bounded.
    var storageCount: Int { state.withLock { $0.slots.count } }
}

// Sound for the array itself: its only state is behind a `Mutex`, taken by every member for its
// whole effect, and `forEach` calls out only after releasing it, so the array never races and
// callbacks may use it again. The elements are shared references handed to whichever thread
// reads; with non-`Sendable` elements, using them safely from that thread is the caller's
// responsibility (as with any object shared by reference).
extension AtomicWeakArray: @unchecked Sendable {}
