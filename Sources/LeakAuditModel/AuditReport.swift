/// The outcome of one audit: what ran, how it ended, and every tracked type's counts, with the
/// allocation stacks of the types that exceeded their budgets. Renderers turn it into text or JSON.
public struct AuditReport: Sendable {
    /// The tool that made the report.
    public struct Tool: Sendable, Hashable {
        /// Always "leak-audit".
        public var name: String
        /// leak-audit's version.
        public var version: String

        /// Creates the value from its parts.
        package init(name: String, version: String) {
            self.name = name
            self.version = version
        }
    }

    /// The audited program.
    public struct Target: Sendable, Hashable {
        /// The program as given on the command line.
        public var path: String
        /// Its arguments.
        public var arguments: [String]
        /// True when it, or a process it started, attached to leak-audit: through LeakMonitor, or
        /// through the preloaded library when it tracked a type.
        public var attached: Bool
        /// How many processes attached (`swift test` runs a test bundle once per testing library).
        public var attachedProcesses: Int
        /// How it ended.
        public var outcome: TargetOutcome
        /// What the target's file is (nil when it was not inspected).
        public var kind: TargetKind? = nil
        /// The processes that were audited, in the order they attached.
        public var processes: [AuditedProcess] = []
        /// Swift processes of the run that are not the user's code and were left out: SwiftPM's
        /// manifests and plugins, and build helpers (the toolchain's own programs are not counted).
        public var skippedProcesses: Int = 0
        /// How long it ran, from its start until leak-audit had read its last record, in
        /// milliseconds; nil when not measured.
        public var durationMilliseconds: Int? = nil
        /// How long an inspected process (`leak-audit inspect`) was stopped while its memory was
        /// copied, in microseconds; nil for a program leak-audit ran.
        public var stoppedMicroseconds: Int? = nil

        /// Tests that ran, over every audited test process; nil when no process ran tests or
        /// a test process's tests could not be counted. A test process another started runs tests
        /// that its parent counts.
        public var testsRun: Int? { totalOverTestProcesses(\.testsRun) }

        /// Tests reported skipped, over every audited test process that counts its tests; nil when
        /// a test process's skipped tests could not be observed. Swift Testing's skipped tests did
        /// not run (they are not among `testsRun`); XCTest's ran until they threw XCTSkip (they are).
        public var testsSkipped: Int? { totalOverTestProcesses { $0.skippedTests?.count } }

        /// A count summed over the test processes that count their own tests; nil when there is
        /// none or one of them has none.
        private func totalOverTestProcesses(_ count: (AuditedProcess) -> Int?) -> Int? {
            let testProcesses = processes.filter { $0.testingLibrary != nil && $0.startedByTestProcess == nil }
            guard !testProcesses.isEmpty else { return nil }
            var total = 0
            for process in testProcesses {
                guard let counted = count(process) else { return nil }
                total += counted
            }
            return total
        }

        /// Creates the value from its parts.
        package init(
            path: String, arguments: [String], attached: Bool, attachedProcesses: Int, outcome: TargetOutcome,
            kind: TargetKind? = nil, processes: [AuditedProcess] = [], skippedProcesses: Int = 0
        ) {
            self.path = path
            self.arguments = arguments
            self.attached = attached
            self.attachedProcesses = attachedProcesses
            self.outcome = outcome
            self.kind = kind
            self.processes = processes
            self.skippedProcesses = skippedProcesses
        }
    }

    /// One audited process of the run.
    public struct AuditedProcess: Sendable, Hashable {
        /// The testing library whose tests a test bundle ran.
        public enum TestingLibrary: String, Sendable, Hashable {
            /// XCTest.
            case xctest = "XCTest"
            /// Swift Testing.
            case swiftTesting = "Swift Testing"
        }

