import ArgumentParser
import LeakAuditCore
import LeakAuditModel

/// Per-test attribution: which test left instances alive.
struct TestOptionGroup: ParsableArguments {
    @Flag(
        name: .customLong("leaks-per-test"),
        help:
            "In a test bundle or `swift test`, report each test that left instances of the package's classes (or of budgeted types) alive after it finished, and fail the run for it."
    )
    var leaksPerTest = false

    // Unconditional: `--grace-period -5` is a bad value to name, not a missing one.
    @Option(
        name: .customLong("grace-period"), parsing: .unconditional,
        help: ArgumentHelp(
            "Milliseconds after a test finishes during which its instances may still be released (work it started that finishes asynchronously) before they count as leaked by it.",
            valueName: "ms"))
    var gracePeriod: Int = 100

    @Flag(
        name: .customLong("fail-on-global-state"),
        help:
            "With --leaks-per-test, also fail for instances a test created as global state (allocated while a lazily initialised global or static was being initialised), which are otherwise reported apart and do not fail the run."
    )
    var failOnGlobalState = false

    @Flag(
        name: .customLong("fail-on-test-case-state"),
        help:
            "With --leaks-per-test and --retainers, also fail for instances that only a test's XCTest test case object holds (a property set in setUp or a test and not cleared in tearDown), which are otherwise reported apart and do not fail the run."
    )
    var failOnTestCaseState = false

    func validate() throws {
        guard gracePeriod >= 0, gracePeriod <= 600_000 else {
            throw ValidationError("--grace-period '\(gracePeriod)' must be between 0 and 600000 milliseconds")
        }
    }

    /// Adds these options to the settings.
    func apply(to settings: inout AuditSettings) {
        settings.leaksPerTest = leaksPerTest
        settings.gracePeriodMilliseconds = gracePeriod
        settings.failsOnGlobalState = failOnGlobalState
        settings.failsOnTestCaseState = failOnTestCaseState
    }
}
