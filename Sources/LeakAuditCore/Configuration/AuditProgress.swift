import LeakAuditModel

/// What an audit under way has seen so far, for a live display (leak-audit's status line on a
/// terminal): the stage it is in and what the target's processes have recorded. The core only
/// counts; how it is shown, and whether, is the caller's (`AuditRequest.progress`).
public struct AuditProgress: Sendable, Equatable {
    /// What the audit is doing.
    public enum Stage: Sendable, Equatable {
        /// The target is about to be started: a display that reserves part of the terminal does
        /// it now, before the target can print.
        case launching
        /// The target runs, and its processes' records are read as they are written.
        case recording
        /// A process of the target waits while its memory is copied and searched for who holds its
        /// instances (`--retainers`).
        case walkingHeap(pid: Int32)
        /// The target has ended: the allocation stacks the report shows are being symbolized,
        /// `stacks` of them so far.
        case symbolizing(stacks: Int)
    }

    /// The budgeted type whose live count is the largest share of its budget.
    public struct BudgetStanding: Sendable, Equatable {
        /// The type's name, as the target gave it (not escaped: a display must escape it).
        public var typeName: String
        /// Its instances alive now, in the process where it stands highest.
        public var live: Int
        /// Its budget.
        public var max: Int

        /// Creates a standing.
        public init(typeName: String, live: Int, max: Int) {
            self.typeName = typeName
            self.live = live
            self.max = max
        }
    }

    /// What the audit is doing.
    public var stage: Stage
    /// Time since the target was started.
    public var elapsed: Duration
    /// Time since this stage began.
    public var stageElapsed: Duration
    /// Processes of the target that attached to leak-audit's channel.
    public var attachedProcesses: Int
    /// Instances alive now of the types that have a budget, in every process.
    public var trackedInstancesAlive: Int
    /// Instances alive now of every type watched, budgeted or not (`--census`, test runs).
    public var watchedInstancesAlive: Int
    /// Budgeted types whose peak went over their budget, per process.
    public var typesOverBudget: Int
    /// The budgeted type with instances alive that stands closest to its budget (or furthest
    /// over it); nil when none has an instance alive.
    public var closestToBudget: BudgetStanding?
    /// Tests that started and finished, in every process; nil when no test was seen (the target
    /// is not a test run).
    public var testsFinished: Int?

    /// Creates a snapshot.
    public init(
        stage: Stage, elapsed: Duration = .zero, stageElapsed: Duration = .zero, attachedProcesses: Int = 0,
        trackedInstancesAlive: Int = 0, watchedInstancesAlive: Int = 0, typesOverBudget: Int = 0,
        closestToBudget: BudgetStanding? = nil, testsFinished: Int? = nil
    ) {
        self.stage = stage
        self.elapsed = elapsed
        self.stageElapsed = stageElapsed
        self.attachedProcesses = attachedProcesses
        self.trackedInstancesAlive = trackedInstancesAlive
        self.watchedInstancesAlive = watchedInstancesAlive
        self.typesOverBudget = typesOverBudget
        self.closestToBudget = closestToBudget
        self.testsFinished = testsFinished
    }
}

/// What a progress display shows of the ledgers now: counted over their types and tests, never
/// their instances, so that it costs the same however many are alive.
struct ProgressTally: Equatable {
    var trackedAlive = 0
    var watchedAlive = 0
    var typesOverBudget = 0
    var closest: AuditProgress.BudgetStanding?
    /// Tests were seen: the target is a test run.
    var testsSeen = false
    var testsFinished = 0

    /// Adds another process's tally.
    mutating func add(_ other: ProgressTally) {
        trackedAlive += other.trackedAlive
        watchedAlive += other.watchedAlive
        typesOverBudget += other.typesOverBudget
        testsSeen = testsSeen || other.testsSeen
        testsFinished += other.testsFinished
        if let candidate = other.closest { consider(candidate) }
    }

    /// Keeps `candidate` when it stands closer to its budget than the type kept so far.
    mutating func consider(_ candidate: AuditProgress.BudgetStanding) {
        guard let current = closest else {
            closest = candidate
            return
        }
        let (left, right) = (Self.share(candidate), Self.share(current))
        if left > right || (left == right && candidate.live > current.live) { closest = candidate }
    }

    /// Live instances as a share of the budget; any instance of a type whose budget is 0 is
    /// infinitely over it.
    private static func share(_ standing: AuditProgress.BudgetStanding) -> Double {
        standing.max <= 0 ? .infinity : Double(standing.live) / Double(standing.max)
    }
}

/// Calls a request's progress observer: at once when a stage begins, and within a stage at most
/// every `interval`, making the snapshot only when one is due so that the reading loop pays one
/// clock read per pass and nothing per record.
final class ProgressReporter {
    /// The least time between two snapshots of one stage.
    static let interval: Duration = .milliseconds(100)

    private let observer: @Sendable (AuditProgress) -> Void
    private let clock = ContinuousClock()
    private var started: ContinuousClock.Instant
    private var stageStarted: ContinuousClock.Instant
    private var lastReported: ContinuousClock.Instant
    /// The last snapshot: a new stage carries its counts on.
    private var latest = AuditProgress(stage: .launching)
    private var symbolizedStacks = 0

    init(_ observer: @escaping @Sendable (AuditProgress) -> Void) {
        self.observer = observer
        started = clock.now
        stageStarted = started
        lastReported = started
    }

    /// True when `interval` has passed since the last snapshot.
    func isDue() -> Bool {
        clock.now - lastReported >= Self.interval
    }

    /// Reports that `stage` begins; the target's clock starts at `.launching`.
    func begin(_ stage: AuditProgress.Stage) {
        let now = clock.now
        if stage == .launching { started = now }
        stageStarted = now
        if case .symbolizing(let stacks) = stage { symbolizedStacks = stacks }
        latest.stage = stage
        emit(now)
    }

    /// Reports the target's processes' counts while it runs; the caller checks `isDue` first.
    func recording(_ tally: ProgressTally, attachedProcesses: Int) {
        let now = clock.now
        if latest.stage != .recording {
            latest.stage = .recording
            stageStarted = now
        }
        latest.attachedProcesses = attachedProcesses
        latest.trackedInstancesAlive = tally.trackedAlive
        latest.watchedInstancesAlive = tally.watchedAlive
        latest.typesOverBudget = tally.typesOverBudget
        latest.closestToBudget = tally.closest
        latest.testsFinished = tally.testsSeen ? tally.testsFinished : nil
        emit(now)
    }

    /// Counts one more symbolized stack, and reports the count when a snapshot is due.
    func symbolizedStack() {
        symbolizedStacks += 1
        guard isDue() else { return }
        latest.stage = .symbolizing(stacks: symbolizedStacks)
        emit(clock.now)
    }

    private func emit(_ now: ContinuousClock.Instant) {
        lastReported = now
        latest.elapsed = now - started
        latest.stageElapsed = now - stageStarted
        observer(latest)
    }
}