        /// Its process id.
        public var pid: Int32
        /// Its command line: the program as started, then its arguments.
        public var commandLine: [String]
        /// For a test bundle, the library whose tests it ran; nil for any other program.
        public var testingLibrary: TestingLibrary?
        /// Tests it started; nil when it is no test bundle or its tests could not be observed.
        public var testsRun: Int?
        /// Tests it was running when it ended: it crashed, was killed or exited in the middle of
        /// them. They, and its tests whose grace period had not ended, are not judged.
        public var interruptedTests: [String] = []
        /// Tests it reported skipped, by name: Swift Testing's tests that its runner skipped without
        /// running them (not counted in `testsRun`), XCTest's tests that threw XCTSkip (counted
        /// there, as XCTest counts them). Nil when it is no test bundle, another test bundle started
        /// it, or its skipped tests could not be observed.
        public var skippedTests: [String]? = nil
        /// For a test bundle that another test bundle of the run started (a crash test or an exit
        /// test run in a child process), that process's pid: its tests are its parent's, counted
        /// there, and its `testsRun` is nil.
        public var startedByTestProcess: Int32? = nil

        /// Creates the value from its parts.
        package init(pid: Int32, commandLine: [String], testingLibrary: TestingLibrary? = nil, testsRun: Int? = nil) {
            self.pid = pid
            self.commandLine = commandLine
            self.testingLibrary = testingLibrary
            self.testsRun = testsRun
        }
    }

    /// Instances of one type alive at its peak that were allocated by the same stack.
    public struct AllocationGroup: Sendable, Hashable {
        /// How many instances this stack allocated among those alive at the peak.
        public var count: Int
        /// The stack, the user's code first (LeakMonitor's own frames removed), inlined frames
        /// before the frame they were inlined into.
        public var frames: [SymbolizedFrame]
        /// True when the stack was deeper than leak-audit records.
        public var truncated: Bool
        /// The test that was running when these instances were allocated (`Module.Class/testName`
        /// for XCTest, the test's ID for Swift Testing), or nil outside tests.
        public var test: String? = nil

        /// Creates the value from its parts.
        package init(count: Int, frames: [SymbolizedFrame], truncated: Bool, test: String? = nil) {
            self.count = count
            self.frames = frames
            self.truncated = truncated
            self.test = test
        }
    }

    /// What one test left alive after it finished and its grace period ended.
    public struct TestReport: Sendable, Hashable {
        /// One type's instances that the test left alive.
        public struct LeakedType: Sendable, Hashable {
            /// The type's report name.
            public var type: String
            /// Instances left alive.
            public var count: Int
            /// Their allocation stacks, most first.
            public var allocations: [AllocationGroup]
            /// Whether this leak fails the run, or is suppressed or baselined.
            public var status: FindingStatus = .failing
            /// For instances reported as global state, why they are.
            public var globalStateReason: GlobalStateReason? = nil
            /// For instances released later in the run (`releasedLater`), how long after the test
            /// finished the last of them was released, in milliseconds.
            public var releasedAfterMilliseconds: Int? = nil
            /// With `--retainers`: who holds those still alive at exit; nil when not asked.
            public var retainers: [Retainer]? = nil
            /// With `--retainers`: why some instances have no retainers (their process could not
            /// be walked, or they were gone when it was), each with how many.
            public var retainersUnavailable: [String] = []

            /// Creates the value from its parts.
            package init(
                type: String, count: Int, allocations: [AllocationGroup], status: FindingStatus = .failing,
                globalStateReason: GlobalStateReason? = nil
            ) {
                self.type = type
                self.count = count
                self.allocations = allocations
                self.status = status
                self.globalStateReason = globalStateReason
            }
        }

