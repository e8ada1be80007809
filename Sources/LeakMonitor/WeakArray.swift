/// A property wrapper that stores an array of objects without retaining them.
///
/// Reading yields the elements still alive, in insertion order and with duplicates kept. Every
/// write (including `append`, which reads, changes and writes back) stores only what it is given,
/// so slots of released objects are dropped then and cannot pile up. Each read and write walks the
/// whole array; it is not synchronized, so use ``AtomicWeakArray`` when several threads share it.
///
/// ```swift
/// @WeakArray private var subscribers: [MyDelegate] = []
/// subscribers.append(delegate)
/// ```
@propertyWrapper
public struct WeakArray<Element> {
    private var storage: [WeakSlot<Element>]

    /// Creates an empty array, so that `@WeakArray var items: [T]` needs no initial value.
    public init() {
        storage = []
    }

    /// Creates an array that refers to `wrappedValue`'s elements without retaining them.
    ///
    /// - Parameter wrappedValue: Objects (class instances, possibly behind an existential).
    public init(wrappedValue: [Element]) {
        storage = wrappedValue.map(WeakSlot.init)
    }

    /// The elements still alive, in insertion order; setting replaces all of them.
    public var wrappedValue: [Element] {
        get { storage.compactMap(\.value) }
        set { storage = newValue.map(WeakSlot.init) }
    }

    /// Slots held, released ones included, so that tests can check that they do not accumulate.
    var storageCount: Int { storage.count }
}

// Sound because the weak references are only changed through `mutating` members, which need
// exclusive access, and the runtime loads weak references atomically; `Element: Sendable` makes
// handing the elements across threads safe.
extension WeakArray: @unchecked Sendable where Element: Sendable {}
