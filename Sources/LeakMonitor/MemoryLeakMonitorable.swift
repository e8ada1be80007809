/// A class whose live instances are counted against a budget.
///
/// Conform, declare ``max``, and call ``MemoryLeakMonitor/validate(_:)`` at the end of every
/// designated initializer:
///
/// ```swift
/// final class LoginViewModel: MemoryLeakMonitorable {
///     var max: Int { 1 }
///     init() { MemoryLeakMonitor.validate(self) }
/// }
/// ```
///
/// Budgets are per dynamic type: a subclass has its own (override `max` to change it), and each
/// specialization of a generic class (`Box<Int>`, `Box<String>`) is a type of its own.
public protocol MemoryLeakMonitorable: AnyObject {
    /// The most instances of this dynamic type that may be alive at once.
    var max: Int { get }

    /// The name reports use for this type.
    ///
    /// Defaults to the dynamic type's fully qualified name with its generic arguments, such as
    /// `App.Box<Swift.String>`. It is read once per dynamic type, at its first validation.
    var leakReportName: String { get }
}

extension MemoryLeakMonitorable {
    /// The dynamic type's fully qualified name, such as `App.Box<Swift.String>`.
    ///
    /// The runtime's own name for the type, the one `String(reflecting:)` prints and watch mode
    /// reads: asked directly, it costs no protocol conformance lookups (`String(reflecting:)` made
    /// about 1.4 M instructions of each type's first `validate`).
    public var leakReportName: String { _typeName(type(of: self), qualified: true) }
}