        /// The test's name.
        public var name: String
        /// Tracked or budgeted types it left alive; empty for a clean test.
        public var leaked: [LeakedType]
        /// Instances it left alive that are global state rather than its leak: allocated while a
        /// lazily initialised global or static was being initialised, or replaced by later tests (docs/design.md, "Global state").
        /// Reported, never failing the run unless `--fail-on-global-state` is given.
        public var globalState: [LeakedType] = []
        /// Instances it left alive that only its XCTest test case object (or what that object
        /// owns) holds: XCTest keeps every test case until the run ends, so a property set in
        /// `setUp` or a test outlives the test without the code under test leaking it. Told by
        /// the heap walk (`--retainers`): every path from a root to them runs through a test case,
        /// and no cycle of other objects holds them. Reported, never failing the run unless
        /// `--fail-on-test-case-state` is given; their retainers name the property.
        public var keptByTestCase: [LeakedType] = []
        /// True when the test was seen starting (false for a suite, or a test whose start was not
        /// observed, that only allocated).
        public var ran: Bool = true
        /// When it first started, in milliseconds since the target started; nil when not seen.
        public var startedAt: Int? = nil
        /// When it last finished, in milliseconds since the target started; nil when not seen.
        public var finishedAt: Int? = nil

        /// Creates the value from its parts.
        package init(name: String, leaked: [LeakedType], globalState: [LeakedType] = [], ran: Bool = true) {
            self.name = name
            self.leaked = leaked
            self.globalState = globalState
            self.ran = ran
        }
    }

    /// Why instances a test left alive are global state rather than its leak.
    public enum GlobalStateReason: String, Sendable, Hashable, CaseIterable {
        /// Allocated under a one-time initializer: a lazily initialised global or static.
        case oneTimeInitializer
        /// Made by a line that other tests ran too, whose instances did not accumulate: a later test
        /// replaced them (a bootstrap, a shared cache reset).
        case replacedByLaterTests
        /// Released later in the run right after global state the same test left alive, as one
        /// deinit releases what it held: presumably held by it (the counters of a metrics system
        /// that a later test replaced).
        case releasedWithGlobalState
        /// Held from a global (with `--retainers`) by an object that made it: a method of a type on
        /// its retaining path is on its allocation stack (a process-wide registry's factory
        /// method, which keeps what it makes by name for the rest of the run); or the global was
        /// first made during the same test and the instance was made on a thread showing none of
        /// the test's code (a lazily made pool's threads, each making the object the pool keeps).
        case madeByItsGlobalHolder
        /// Held only from a thread's own storage (its thread-local storage, or Foundation's
        /// `Thread.threadDictionary`), as a per-thread cache is: it lives as long as the thread,
        /// and the test that first ran on that thread made it.
        case heldByThreadStorage
        /// Alive when the test settled, and released later while the process's tests still ran
        /// (before its last test finished): work the test left in flight (a timer, an event
        /// loop's task) released it after the grace period. A longer `--grace-period` waits for
        /// it (`LeakedType.releasedAfterMilliseconds`).
        case releasedLater
    }

    /// Where a type's budget came from.
    public enum BudgetOrigin: Sendable, Hashable {
        /// The type's `max`, declared in code (it conforms to MemoryLeakMonitorable).
        case code
        /// A budget pattern that matched the type's name.
        case pattern(BudgetPattern)
    }

    /// One dynamic type with a budget: it passed through `MemoryLeakMonitor.validate`, or its name
    /// matched a budget pattern.
    public struct TrackedType: Sendable, Hashable {
        /// Its report name.
        public var name: String
        /// Where its budget came from.
        public var budget: BudgetOrigin = .code
        /// Its budget.
        public var max: Int
        /// The most instances alive at once.
        public var peakLive: Int
        /// Instances still alive when the target ended.
        public var liveAtExit: Int
        /// Instances validated over the whole run.
        public var allocatedTotal: Int
        /// True when `peakLive` is over `max`.
        public var exceeded: Bool { peakLive > max }
        /// For an exceeded type, the instances alive at its peak grouped by allocation stack, most
        /// first; empty otherwise.
        public var allocations: [AllocationGroup]
        /// For an exceeded type, whether it fails the run, or is suppressed or baselined; `.failing`
        /// (and meaningless) for a type within budget.
        public var status: FindingStatus = .failing
        /// True when the type is over budget and that fails the run.
        public var fails: Bool { exceeded && status.fails }
        /// Instances alive at the peak beyond the budget: what a baseline records for a type.
        public var overBudget: Int { Swift.max(0, peakLive.subtractingReportingOverflow(max).partialValue) }
        /// With `--retainers`, for an exceeded type: who holds its instances alive at exit, most
        /// instances first; nil when not asked.
        public var retainers: [Retainer]? = nil
        /// With `--retainers`: why some instances alive at exit have no path (a process that did
        /// not exit normally, or could not be stopped), once per reason.
        public var retainersUnavailable: [String] = []
        /// For an exceeded type, the instances alive at exit grouped by allocation stack, most
        /// first; empty otherwise.
        public var allocationsAtExit: [AllocationGroup] = []
        /// Instances alive over the run; nil when not recorded.
        public var timeline: LiveCountTimeline? = nil
        /// When `peakLive` was first reached, in milliseconds since the target started; nil when not
        /// recorded.
        public var peakTime: Int? = nil

