import ArgumentParser
import LeakAuditCore
import LeakAuditModel

/// Budgets for types that never opted in, and the census of survivors.
struct WatchOptionGroup: ParsableArguments {
    @Option(
        name: .customLong("budget"),
        help: ArgumentHelp(
            "A budget for types that do not conform to MemoryLeakMonitorable: a fully qualified type name, where * matches any characters and ? one, '=' and the most instances alive at once. Repeatable; the first matching pattern wins, and a max declared in code wins over any pattern.",
            valueName: "pattern=n"))
    var budgets: [String] = []

    @Option(
        help: ArgumentHelp(
            "Read budgets and suppressions from this configuration file (docs/configuration.md). Without it, ./\(ConfigurationFile.defaultFileName) is read when present.",
            valueName: "file"))
    var config: String?

    @Flag(
        help:
            "List the Swift class types still alive when the target exits, most instances first, with their allocation stacks. Informs; gates nothing."
    )
    var census = false

    @Flag(
        name: .customLong("census-all"),
        help: "In the census, also show the Swift runtime's, Foundation's and XCTest's own types (folded by default).")
    var censusAll = false

    @Flag(
        help:
            "For every instance still alive at exit of a type over budget (and, with --leaks-per-test, every instance a test left alive), show who holds it: the path from a global, a thread's stack, a task or a cycle, field by field, and the memory it keeps alive. The target's threads are stopped while its memory is copied."
    )
    var retainers = false

    @Flag(
        help:
            "When each Swift process of the target exits, report the Swift objects that nothing reaches any more (retain cycles, over-retained objects), grouped by the cycle they form, field by field. The default when nothing else is asked for and the program links no LeakMonitor. The target's threads are stopped while its memory is copied."
    )
    var unreachable = false

    /// Adds these options to the settings.
    func apply(to settings: inout AuditSettings) {
        settings.budgets = budgets
        settings.configurationFile = config
        settings.census = census
        settings.censusAll = censusAll
        settings.retainers = retainers
        settings.unreachable = unreachable
    }
}
