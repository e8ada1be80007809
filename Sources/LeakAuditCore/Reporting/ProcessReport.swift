import LeakAuditModel

/// One process's findings from its ledger, before processes are merged: its tracked types (with
/// symbolized stacks and retainers for those over budget), its census, and with
/// `--leaks-per-test` what each of its tests left alive.
struct ProcessReport {
    let ledger: LifetimeLedger
    /// The ledger's types, by id.
    let types: [UInt32: LifetimeLedger.TypeLedger]
    let watch: WatchOptions
    let grouping: AllocationGrouping
    let naming: RetainerNaming

    init(ledger: LifetimeLedger, watch: WatchOptions, grouping: AllocationGrouping, naming: RetainerNaming) {
        self.ledger = ledger
        types = ledger.typeCounts
        self.watch = watch
        self.grouping = grouping
        self.naming = naming
    }

    // MARK: - Types and census

    /// The types with a budget, the census entries, and how many type records named a budget
    /// pattern this run did not give.
    func typesAndCensus() -> (types: [AuditReport.TrackedType], census: [AuditReport.CensusEntry], unknownBudgets: Int) {
        var tracked: [AuditReport.TrackedType] = []
        var census: [AuditReport.CensusEntry] = []
        var unknownBudgets = 0
        // Counts, not instances: where the instances of the types the report shows were allocated
        // is counted in one pass over the live table (siteTallies).
        let tallies = ledger.siteTallies { typeID in
            types[typeID].map { Self.showsAllocations(of: $0, watch: watch) } ?? false
        }
        // A placeholder names no type the target defined: its records count as damaged instead.
        for (typeID, type) in types where type.defined {
            let tally = tallies[typeID] ?? LifetimeLedger.SiteTallies()
            switch budgetOrigin(of: type) {
            case .some(let budget?): tracked.append(trackedType(type, id: typeID, budget: budget, tally: tally))
            case .some(nil): unknownBudgets += 1
            case nil: break
            }
            if watch.census && type.liveCount > 0 { census.append(censusEntry(type, tally: tally)) }
        }
        return (tracked, census, unknownBudgets)
    }

    private static func isExceeded(_ type: LifetimeLedger.TypeLedger) -> Bool { type.budget != .none && type.peak > type.max }

    /// Whether the report shows where `type`'s instances were allocated (beside its tests' leaks):
    /// it is over its budget, or a census entry that is not folded.
    static func showsAllocations(of type: LifetimeLedger.TypeLedger, watch: WatchOptions) -> Bool {
        type.defined && (isExceeded(type) || (watch.census && type.liveCount > 0 && !isFolded(type, watch: watch)))
    }

    private static func isFolded(_ type: LifetimeLedger.TypeLedger, watch: WatchOptions) -> Bool {
        (TypeOrigin.isInternalType(type.name) || type.heldByXCTest) && !watch.censusShowsInternals
    }

    /// Where `type`'s budget comes from: nil without a budget, `.some(nil)` for a pattern position
    /// this run's LEAK_AUDIT_WATCH never had (a damaged record can name one).
    private func budgetOrigin(of type: LifetimeLedger.TypeLedger) -> AuditReport.BudgetOrigin?? {
        switch type.budget {
        case .code: return .some(.code)
        case .pattern(let index): return .some(watch.budgetPattern(at: index).map { .pattern($0) })
        case .none: return nil
        }
    }

    /// A type with a budget: counts and timeline, and for one over budget where its instances were
    /// allocated, at the peak and at exit, and with `--retainers` who holds them.
    private func trackedType(
        _ type: LifetimeLedger.TypeLedger, id typeID: UInt32, budget: AuditReport.BudgetOrigin,
        tally: LifetimeLedger.SiteTallies
    ) -> AuditReport.TrackedType {
        var tracked = AuditReport.TrackedType(
            name: type.name, budget: budget, max: type.max, peakLive: type.peak, liveAtExit: type.liveCount,
            allocatedTotal: type.allocated, allocations: [])
        tracked.timeline = type.timeline.timeline
        tracked.peakTime = Int(clamping: type.peakTime)
        if tracked.exceeded {
            tracked.allocations = grouping.groups(tally.atPeak, typeName: type.name)
            tracked.allocationsAtExit = grouping.groups(tally.atExit, typeName: type.name)
            if watch.retainers {
                (tracked.retainers, tracked.retainersUnavailable) = naming.retainers(
                    of: ledger.liveObjects { $0 == typeID }, typeName: type.name)
            }
        }
        return tracked
    }

