import Synchronization

/// A dictionary that any number of threads can read and write at once.
///
/// Every member takes one lock for its whole effect, so a write is visible to any read that
/// starts after it returns, on any thread. Compound updates written as two accesses, such as
/// `dictionary[key, default: 0] += 1` (a read, then a write), are two atomic steps, not one: use
/// ``withLock(_:)`` to make a read-modify-write atomic.
///
/// Closures passed to its members run while the lock is held; they must not use the same
/// dictionary, because the lock is not recursive (a nested call stops the process).
public final class AtomicDictionary<Key: Hashable, Value> {
    private let storage: LockedState<[Key: Value]>

    /// Creates an empty dictionary.
    public init() {
        storage = LockedState([:])
    }

    /// Creates a dictionary holding `elements`.
    public init(_ elements: [Key: Value]) {
        storage = LockedState(elements)
    }

    /// The value stored for `key`; assigning `nil` removes the key.
    public subscript(key: Key) -> Value? {
        get { storage.withLock { $0[key] } }
        set { storage.withLock { $0[key] = newValue } }
    }

    /// The value stored for `key`, inserting `value()` first if the key is absent.
    ///
    /// The lookup and the insertion are one atomic step: threads asking for the same missing key
    /// all get the one inserted value, and `value` is evaluated at most once per insertion (while
    /// the lock is held, so it must not use this dictionary).
    ///
    /// - Parameter value: The value to insert when `key` is absent; not evaluated otherwise.
    public subscript(key: Key, default value: @autoclosure () -> Value) -> Value {
        get {
            storage.withLock { elements in
                if let existing = elements[key] {
                    return existing
                }
                let inserted = value()
                elements[key] = inserted
                return inserted
            }
        }
        set { storage.withLock { $0[key] = newValue } }
    }

    /// The number of keys.
    public var count: Int { storage.withLock { $0.count } }

    /// Whether the dictionary has no keys.
    public var isEmpty: Bool { storage.withLock { $0.isEmpty } }

    /// A copy of the contents at one instant; later changes do not affect it.
    public var snapshot: [Key: Value] { storage.withLock { $0 } }

    /// Removes `key` and returns the value it had, or `nil` if it was absent.
    @discardableResult
    public func removeValue(forKey key: Key) -> Value? {
        storage.withLock { $0.removeValue(forKey: key) }
    }

    /// Removes every key.
    public func removeAll() {
        storage.withLock { $0.removeAll() }
    }

    /// Runs `body` with exclusive access to the contents, so that all it does is one atomic step.
    ///
    /// - Parameter body: Reads or changes the contents; it must not use this dictionary itself.
    /// - Returns: What `body` returns.
    public func withLock<R>(_ body: (inout [Key: Value]) throws -> R) rethrows -> R {
        try storage.withLock(body)
    }
}

// Sound for the dictionary itself: its only state is behind a `Mutex`, taken by every member
// for its whole effect, so the dictionary never races. Keys and values are shared references
// handed to whichever thread asks; with non-`Sendable` types, using them safely from the thread
// that receives them is the caller's responsibility (as with any object shared by reference).
extension AtomicDictionary: @unchecked Sendable {}

/// State that is only reached through a `Mutex`, for types that need not be `Sendable`.
///
/// `Mutex.withLock` requires results and the protected value to be `sending`, which rejects
/// returning an element that stays stored (a cached value, a live object). The lock gives the
/// same exclusivity either way, so this wrapper moves values in and out through an unchecked box
/// and leaves the cross-thread use of non-`Sendable` elements to the collection that owns it.
struct LockedState<State>: ~Copyable {
    // Internal rather than private: with `private`, Swift 6.3 emits references to their metadata
    // from other files in the same batch without linkage and the LLVM verifier aborts.
    struct Box: @unchecked Sendable {
        var value: State
    }

    struct ResultBox<R>: @unchecked Sendable {
        var value: R
    }

    private let mutex: Mutex<Box>

    init(_ initial: State) {
        mutex = Mutex(Box(value: initial))
    }

    /// Runs `body` with the lock held; typed `throws(E)` lets callers that cannot throw skip `try`.
    func withLock<R, E: Error>(_ body: (inout State) throws(E) -> R) throws(E) -> R {
        try mutex.withLock { (box: inout sending Box) throws(E) -> ResultBox<R> in
            ResultBox(value: try body(&box.value))
        }.value
    }
}