        /// Creates the value from its parts.
        package init(
            name: String, budget: BudgetOrigin = .code, max: Int, peakLive: Int, liveAtExit: Int, allocatedTotal: Int,
            allocations: [AllocationGroup], status: FindingStatus = .failing
        ) {
            self.name = name
            self.budget = budget
            self.max = max
            self.peakLive = peakLive
            self.liveAtExit = liveAtExit
            self.allocatedTotal = allocatedTotal
            self.allocations = allocations
            self.status = status
        }
    }

    /// The baseline a run was compared with (`--baseline FILE`).
    public struct BaselineComparison: Sendable, Hashable {
        /// The baseline file, as given.
        public var path: String
        /// Its entries that no unsuppressed finding of this run matched: leaks that were fixed, so
        /// the baseline can be written again, smaller.
        public var gone: [Baseline.Entry]

        /// Creates the value from its parts.
        package init(path: String, gone: [Baseline.Entry]) {
            self.path = path
            self.gone = gone
        }
    }

    /// One class type still alive when the target exited.
    public struct CensusEntry: Sendable, Hashable {
        /// Its fully qualified name.
        public var name: String
        /// Instances alive at exit (or when the process was inspected).
        public var liveAtExit: Int
        /// Their bytes (malloc's usable sizes), from a heap walk (`leak-audit inspect`); nil when
        /// only the allocations were counted (a run's census).
        public var bytes: Int? = nil
        /// True for a type of the Swift runtime, Foundation, XCTest or another toolchain library,
        /// which the user cannot act on.
        public var isInternal: Bool
        /// True for a test case class (a subclass of XCTestCase): XCTest keeps one instance per test
        /// until the run ends, so its survivors are the harness's, not a leak.
        public var isTestCase: Bool = false

        /// The survivors grouped by allocation stack, most first.
        public var allocations: [AllocationGroup]
        /// Instances alive over the run, for the entries with the most instances; nil for others.
        public var timeline: LiveCountTimeline? = nil

        /// Creates the value from its parts.
        package init(name: String, liveAtExit: Int, isInternal: Bool, isTestCase: Bool = false, allocations: [AllocationGroup]) {
            self.name = name
            self.liveAtExit = liveAtExit
            self.isInternal = isInternal
            self.isTestCase = isTestCase
            self.allocations = allocations
        }
    }

    /// The class types alive at exit (`--census`), most instances first.
    public struct Census: Sendable, Hashable {
        /// The entries shown: every type, or only those that are not internal.
        public var entries: [CensusEntry]
        /// Internal types left out of `entries` (0 when they are shown).
        public var foldedTypes: Int
        /// Their instances.
        public var foldedInstances: Int
        /// Test case classes left out of `entries` (0 when they are shown): XCTest keeps their
        /// instances until the run ends.
        public var foldedTestCaseTypes: Int = 0
        /// Their instances.
        public var foldedTestCaseInstances: Int = 0

