/// A budget for the types whose fully qualified names match a pattern, for types that never
/// opted in through LeakMonitor. A type's `max` declared in code wins over any pattern.
public struct BudgetPattern: Sendable, Hashable {
    /// A fully qualified type name where `*` matches any run of characters and `?` one character
    /// (`App.*ViewModel`, `App.Box<*>`); everything else, `[` and `<` included, matches itself.
    public var pattern: String
    /// The most instances of each matching type that may be alive at once.
    public var max: Int
    /// Where the pattern was given: `--budget` or a configuration file's path.
    public var origin: String

    /// Creates a budget pattern.
    public init(pattern: String, max: Int, origin: String) {
        self.pattern = pattern
        self.max = max
        self.origin = origin
    }

    /// `App.*ViewModel=1`, as given.
    public var description: String { "\(pattern)=\(max)" }
}
