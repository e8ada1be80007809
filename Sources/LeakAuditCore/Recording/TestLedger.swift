import LeakAuditModel
import LeakAuditWire

// What the ledger keeps of each test, and what it tells of them: the instances each left alive.

extension LifetimeLedger {
    /// Where an instance was allocated.
    struct Site: Hashable {
        var stackID: UInt32
        var test: UInt32?
    }

    /// An instance a test left alive.
    struct Leak: Hashable {
        var typeID: UInt32
        var site: Site
        /// The instance: its address and its allocation's sequence number, which together tell it
        /// from a later instance at the same address.
        var object: UInt64 = 0
        var sequence: UInt64 = 0
    }

    /// One test of this process: the instances allocated during it that are alive now.
    struct TestLedger {
        var name: String
        /// True once the test was seen starting: it ran (a name seen only on allocations may be a
        /// suite's).
        var started = false
        /// True once it was reported skipped: Swift Testing skipped it without running it, or an
        /// XCTest test threw XCTSkip.
        var skipped = false
        /// Runs of the test under way: started and not finished (a parameterized Swift Testing
        /// test runs its cases in parallel, each a run).
        var running = 0
        /// Finished runs whose grace period has not ended.
        var unsettled = 0
        /// When its first run started and its last run finished, in milliseconds since the channel
        /// was created.
        var startedAt: UInt64? = nil
        var finishedAt: UInt64? = nil
        /// Its instances alive now, and their types.
        var live = AddressTable<UInt32>()
        /// Frozen when the test settled.
        var leaked: [Leak]? = nil
        /// Its instances alive when it finished (its last run), before any grace period: what it
        /// left to others, whether or not they released it in time.
        var outlived: [Leak] = []
    }

    /// The death of an instance its test left alive when it settled, later in the run.
    struct LateDeath {
        /// Where it came among the deaths of tests' instances (1 for the first).
        var order: UInt64
        /// Its record's time, in milliseconds since the channel was created.
        var milliseconds: UInt64
    }

    /// True when the instance a test left alive is still alive now (at the end of the run, when
    /// reports are built).
    func isAlive(_ leak: Leak) -> Bool {
        tally.full[leak.object].map { $0.typeID == leak.typeID && $0.sequence == leak.sequence } ?? false
    }

    /// The death of `leak`, which its test left alive when it settled, or nil while it lives. An
    /// allocation's sequence number is its own.
    func lateDeath(of leak: Leak) -> LateDeath? {
        settledLeakDeaths[leak.sequence]
    }

    /// The death of `leak`, which its test left alive when it settled, when it came while the
    /// process's tests still ran: before the latest record of a test finishing (when the process
    /// has ended, its last test). Nil while it lives, and for a death at the process's end.
    func deathWhileTestsRan(of leak: Leak) -> LateDeath? {
        guard let death = lateDeath(of: leak), death.order <= testInstanceDeathsWhenATestLastFinished else { return nil }
        return death
    }

    /// The instances `test` allocated that are alive now.
    func aliveNow(_ test: TestLedger) -> [Leak] {
        test.live.entries.compactMap { object, typeID in
            // Allocated during the test, so kept whole.
            guard let instance = tally.full[object], instance.typeID == typeID else { return nil }
            return Leak(typeID: typeID, site: instance.site, object: object, sequence: instance.sequence)
        }
    }

    /// The instances alive of a type judged per test (`isJudgedPerTest`) that finished tests whose
    /// grace period runs allocated: what work they left in flight may still release. A test
    /// process asks before it exits whether there are any (`LA_WALK_GRACE_QUESTION`), so that it
    /// waits for those grace periods only when there is something to release.
    func instancesAwaitingGrace(watch: WatchOptions) -> [UInt64] {
        var judged = JudgedTypes(typeCounts, watch: watch)
        var instances: [UInt64] = []
        for test in tests.values where test.unsettled > 0 {
            for (object, typeID) in test.live.entries where judged.contains(typeID) { instances.append(object) }
        }
        return instances
    }

    /// True while an instance of a subclass of XCTestCase is alive: XCTest keeps its test case
    /// objects, and what they hold, until the run ends.
    var keepsTestCaseObjects: Bool {
        typeLedgers.indices.contains { typeLedgers[$0].heldByXCTest && tally.counts[$0].liveCount > 0 }
    }

    /// What each test leaves alive now: what it left when it settled, or, for a test that has not
    /// settled, everything it allocated that is still alive (the report judges it so at the end).
    func leftAliveByTests() -> [Leak] {
        tests.values.flatMap { test in test.leaked ?? aliveNow(test) }
    }

    /// What each test left alive when it finished, before its grace period.
    func outlivedByTest() -> [(name: String, outlived: [Leak])] {
        tests.sorted { $0.key < $1.key }.map { ($0.value.name, $0.value.outlived) }
    }

    /// The tests that started a run and did not finish it, by name: when the process has ended,
    /// it ended in the middle of them (it crashed, was killed or exited).
    var interruptedTests: [String] {
        tests.sorted { $0.key < $1.key }.compactMap { $0.value.running > 0 ? $0.value.name : nil }
    }

    /// The tests reported skipped, by name.
    var skippedTests: [String] {
        tests.values.compactMap { $0.skipped ? $0.name : nil }.sorted()
    }

    /// What each test leaked: its instances alive when it settled, or at the end of the run for a
    /// test that never settled (Swift Testing reports no phases; the process may end within a
    /// grace period). `settled` says which: in a process that ended in the middle of its tests,
    /// only settled tests can be judged.
    func leaksByTest() -> [(
        name: String, started: Bool, settled: Bool, leaks: [Leak], startedAt: UInt64?, finishedAt: UInt64?
    )] {
        tests.sorted { $0.key < $1.key }.map { _, test in
            (test.name, test.started, test.leaked != nil, test.leaked ?? aliveNow(test), test.startedAt, test.finishedAt)
        }
    }
}