        /// Creates the value from its parts.
        package init(
            entries: [CensusEntry], foldedTypes: Int, foldedInstances: Int, foldedTestCaseTypes: Int = 0,
            foldedTestCaseInstances: Int = 0
        ) {
            self.entries = entries
            self.foldedTypes = foldedTypes
            self.foldedInstances = foldedInstances
            self.foldedTestCaseTypes = foldedTestCaseTypes
            self.foldedTestCaseInstances = foldedTestCaseInstances
        }
    }

    /// Why the report cannot vouch for the target.
    public enum NotAuditedReason: Sendable, Hashable, CaseIterable {
        /// The target never mapped the record channel.
        case neverAttached
        /// The Swift runtime is linked statically, so deallocations were invisible.
        case staticRuntime
        /// The target's LeakMonitor writes another record format version than this leak-audit reads.
        case recordFormatMismatch
        /// No Swift process ran with the runtime linked dynamically: nothing to watch.
        case notSwift
        /// Test bundles ran, but not one test: nothing was exercised, so nothing was audited.
        case noTestsRan
    }

    /// The tool.
    public var tool: Tool
    /// The target and its outcome.
    public var target: Target
    /// Set when the target could not be audited.
    public var notAudited: NotAuditedReason?
    /// Every tracked type: exceeded ones first, then by name.
    public var types: [TrackedType]
    /// The census, when it was asked for; it informs and gates nothing.
    public var census: Census? = nil
    /// The objects that alone keep the most memory alive (the bytes of their dominator
    /// subtrees), none inside another's subtree, each with its path from its root; objects with
    /// the same path shape are one entry (`count` of them, `retainedBytes` their sum), the
    /// entries that retain the most first. nil when not looked for (only `leak-audit inspect`
    /// looks). Informs and gates nothing.
    public var largestRetained: [Retainer]? = nil
    /// The Swift objects nothing reached when the target exited (or when it was inspected), nil
    /// when that was not checked.
    public var unreachable: UnreachableObjects? = nil
    /// Every audited test with what it leaked (`--leaks-per-test`), nil otherwise.
    public var tests: [TestReport]? = nil
    /// Instances of every tracked, budgeted or censused type allocated over the run: what was
    /// watched.
    public var watchedInstances: Int = 0
    /// Records the target could not write because the channel was full.
    public var droppedRecords: UInt64
    /// Records torn by the target's death: begun and never finished.
    public var tornRecords: UInt64
    /// Records no writer could have written (malformed, or naming a type, stack or instance never
    /// defined): the stream was damaged.
    public var damagedRecords: UInt64 = 0
    /// More types or processes than the channel keeps (16,384 types, 256 processes): the later
    /// ones were not audited.
    public var exceededCapacity = false
    /// Problems worth a line in the report that do not change the verdict.
    public var warnings: [String]
    /// The baseline this run was compared with, nil without `--baseline`.
    public var baseline: BaselineComparison? = nil

    /// Types over budget, whether they fail the run or are suppressed or baselined.
    public var exceededTypes: [TrackedType] { types.filter(\.exceeded) }

    /// Types over budget that fail the run: neither suppressed nor within the baseline.
    public var failingTypes: [TrackedType] { types.filter(\.fails) }

    /// Every (test, leaked type) pair (`--leaks-per-test`), in test order.
    public var testLeaks: [(test: String, leaked: TestReport.LeakedType)] {
        (tests ?? []).flatMap { test in test.leaked.map { (test.name, $0) } }
    }

    /// The statuses of every finding: each type over budget, each (test, leaked type) pair and
    /// each group of unreachable objects that is not internal.
    public var findingStatuses: [FindingStatus] {
        exceededTypes.map(\.status) + testLeaks.map(\.leaked.status) + unreachableFindings.map(\.status)
    }

    /// The groups of unreachable objects that are findings: those of the program's own types,
    /// whether failing, suppressed or baselined (internal groups are folded, never judged).
    public var unreachableFindings: [UnreachableObjects.Group] {
        (unreachable?.groups ?? []).filter { !$0.isInternal }
    }

