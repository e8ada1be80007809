import FoundationEssentials
import LeakAuditModel

/// What an audit watches and which of its findings fail the run, from every source at once: the
/// command line, the configuration file (the one given, or `.leak-audit.json` in the working
/// directory) and the baseline. `init(_:)` is the one place they are combined; the command line
/// only collects `AuditSettings`.
public struct AuditConfiguration: Sendable {
    /// Budgets, the census and per-test judging: what is watched.
    public var watch: WatchOptions
    /// Suppressions and the baseline: which findings fail the run.
    public var policy: FindingPolicy

    /// A configuration from parts already read.
    public init(watch: WatchOptions = WatchOptions(), policy: FindingPolicy = FindingPolicy()) {
        self.watch = watch
        self.policy = policy
    }

    /// Reads the files `settings` name and combines them with its flags: the command line's
    /// budgets before the file's (the first matching pattern wins), the census when either asks
    /// for it, the file's suppressions, and the baseline.
    ///
    /// - Throws: `ConfigurationError` naming the bad value or file, before anything runs.
    public init(_ settings: AuditSettings) throws(ConfigurationError) {
        let workingDirectory = settings.workingDirectory ?? FileManager.default.currentDirectoryPath
        var file: ConfigurationFile?
        if let path = settings.configurationFile {
            file = try ConfigurationFile.load(path: path)
        } else {
            // Named as the user would name it: `.leak-audit.json` when it is the working directory's.
            let implicit =
                settings.workingDirectory.map { $0 + "/" + ConfigurationFile.defaultFileName }
                ?? ConfigurationFile.defaultFileName
            if FileManager.default.fileExists(atPath: implicit) { file = try ConfigurationFile.load(path: implicit) }
        }
        var fromCommandLine: [BudgetPattern] = []
        for text in settings.budgets { fromCommandLine.append(try BudgetPattern(parsing: text, origin: "--budget")) }
        var watch = WatchOptions(
            budgets: fromCommandLine + (file?.budgets ?? []),
            census: settings.census || settings.censusAll || (file?.census ?? false),
            censusShowsInternals: settings.censusAll)
        watch.retainers = settings.retainers || (file?.retainers ?? false)
        watch.unreachable = settings.unreachable || (file?.unreachable ?? false)
        // Given nothing to watch or judge (no budget, census, per-test judging or file), a run
        // reports what nothing reaches in the processes that link no LeakMonitor.
        watch.unreachableByDefault =
            !watch.unreachable && watch.budgets.isEmpty && !watch.census && !settings.leaksPerTest && file == nil
        watch.leaksPerTest = settings.leaksPerTest
        watch.testGraceMilliseconds = settings.gracePeriodMilliseconds
        watch.failsOnGlobalState = settings.failsOnGlobalState
        watch.failsOnTestCaseState = settings.failsOnTestCaseState
        var baseline: Baseline?
        if let path = settings.baselineFile {
            do {
                baseline = try Baseline.load(path: path)
            } catch {
                throw .baseline(error)
            }
        }
        self.init(
            watch: watch,
            policy: FindingPolicy(
                suppressions: file?.suppressions ?? [], baseline: baseline, workingDirectory: workingDirectory))
    }
}

/// What the user asked for, as given: flags and the files they name, before any file is read.
public struct AuditSettings: Sendable, Hashable {
    /// `--budget PATTERN=N`, in order.
    public var budgets: [String] = []
    /// `--config FILE`; nil reads `.leak-audit.json` from the working directory when present.
    public var configurationFile: String?
    /// `--census`.
    public var census = false
    /// `--census-all`.
    public var censusAll = false
    /// `--retainers`.
    public var retainers = false
    /// `--unreachable`.
    public var unreachable = false
    /// `--leaks-per-test`.
    public var leaksPerTest = false
    /// `--grace-period MS`.
    public var gracePeriodMilliseconds = 100
    /// `--fail-on-global-state`.
    public var failsOnGlobalState = false
    /// `--fail-on-test-case-state`.
    public var failsOnTestCaseState = false
    /// `--baseline FILE`.
    public var baselineFile: String?
    /// Where `.leak-audit.json` is looked for and file suppressions are relative to; nil for the
    /// process's working directory.
    public var workingDirectory: String?

    /// Settings that ask for nothing beyond the defaults.
    public init() {}
}

/// Decides which findings fail the run: suppressions from the configuration file first, then the
/// baseline. A finding is a type over budget or, with `--leaks-per-test`, a type a test left alive.
///
/// - A finding that a suppression matches is `.suppressed`; the first matching rule, in file
///   order, names it.
/// - Otherwise, with a baseline, a finding the baseline records with at least as many instances is
///   `.baselined`; with fewer, `.largerThanBaseline`; one it does not record stays `.failing`.
/// - Baseline entries that no unsuppressed finding matched are reported as gone. Test entries are
///   compared only when the run reports tests (`--leaks-per-test`).
///
/// Neither changes a count: the report keeps every finding, with its status.
public struct FindingPolicy: Sendable, Hashable {
    /// Suppressions, in configuration order.
    public var suppressions: [Suppression]
    /// The baseline to compare with, nil without `--baseline`.
    public var baseline: Baseline?
    /// File suppressions also match paths relative to this directory.
    public var workingDirectory: String

    /// Creates a policy; `workingDirectory` defaults to the process's.
    public init(suppressions: [Suppression] = [], baseline: Baseline? = nil, workingDirectory: String? = nil) {
        self.suppressions = suppressions
        self.baseline = baseline
        self.workingDirectory = workingDirectory ?? FileManager.default.currentDirectoryPath
    }
}
