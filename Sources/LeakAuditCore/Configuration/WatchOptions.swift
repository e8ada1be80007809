import LeakAuditModel

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
    /// Find who holds each instance still alive when a process exits (`--retainers`): the
    /// process waits at exit while leak-audit copies its memory.
    public var retainers = false
    /// Report the Swift objects that nothing reaches when each audited Swift process exits
    /// (`--unreachable`): every such process attaches, at its exit at the latest, and waits there
    /// while leak-audit copies its memory.
    public var unreachable = false
    /// Given nothing else to watch: the processes that link no LeakMonitor are checked as with
    /// `unreachable`; those that link it are audited as they would be without it.
    public var unreachableByDefault = false
    /// With `leaksPerTest`: judge instances a test created as global state (under a one-time
    /// initializer) like any other leak, instead of reporting them apart.
    public var failsOnGlobalState: Bool = false
    /// With `leaksPerTest` and `retainers`: judge instances that only a test case object holds
    /// like any other leak, instead of reporting them apart.
    public var failsOnTestCaseState: Bool = false
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

    /// The budget pattern that a type record names by its position among the `budget` lines of
    /// LEAK_AUDIT_WATCH, which `environmentValue` writes in `budgets` order; nil for a position
    /// this run never wrote. The one reader of that position, beside its one writer.
    func budgetPattern(at index: Int) -> BudgetPattern? {
        budgets.indices.contains(index) ? budgets[index] : nil
    }

    /// With `leaksPerTest` and without `retainers`: each process whose tests left an instance of a
    /// type judged per test alive is walked once, at its exit, to tell what only XCTest's test
    /// case objects keep (alive until the run ends) and what a global's object made and keeps from
    /// the tests' leaks; no path is shown for the leaks (`HeapWalks.instancesToExplain`).
    var walksAtExitForTestCases: Bool { leaksPerTest && !retainers && !failsOnTestCaseState }

    /// Test processes say when each test starts, finishes and settles (LEAK_AUDIT_WATCH's `tests`
    /// line), and ask before they exit whether their finished tests still have instances alive.
    var observesTests: Bool { attributesTests || leaksPerTest }

    /// Processes wait for heap walks: after each settled test and at exit (`retainers`), or at
    /// exit only (`walksAtExitForTestCases`, `unreachable`, `unreachableByDefault`).
    var walksHeaps: Bool { retainers || walksAtExitForTestCases || checksUnreachable }

    /// Some processes are checked for objects nothing reaches: `unreachable`, or by default.
    var checksUnreachable: Bool { unreachable || unreachableByDefault }

    /// LEAK_AUDIT_WATCH's value (see leak_audit_wire.h): one item per line.
    func environmentValue(targetPath: String) -> String {
        var lines = budgets.map { "budget \($0.max) \($0.pattern)" }
        if census || watchesEveryClass {
            lines.append("census \(targetPath)")
            // The toolchain's classes are folded into a count unless the census shows them: no
            // report shows their stacks (TypeOrigin.isInternalType).
            if !censusShowsInternals { lines += TypeOrigin.internalTypePatterns.map { "no-stacks \($0)" } }
        }
        if observesTests { lines.append("tests \(testGraceMilliseconds)") }
        if retainers {
            lines.append("retainers")
        } else if walksAtExitForTestCases {
            lines.append("exit-walk")
        }
        if unreachable {
            lines.append("unreachable")
        } else if unreachableByDefault {
            lines.append("unreachable-default")
        }
        return lines.joined(separator: "\n")
    }
}