    /// A census entry of a type with instances alive at exit.
    private func censusEntry(_ type: LifetimeLedger.TypeLedger, tally: LifetimeLedger.SiteTallies) -> AuditReport.CensusEntry {
        let folded = Self.isFolded(type, watch: watch)
        var entry = AuditReport.CensusEntry(
            name: type.name, liveAtExit: type.liveCount, isInternal: TypeOrigin.isInternalType(type.name),
            isTestCase: type.heldByXCTest,
            // Stacks are symbolized only for what the report shows.
            allocations: folded ? [] : grouping.groups(tally.atExit, typeName: type.name))
        if !folded { entry.timeline = type.timeline.timeline }
        return entry
    }

    // MARK: - Tests

    /// A test as the ledger tells it (`leaksByTest`).
    private typealias TestRecord = (
        name: String, started: Bool, settled: Bool, leaks: [LifetimeLedger.Leak], startedAt: UInt64?, finishedAt: UInt64?
    )
    /// A test's name, whether it started, and the instances of judged types it left alive.
    private typealias TestLeaks = (name: String, started: Bool, leaks: [LifetimeLedger.Leak])

    /// Per test: the instances it left alive of the types judged per test (isJudgedPerTest), each
    /// told apart as its own, global state, or kept by its test case object.
    func tests() -> [AuditReport.TestReport] {
        let everyTest = judgedTests()
        let byTest: [TestLeaks] = everyTest.map { test in
            (test.name, test.started, test.leaks.filter { types[$0.typeID]?.isJudgedPerTest(watch: watch) == true })
        }
        let globalState = globalStateReasons(byTest)
        // What only a test case object holds (XCTest keeps them all): told by the heap walk.
        let tellsTestCaseState = watch.walksHeaps && !watch.failsOnTestCaseState
        var tests: [AuditReport.TestReport] = []
        for ((name, started, leaks), test) in zip(byTest, everyTest) {
            let ownLeaks = leaks.filter { globalState[$0] == nil }
            let kept = tellsTestCaseState ? ownLeaks.filter { naming.isKeptByTestCase($0, aliveAtExit: ledger.isAlive) } : []
            let keptSet = Set(kept)
            let leaked = leakedTypes(kept.isEmpty ? ownLeaks : ownLeaks.filter { !keptSet.contains($0) }, globalState)
            // What was released later is one entry of its own per type, with how long after the
            // test finished the last of it went.
            let releasedLater = leaks.filter { globalState[$0] == .releasedLater }
            var global = leakedTypes(leaks.filter { globalState[$0] != nil && globalState[$0] != .releasedLater }, globalState)
            let finished = test.finishedAt ?? 0
            global += leakedTypes(releasedLater, globalState).map { type in
                var type = type
                type.releasedAfterMilliseconds = releasedLater.lazy.filter { types[$0.typeID]?.name == type.type }
                    .compactMap { ledger.lateDeath(of: $0)?.milliseconds }
                    .map { Int(clamping: $0 - Swift.min($0, finished)) }.max()
                return type
            }
            let keptTypes = leakedTypes(kept, globalState, withPaths: true)
            // A name seen only on allocations (a Swift Testing suite's scope) is listed only when
            // something it allocated outlived it.
            guard started || !leaked.isEmpty || !global.isEmpty || !keptTypes.isEmpty else { continue }
            var report = AuditReport.TestReport(name: name, leaked: leaked, globalState: global, ran: started)
            report.keptByTestCase = keptTypes
            report.startedAt = test.startedAt.map { Int(clamping: $0) }
            report.finishedAt = test.finishedAt.map { Int(clamping: $0) }
            tests.append(report)
        }
        return tests
    }

    /// Every test with what it left alive. A process that ended in the middle of its tests (a
    /// crash): only its settled tests are judged; the others never had their grace period, and a
    /// crash releases nothing.
    private func judgedTests() -> [TestRecord] {
        let interrupted = !ledger.interruptedTests.isEmpty
        return ledger.leaksByTest().map { test in
            var test = test
            if interrupted && !test.settled { test.leaks = [] }
            return test
        }
    }

    /// Why a leak is global state rather than its test's: told by where it was made and what
    /// outlived its test, and with the heap walk, by what holds it (a registry's metric).
    private func globalStateReasons(_ byTest: [TestLeaks]) -> [LifetimeLedger.Leak: AuditReport.GlobalStateReason] {
        guard !watch.failsOnGlobalState else { return [:] }
        var globalState = heldGlobalStateReasons(byTest)
        // What no rule above sets apart and the run released was left in flight, not leaked
        // (docs/design.md, "Global state"): its death came while the process's tests still ran
        // (a leak the run keeps dies at its end, or never), or the walk made for its test (before
        // the process ended) did not find it alive.
        for (_, _, leaks) in byTest {
            for leak in leaks where globalState[leak] == nil {
                if ledger.deathWhileTestsRan(of: leak) != nil
                    || (naming.wasDeadWhenItsTestSettled(leak) && ledger.lateDeath(of: leak) != nil)
                {
                    globalState[leak] = .releasedLater
                }
            }
        }
        return globalState
    }