    /// True when records were lost or damaged on the way, or types or processes went unaudited for
    /// want of room: the counts may be wrong, so the run is never clean.
    public var isIncomplete: Bool { droppedRecords > 0 || damagedRecords > 0 || exceededCapacity }

    /// The verdict this report gates on: suppressed and baselined findings do not count.
    public var verdict: AuditVerdict {
        if notAudited != nil { return .notAudited }
        if types.contains(where: \.fails) { return .budgetExceeded }
        if testLeaks.contains(where: \.leaked.status.fails) { return .testsLeaked }
        if unreachableFindings.contains(where: \.fails) { return .unreachableObjects }
        // Before the target's failure: "no leak" is what an incomplete stream cannot say.
        if isIncomplete { return .incomplete }
        if !target.outcome.succeeded { return .targetFailed }
        return .clean
    }

    /// Creates the value from its parts.
    package init(
        tool: Tool, target: Target, notAudited: NotAuditedReason? = nil, types: [TrackedType], census: Census? = nil,
        tests: [TestReport]? = nil, watchedInstances: Int = 0, droppedRecords: UInt64, tornRecords: UInt64,
        damagedRecords: UInt64 = 0, exceededCapacity: Bool = false, warnings: [String], baseline: BaselineComparison? = nil
    ) {
        self.tool = tool
        self.target = target
        self.notAudited = notAudited
        self.types = types
        self.census = census
        self.tests = tests
        self.watchedInstances = watchedInstances
        self.droppedRecords = droppedRecords
        self.tornRecords = tornRecords
        self.damagedRecords = damagedRecords
        self.exceededCapacity = exceededCapacity
        self.warnings = warnings
        self.baseline = baseline
    }
}

/// Whether a finding (a type over budget, or a test's leaked type) fails the run.
public enum FindingStatus: Sendable, Hashable {
    /// It fails the run: no suppression matched it, and no baseline was given or the baseline does
    /// not record it (a new finding).
    case failing
    /// It fails the run: the baseline records it, but with fewer instances (`recorded`) than now.
    case largerThanBaseline(recorded: Int)
    /// A suppression in the configuration matched it: reported, never failing.
    case suppressed(Suppression)
    /// The baseline records it with at least as many instances (`recorded`): reported, not failing.
    case baselined(recorded: Int)

    /// True for `.failing` and `.largerThanBaseline`.
    public var fails: Bool {
        switch self {
        case .failing, .largerThanBaseline: true
        case .suppressed, .baselined: false
        }
    }

    /// The suppression that matched, if any.
    public var suppression: Suppression? {
        if case .suppressed(let suppression) = self { suppression } else { nil }
    }

    /// The count the baseline records for this finding, if it was compared with one that does.
    public var recorded: Int? {
        switch self {
        case .largerThanBaseline(let recorded), .baselined(let recorded): recorded
        case .failing, .suppressed: nil
        }
    }
}

/// What an audit concluded, in order of precedence.
public enum AuditVerdict: Sendable, Hashable, CaseIterable {
    /// The target exited 0 and no type exceeded its budget.
    case clean
    /// At least one type exceeded its budget, whatever the target's outcome, and that finding is
    /// neither suppressed nor within the baseline.
    case budgetExceeded
    /// No type exceeded its budget, but (`--leaks-per-test`) a test left instances alive, whatever
    /// the target's outcome, and that finding is neither suppressed nor within the baseline.
    case testsLeaked
    /// No type over budget and no test's leak fails, but Swift objects of the program's own types
    /// that nothing reaches (a cycle, or an object retained with no reference left) were found,
    /// and a group of them is neither suppressed nor within the baseline.
    case unreachableObjects
    /// No failing finding, but records were lost or damaged, or types or processes went unaudited
    /// for want of room: the counts may be wrong, so the run cannot be called clean.
    case incomplete
    /// No type exceeded its budget, but the target exited non-zero or was killed by a signal.
    case targetFailed
    /// The target never attached, or its deallocations could not be observed.
    case notAudited
}
