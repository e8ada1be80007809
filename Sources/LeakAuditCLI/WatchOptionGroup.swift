import ArgumentParser
import FoundationEssentials
import LeakAuditCore

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
            "Read budgets and suppressions from this configuration file (docs/configuration.md). Without it, ./\(Configuration.defaultFileName) is read when present.",
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

    /// The watch options (the configuration file's budgets after the command line's), and the
    /// configuration file's suppressions.
    func resolve() throws(ConfigurationError) -> (watch: WatchOptions, suppressions: [Suppression]) {
        var configuration: Configuration?
        if let config {
            configuration = try Configuration.load(path: config)
        } else if FileManager.default.fileExists(atPath: Configuration.defaultFileName) {
            configuration = try Configuration.load(path: Configuration.defaultFileName)
        }
        var fromCommandLine: [BudgetPattern] = []
        for text in budgets { fromCommandLine.append(try BudgetPattern(parsing: text, origin: "--budget")) }
        let watch = WatchOptions(
            budgets: fromCommandLine + (configuration?.budgets ?? []),
            census: census || censusAll || (configuration?.census ?? false),
            censusShowsInternals: censusAll)
        return (watch, configuration?.suppressions ?? [])
    }
}