    /// Why a leak is global state, by where it was made, what outlived its test and what holds it.
    private func heldGlobalStateReasons(_ byTest: [TestLeaks]) -> [LifetimeLedger.Leak: AuditReport.GlobalStateReason] {
        var globalState = ReportBuilder.globalState(
            among: byTest.flatMap { name, _, leaks in leaks.map { (name, $0) } },
            outlived: ledger.outlivedByTest().flatMap { name, leaks in leaks.map { (name, $0) } }, in: ledger,
            constructingLine: grouping.constructingLine(ofStack:typeName:), frames: grouping.frames(ofStack:))
        // What a global's object made and keeps (a registry's metric): told by the heap walk.
        guard watch.walksHeaps else { return globalState }
        for (name, _, leaks) in byTest {
            // The types of the globals' objects this test's run made first (their one-time
            // initializers ran during it).
            let madeFirst = Set(
                leaks.filter { globalState[$0] == .oneTimeInitializer }.compactMap { types[$0.typeID]?.name })
            for leak in leaks where globalState[leak] == nil {
                guard let path = naming.path(of: leak, aliveAtExit: ledger.isAlive) else { continue }
                let frames = grouping.frames(ofStack: leak.site.stackID)
                if ReportBuilder.isMadeByItsGlobalHolder(path, frames: frames)
                    || ReportBuilder.isMadeByItsGlobalsInitializer(global: naming.globalName(of: path), frames: frames)
                    || ReportBuilder.isMadeOnAThreadOfANewGlobal(
                        path, frames: frames, complete: !ledger.truncatedStacks.contains(leak.site.stackID),
                        globalsMadeFirst: madeFirst, test: name)
                {
                    globalState[leak] = .madeByItsGlobalHolder
                } else if ReportBuilder.isHeldByThreadStorage(path) {
                    globalState[leak] = .heldByThreadStorage
                }
            }
        }
        // What no root reached when it was walked (a cycle, what a cycle holds, what nothing
        // references) is no global's: a global reaches what it keeps. Other instances of its line
        // were replaced by later tests, or were not (a parser's tokens that some tests' schemas
        // keep in cycles and others let go, depending on when the tests ran); this one is its
        // test's leak.
        for (_, _, leaks) in byTest {
            for leak in leaks where globalState[leak] == .replacedByLaterTests {
                guard let path = naming.path(of: leak, aliveAtExit: ledger.isAlive) else { continue }
                switch path.root {
                case .cycle, .heldByCycle, .unreferenced: globalState[leak] = nil
                default: break
                }
            }
        }
        // An instance that one of this test's own leaks holds is part of that leak, whatever its
        // line or its maker: a leaked generic `Inner`'s lock, whose line other specializations'
        // locks (the same type) were replaced at, is not global state, nor is what that `Inner`
        // made. It stays its test's leak.
        for (_, _, leaks) in byTest {
            // Their types as the walk names them (the last step of each one's own path), which
            // may spell a type otherwise than its records (an extension's nested type).
            let own = leaks.filter { globalState[$0] == nil }
            let ownTypes = Set(
                own.compactMap { naming.path(of: $0, aliveAtExit: ledger.isAlive)?.steps.last?.type }
                    + own.compactMap { types[$0.typeID]?.name })
            guard !ownTypes.isEmpty else { continue }
            for leak in leaks
            where globalState[leak] == .replacedByLaterTests || globalState[leak] == .madeByItsGlobalHolder {
                guard let path = naming.path(of: leak, aliveAtExit: ledger.isAlive) else { continue }
                if path.steps.dropLast().contains(where: { ownTypes.contains($0.type) }) { globalState[leak] = nil }
            }
        }
        return globalState
    }

    /// `leaks` by type, most instances first. Paths are shown with --retainers; what the test case
    /// keeps always names its property.
    private func leakedTypes(
        _ leaks: [LifetimeLedger.Leak], _ globalState: [LifetimeLedger.Leak: AuditReport.GlobalStateReason],
        withPaths: Bool? = nil
    ) -> [AuditReport.TestReport.LeakedType] {
        Dictionary(grouping: leaks, by: \.typeID).compactMap { typeID, leaks -> AuditReport.TestReport.LeakedType? in
            guard let type = types[typeID] else { return nil }
            var leaked = AuditReport.TestReport.LeakedType(
                type: type.name, count: leaks.count, allocations: grouping.groups(leaks.map(\.site), typeName: type.name),
                globalStateReason: leaks.lazy.compactMap { globalState[$0] }.first)
            if withPaths ?? watch.retainers {
                (leaked.retainers, leaked.retainersUnavailable) = naming.retainers(
                    ofLeaks: leaks, aliveAtExit: ledger.isAlive, typeName: type.name)
            }
            return leaked
        }.sorted { ($0.count, $1.type) > ($1.count, $0.type) }
    }
}
