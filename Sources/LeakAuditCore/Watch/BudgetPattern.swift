import FoundationEssentials
import LeakAuditWire

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

    /// Parses `PATTERN=N`, splitting at the last `=` (type names never contain one).
    public init(parsing text: String, origin: String) throws(ConfigurationError) {
        guard let equals = text.lastIndex(of: "="), let max = Int(text[text.index(after: equals)...]), max >= 0 else {
            throw .invalidBudget(text: text, origin: origin)
        }
        let pattern = String(text[..<equals].drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
        guard !pattern.isEmpty, !pattern.contains("\n") else { throw .invalidBudget(text: text, origin: origin) }
        self.init(pattern: pattern, max: max, origin: origin)
    }

    /// `App.*ViewModel=1`, as given.
    public var description: String { "\(pattern)=\(max)" }
}

/// Whether `text` matches `pattern` (`*` any run of characters, `?` one, everything else itself):
/// the shim's matcher, shared through the wire header, so that budgets and suppressions read a
/// pattern the same way. A pattern holding a NUL matches only up to it; configuration refuses one.
func globMatches(_ pattern: String, _ text: String) -> Bool {
    var text = text
    return pattern.withCString { pattern in
        text.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { characters in
                la_wire_glob_matches(pattern, characters.baseAddress ?? pattern, characters.count)
            }
        }
    }
}

/// What leak-audit watches besides the types that opted in through LeakMonitor.
public struct WatchOptions: Sendable, Hashable {
    /// Budgets by type pattern, in order: the first that matches a type gives its budget.
    public var budgets: [BudgetPattern]
    /// List the class types still alive when the target exits.
    public var census: Bool
    /// Show runtime and Foundation internals in the census instead of folding them.
    public var censusShowsInternals: Bool
    /// Report, and fail on, instances a test left alive after it finished.
    public var leaksPerTest: Bool = false
    /// How long after a test finishes its instances may still be released (work that finishes
    /// asynchronously) before they count as leaked by it.
    public var testGraceMilliseconds: Int = 100
    /// With `leaksPerTest`: judge instances a test created as global state (under a one-time
    /// initializer) like any other leak, instead of reporting them apart.
    public var failsOnGlobalState: Bool = false
    /// Name the test of each allocation: set for test bundles and `swift test` targets.
    var attributesTests = false
    /// Watch every class's allocations, as the census does, whether or not the census is shown:
    /// set for test runs, so that they count the objects they watched and `leaksPerTest` judges
    /// every class of the package.
    var watchesEveryClass = false

    /// Creates watch options; the default watches nothing more.
    public init(budgets: [BudgetPattern] = [], census: Bool = false, censusShowsInternals: Bool = false) {
        self.budgets = budgets
        self.census = census
        self.censusShowsInternals = censusShowsInternals
    }

    /// True when the target's allocations must be watched.
    var watchesAllocations: Bool { !budgets.isEmpty || census || watchesEveryClass }

    /// LEAK_AUDIT_WATCH's value (see leak_audit_wire.h): one item per line.
    func environmentValue(targetPath: String) -> String {
        var lines = budgets.map { "budget \($0.max) \($0.pattern)" }
        if census || watchesEveryClass { lines.append("census \(targetPath)") }
        if attributesTests || leaksPerTest { lines.append("tests \(testGraceMilliseconds)") }
        return lines.joined(separator: "\n")
    }
}
