/// A reference that does not keep its object alive.
///
/// `T` is left unconstrained so that it can be a class, a class-constrained protocol
/// existential (`any MyDelegate` where `MyDelegate: AnyObject`), or a protocol whose conformers
/// all happen to be classes; `T: AnyObject` would reject the last. The value must be an object
/// at run time: anything else would be boxed on the way in and released at once.
public final class WeakObject<T> {
    private let slot: WeakSlot<T>

    /// Refers to `value` without retaining it.
    ///
    /// - Parameter value: An object (a class instance, possibly behind an existential).
    public init(_ value: T) {
        slot = WeakSlot(value)
    }

    /// The object, or `nil` once it has been deallocated.
    public var value: T? { slot.value }
}

// Sound because the only state is a weak reference assigned once in `init`, and the runtime
// loads weak references atomically; `T: Sendable` makes handing the object across threads safe.
extension WeakObject: @unchecked Sendable where T: Sendable {}

/// The storage element shared by the weak collections: a struct, so an array of them costs one
/// allocation instead of one per element.
struct WeakSlot<T> {
    // Held as `AnyObject` because `weak` needs a class-bound type and `T` is not constrained.
    private weak var object: AnyObject?

    init(_ value: T) {
        // `value as Any` opens an existential `T`, so this sees the dynamic type, not `any P`.
        assert(
            type(of: value as Any) is AnyObject.Type,
            "weak collections hold objects only; '\(type(of: value as Any))' is not a class"
        )
        object = value as AnyObject
    }

    /// The object as `T`; the cast cannot fail while the object lives, since it was a `T`.
    var value: T? {
        // Unwrap before casting: when `T` is `AnyObject` or `Any`, `nil as? T` succeeds by boxing
        // the empty optional, so a released object would come back as a live value.
        guard let object else { return nil }
        return object as? T
    }

    /// Whether the object has been deallocated, so that the slot can be dropped.
    var isReleased: Bool { object == nil }
}
