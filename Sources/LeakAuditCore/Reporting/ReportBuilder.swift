import LeakAuditModel
import LeakAuditPresentation

/// Turns a recorded run into a report: exact counts from the ledger, and, for the types over
/// budget only, symbolized allocation stacks.
struct ReportBuilder {
    /// The version the report names as its tool's.
    var toolVersion: String
    /// Makes the symbolizer of one process's loaded images.
    var makeSymbolizer: ([ModuleImage]) -> any AddressSymbolizer = currentPlatform().makeSymbolizer
    /// What the executable at a path is: tells the processes whose Swift runtime is static.
    var inspectExecutable: (String) -> TargetKind = currentPlatform().inspectExecutable(at:)
    /// Hears how many stacks were symbolized, for a live display.
    var progress: ProgressReporter? = nil

    /// One process's findings, before processes are merged.
    private struct ProcessFindings {
        var types: [AuditReport.TrackedType]
        var census: [AuditReport.CensusEntry]
        var tests: [AuditReport.TestReport]
        /// Type records naming a budget pattern this run did not give.
        var unknownBudgets: Int
        /// Why some frames have less detail than they could.
        var symbolizationProblems: [String]
    }

    func build(from run: RecordedRun) -> AuditReport {
        let watch = run.plan.watch
        let channel = run.received.channel
        // A program with the Swift runtime linked in (-static-stdlib) calls it directly: the hooks
        // of the preloaded library, which brings the shared runtime along, never see its
        // allocations or its failed inits, and its counts would be wrong. They are left out.
        // Each program is read once (a test run may start it dozens of times), and the target not
        // again where the plan named it by the path its process reports (a canonical one).
        let everyProcess = run.received.ledgers.sorted { $0.key < $1.key }
        var kinds: [String: TargetKind] = [:]
        if let kind = run.plan.targetKind { kinds[run.plan.executablePath] = kind }
        let staticRuntime = everyProcess.filter { _, ledger in
            guard let path = ledger.modules.first?.path else { return false }
            let kind = kinds[path] ?? inspectExecutable(path)
            kinds[path] = kind
            return kind == .staticSwift
        }
        let indexed = everyProcess.filter { index, _ in !staticRuntime.contains { $0.key == index } }
        let ledgers = indexed.map(\.value)
        let walks = run.heapWalks
        let processes = indexed.map {
            report(
                of: $0.value, walk: walks.atExit[$0.key], afterTests: walks.afterTests[$0.key] ?? [:],
                afterTestsUnavailable: walks.afterTestsUnavailable[$0.key] ?? [:], watch: watch)
        }
        var target = AuditReport.Target(
            path: run.request.target, arguments: run.request.arguments, attached: channel.attached,
            attachedProcesses: channel.attachedProcesses, outcome: run.outcome, kind: run.plan.targetKind,
            processes: Self.auditedProcesses(ledgers), skippedProcesses: channel.skippedProcesses)
        target.durationMilliseconds = Int(clamping: run.received.durationMilliseconds)
        let types = Self.mergedByName(processes.flatMap(\.types))
            .sorted { ($0.exceeded ? 0 : 1, $0.name) < ($1.exceeded ? 0 : 1, $1.name) }
        let inconsistentEvents =
            ledgers.reduce(0) { $0 + $1.inconsistentEvents } + processes.reduce(0) { $0 + $1.unknownBudgets }
        // Only the types the report shows: budgeted ones, and the runtime's and Foundation's own only
        // when the census shows them (CoreFoundation frees its bridged objects where no hook sees it).
        let unseenDeallocations = ledgers.reduce(0) { total, ledger in
            let types = ledger.typeCounts
            return total
                + ledger.unseenDeallocations.reduce(0) { sum, entry in
                    guard let type = types[entry.key],
                        type.budget != .none || !TypeOrigin.isInternalType(type.name) || watch.censusShowsInternals
                    else { return sum }
                    return sum + entry.value
                }
        }

        var warnings: [String] = []
        if !staticRuntime.isEmpty && !indexed.isEmpty {
            let programs = staticRuntime.compactMap { $0.value.modules.first.map { "'\(ReportPhrases.escaped($0.path))'" } }
            warnings.append(
                "\(programs.joined(separator: ", ")) \(programs.count == 1 ? "links" : "link") the Swift runtime statically, so \(programs.count == 1 ? "its" : "their") deallocations could not be seen: left out of the counts; rebuild without -static-stdlib to audit \(programs.count == 1 ? "it" : "them")"
            )
        }
        if let signal = run.received.receivedSignal {
            warnings.append(
                "leak-audit received \(signalName(signal)) and passed it to the target: the report is partial, it holds what the target's processes wrote until they ended"
            )
        }
        if run.received.timedOut, let seconds = run.request.timeoutSeconds {
            warnings.append(
                "the target ran longer than --timeout \(seconds) s and was stopped (SIGTERM, then SIGKILL after 5 s): the report holds what its processes wrote until then"
            )
        }
        // Without the walk at exit, what test case objects keep is blamed on the tests.
        if watch.walksAtExitForTestCases {
            for (index, ledger) in indexed {
                guard case .failed(let reason)? = walks.atExit[index], let pid = ledger.process?.pid else { continue }
                warnings.append(
                    "process \(pid) could not be walked at its exit (\(reason)): instances that only its test case objects kept are counted as its tests' leaks"
                )
            }
        }
        // A test process another started (a crash test's child) is meant to end in its test: one
        // line for all of them.
        let interrupted = target.processes.filter { !$0.interruptedTests.isEmpty }
        for process in interrupted where process.startedByTestProcess == nil {
            warnings.append(Self.interruptionWarning(process))
        }
        let children = interrupted.filter { $0.startedByTestProcess != nil }
        if !children.isEmpty {
            warnings.append(
                "\(counted(children.count, "test process", plural: "test processes")) that other test processes started (crash or exit tests) ended in the middle of their test, as such tests mean them to; those tests were not judged there"
            )
        }
        if channel.droppedRecords > 0 {
            warnings.append(
                "\(counted(channel.droppedRecords, "record")) \(channel.droppedRecords == 1 ? "was" : "were") not written (leak-audit stopped reading, or a record was larger than the ring), so counts may be off"
            )
        }
        if channel.forkedProcesses > 0 {
            let forked = channel.forkedProcesses
            warnings.append(
                "\(counted(forked, "child", plural: "children")) forked without exec \(forked == 1 ? "was" : "were") not audited (\(forked == 1 ? "it is a copy" : "each is a copy") of the parent, whose instances are counted there); a child that execs is audited as a process of its own"
            )
        }
        if channel.flags.contains(.tooManyProcesses) {
            warnings.append("more than 256 instrumented processes: the later ones were not audited")
        }
        if channel.flags.contains(.typeTableFull) {
            warnings.append("more distinct types than leak-audit keeps (16,384): later types were not tracked")
        }
        if channel.flags.contains(.stackTableFull) {
            warnings.append("more distinct allocation stacks than leak-audit keeps: some allocations have no stack")
        }
        if unseenDeallocations > 0 {
            warnings.append(
                "\(counted(unseenDeallocations, "watched object")) \(unseenDeallocations == 1 ? "was" : "were") freed where leak-audit could not see it (the address was reused); counts of \(unseenDeallocations == 1 ? "its type" : "their types") may be high"
            )
        }
        if inconsistentEvents > 0 {
            warnings.append(
                "\(counted(inconsistentEvents, "record")) referred to unknown types or instances, or defined a type again (the first definition stands): the record stream was damaged, so counts may be wrong"
            )
        }
        let received = run.received
        let malformed = received.malformedSlots &- received.overlongStacks
        if malformed > 0 {
            warnings.append(
                "\(counted(malformed, "record")) in leak-audit's channel \(malformed == 1 ? "was" : "were") no record LeakMonitor writes: something else wrote into it, so counts may be wrong"
            )
        }
        if run.received.overlongStacks > 0 {
            warnings.append(
                "\(counted(run.received.overlongStacks, "allocation stack")) held more than the \(RecordDecoder.mostFrames) frames LeakMonitor records (\(run.received.cutFrames) more): each was cut to its innermost \(RecordDecoder.mostFrames), and counted as damage"
            )
        }
        if run.received.longNames > 0 {
            warnings.append(
                "\(counted(run.received.longNames, "type or test name")) \(run.received.longNames == 1 ? "was" : "were") longer than \(RecordDecoder.longestName) bytes: cut there, ending in '…'"
            )
        }
        if received.unannouncedRecords > 0 {
            warnings.append(
                "\(counted(received.unannouncedRecords, "record")) in leak-audit's channel came from process indexes that never announced themselves: something else wrote into it; they were not counted"
            )
        }
        for problem in received.headerProblems {
            warnings.append("the header of leak-audit's channel was written over: \(problem)")
        }
        warnings += received.reservationProblems
        // A configuration of thousands of budgets says which matched nothing in a few lines.
        let applied = Set(types.compactMap { if case .pattern(let budget) = $0.budget { budget } else { nil } })
        let unmatched = watch.budgets.filter { !applied.contains($0) }
        let named =
            unmatched.count <= Self.unmatchedBudgetsNamed + 1 ? unmatched : Array(unmatched.prefix(Self.unmatchedBudgetsNamed))
        for budget in named {
            warnings.append(
                "budget '\(ReportPhrases.escaped(budget.description))' (\(ReportPhrases.escaped(budget.origin))) matched no type that was allocated, or only types whose max is declared in code"
            )
        }
        if unmatched.count > named.count {
            warnings.append(
                "\(counted(unmatched.count - named.count, "more budget")) matched no type that was allocated, or only types whose max is declared in code"
            )
        }
        // Missing or unreadable debug information: frames the user sees with less than they could.
        var problems: [String] = []
        for problem in processes.flatMap(\.symbolizationProblems) where !problems.contains(problem) {
            problems.append(problem)
        }
        warnings += problems.map { "symbolization: \($0)" }

        let notAudited =
            Self.notAuditedReason(run, target: target) ?? (indexed.isEmpty && !staticRuntime.isEmpty ? .staticRuntime : nil)
        var census: AuditReport.Census?
        if watch.census {
            let entries = Self.mergedCensus(processes.flatMap(\.census))
            let all = watch.censusShowsInternals
            var shown = all ? entries : entries.filter { !$0.isInternal && !$0.isTestCase }
            // A chart for the types with the most instances, not for thousands.
            for index in shown.indices.dropFirst(Self.censusTimelines) { shown[index].timeline = nil }
            let folded = all ? [] : entries.filter(\.isInternal)
            // XCTest keeps every test case object until the run ends: the harness's, not a leak.
            let testCases = all ? [] : entries.filter { $0.isTestCase && !$0.isInternal }
            census = AuditReport.Census(
                entries: shown, foldedTypes: folded.count, foldedInstances: folded.reduce(0) { $0 + $1.liveAtExit },
                foldedTestCaseTypes: testCases.count, foldedTestCaseInstances: testCases.reduce(0) { $0 + $1.liveAtExit })
        }
        // Counts from a target that could not be audited mean nothing (without observed
        // deallocations every instance looks alive forever): report none rather than wrong ones.
        let audited = notAudited == nil
        let tests = audited && watch.leaksPerTest ? Self.mergedTests(processes.flatMap(\.tests)) : nil
        if audited {
            var shown: [AuditReport.AllocationGroup] = types.filter(\.exceeded).flatMap(\.allocations)
            shown += (census?.entries ?? []).flatMap(\.allocations)
            shown += (tests ?? []).flatMap { $0.leaked + $0.globalState }.flatMap(\.allocations)
            for module in Self.modulesWithoutDebugInformation(in: shown) {
                warnings.append(
                    "symbolization: '\(module)' has no debug information, so its frames show no file or line; build it with debug information (swift build's default) and do not strip it"
                )
            }
        }
        return AuditReport(
            tool: .init(name: "leak-audit", version: toolVersion),
            target: target,
            notAudited: notAudited,
            types: audited ? types : [],
            census: audited ? census : nil,
            tests: tests,
            watchedInstances: audited ? ledgers.reduce(0) { $0 + $1.typeCounts.values.reduce(0) { $0 + $1.allocated } } : 0,
            droppedRecords: channel.droppedRecords,
            tornRecords: run.received.tornSlots,
            damagedRecords: run.received.damagedSlots &+ UInt64(inconsistentEvents),
            exceededCapacity: channel.flags.contains(.typeTableFull) || channel.flags.contains(.tooManyProcesses),
            warnings: warnings
        )
    }

    /// `process 41 (AppPackageTests.xctest) ended while 2 tests were running (A, B): …`.
    static func interruptionWarning(_ process: AuditReport.AuditedProcess) -> String {
        let program = process.commandLine.first.map { String($0.split(separator: "/").last ?? Substring($0)) } ?? "?"
        let library = process.commandLine.contains("swift-testing") ? " --testing-library swift-testing" : ""
        let tests = process.interruptedTests
        let named = tests.prefix(3).map { ReportPhrases.escaped($0) }.joined(separator: ", ")
        let more = tests.count > 3 ? " and \(tests.count - 3) more" : ""
        return
            "process \(process.pid) (\(ReportPhrases.escaped(program))\(library)) ended while \(counted(tests.count, "test")) \(tests.count == 1 ? "was" : "were") running (\(named)\(more)): it crashed, was killed or exited in the middle of \(tests.count == 1 ? "it" : "them"); tests of that process that had not finished and settled were not judged"
    }

    /// Census entries (most instances first) whose timeline the report keeps.
    static let censusTimelines = 10

    /// One process's tracked types (with symbolized stacks for those over budget) and census.
    private func report(
        of ledger: LifetimeLedger, walk: HeapWalks.Outcome?, afterTests: [HeapWalks.Instance: RetainerSearch.Path],
        afterTestsUnavailable: [HeapWalks.Instance: String], watch: WatchOptions
    ) -> ProcessFindings {
        let symbolizer = makeSymbolizer(ledger.modules)
        let naming = RetainerNaming(
            symbolizer: symbolizer, modules: ledger.modules, walk: walk, afterTests: afterTests,
            afterTestsUnavailable: afterTestsUnavailable)
        var resolved: [UInt64: [SymbolizedFrame]] = [:]
        var stackFrames: [UInt32: [SymbolizedFrame]] = [:]
        func frames(ofStack stackID: UInt32) -> [SymbolizedFrame] {
            if let known = stackFrames[stackID] { return known }
            let symbolized = (ledger.stacks[stackID] ?? []).flatMap { address in
                if let known = resolved[address] { return known }
                let frames = symbolizer.symbolize(address)
                resolved[address] = frames
                return frames
            }
            let frames = Array(symbolized.drop(while: Self.isMonitorFrame))
            stackFrames[stackID] = frames
            progress?.symbolizedStack()
            return frames
        }
        let testNames = ledger.tests.mapValues(\.name)
        // The constructing line of each stack and type, found once however many groups (at the
        // peak, at exit, per test) share the stack.
        struct ConstructingKey: Hashable {
            var stackID: UInt32
            var typeName: String
        }
        var constructingSites: [ConstructingKey: String?] = [:]
        /// The sites grouped by the line that constructed their instances (and their test): stacks
        /// that differ only above or below that line are one group, shown with its commonest stack
        /// (an instance first seen by the allocation hook and one seen by validate, say).
        func groups(_ sites: [LifetimeLedger.Site], typeName: String) -> [AuditReport.AllocationGroup] {
            groups(SiteTally(sites), typeName: typeName)
        }
        func groups(_ tally: SiteTally, typeName: String) -> [AuditReport.AllocationGroup] {
            let counts = tally.counts
            struct Key: Hashable {
                var line: String?
                var stackID: UInt32?
                var test: UInt32?
            }
            var merged: [Key: (count: Int, representative: LifetimeLedger.Site, representativeCount: Int, truncated: Bool)] = [:]
            // Stack order, so that the commonest stack wins ties the same way every time.
            for (site, count) in counts.sorted(by: {
                ($0.site.stackID, $0.site.test ?? .max) < ($1.site.stackID, $1.site.test ?? .max)
            }) {
                let line: String?
                let constructingKey = ConstructingKey(stackID: site.stackID, typeName: typeName)
                if let known = constructingSites[constructingKey] {
                    line = known
                } else {
                    line = AuditReport.AllocationGroup.constructingSite(in: frames(ofStack: site.stackID), typeName: typeName)
                    constructingSites[constructingKey] = line
                }
                let key = line.map { Key(line: $0, test: site.test) } ?? Key(stackID: site.stackID, test: site.test)
                let truncated = ledger.truncatedStacks.contains(site.stackID)
                if var group = merged[key] {
                    group.count += count
                    group.truncated = group.truncated || truncated
                    if count > group.representativeCount { (group.representative, group.representativeCount) = (site, count) }
                    merged[key] = group
                } else {
                    merged[key] = (count, site, count, truncated)
                }
            }
            // Most instances first; then by stack and test, so that the order is stable.
            let ordered = merged.values.sorted { left, right in
                if left.count != right.count { return left.count > right.count }
                if left.representative.stackID != right.representative.stackID {
                    return left.representative.stackID < right.representative.stackID
                }
                return (left.representative.test ?? .max) < (right.representative.test ?? .max)
            }
            return ordered.map { group in
                AuditReport.AllocationGroup(
                    count: group.count, frames: frames(ofStack: group.representative.stackID), truncated: group.truncated,
                    test: group.representative.test.flatMap { testNames[$0] })
            }
        }

        var types: [AuditReport.TrackedType] = []
        var census: [AuditReport.CensusEntry] = []
        var unknownBudgets = 0
        // Counts, not instances: where the instances of the types the report shows were allocated
        // is counted in one pass over the live table (siteTallies).
        let ledgerTypes = ledger.typeCounts
        func isExceeded(_ type: LifetimeLedger.TypeLedger) -> Bool { type.budget != .none && type.peak > type.max }
        func isFolded(_ type: LifetimeLedger.TypeLedger) -> Bool {
            (TypeOrigin.isInternalType(type.name) || type.heldByXCTest) && !watch.censusShowsInternals
        }
        let tallies = ledger.siteTallies { typeID in
            guard let type = ledgerTypes[typeID], type.defined else { return false }
            return isExceeded(type) || (watch.census && type.liveCount > 0 && !isFolded(type))
        }
        // A placeholder names no type the target defined: its records count as damaged instead.
        for (typeID, type) in ledgerTypes where type.defined {
            let tally = tallies[typeID] ?? LifetimeLedger.SiteTallies()
            let budget: AuditReport.BudgetOrigin?
            switch type.budget {
            case .code: budget = .code
            case .pattern(let index):
                // A damaged record can name a position this run's LEAK_AUDIT_WATCH never had.
                if let pattern = watch.budgetPattern(at: index) {
                    budget = .pattern(pattern)
                } else {
                    unknownBudgets += 1
                    budget = nil
                }
            case .none: budget = nil
            }
            if let budget {
                var tracked = AuditReport.TrackedType(
                    name: type.name, budget: budget, max: type.max, peakLive: type.peak, liveAtExit: type.liveCount,
                    allocatedTotal: type.allocated, allocations: [])
                tracked.timeline = type.timeline.timeline
                tracked.peakTime = Int(clamping: type.peakTime)
                if tracked.exceeded {
                    tracked.allocations = groups(tally.atPeak, typeName: type.name)
                    tracked.allocationsAtExit = groups(tally.atExit, typeName: type.name)
                    if watch.retainers {
                        (tracked.retainers, tracked.retainersUnavailable) = naming.retainers(
                            of: ledger.liveObjects { $0 == typeID }, typeName: type.name)
                    }
                }
                types.append(tracked)
            }
            if watch.census && type.liveCount > 0 {
                let isInternal = TypeOrigin.isInternalType(type.name)
                let folded = isFolded(type)
                var entry = AuditReport.CensusEntry(
                    name: type.name, liveAtExit: type.liveCount, isInternal: isInternal, isTestCase: type.heldByXCTest,
                    // Stacks are symbolized only for what the report shows.
                    allocations: folded ? [] : groups(tally.atExit, typeName: type.name))
                if !folded { entry.timeline = type.timeline.timeline }
                census.append(entry)
            }
        }

        // Per test: the instances it left alive of the types judged per test (isJudgedPerTest).
        var tests: [AuditReport.TestReport] = []
        if watch.leaksPerTest {
            // Per test, the instances of judged types it left alive; the test harness's
            // own objects (XCTest's, Swift Testing's) are never a test's leak.
            // A process that ended in the middle of its tests (a crash): only its settled tests are
            // judged; the others never had their grace period, and a crash releases nothing.
            let interrupted = !ledger.interruptedTests.isEmpty
            let everyTest = ledger.leaksByTest().map { test in
                var test = test
                if interrupted && !test.settled { test.leaks = [] }
                return test
            }
            let byTest = everyTest.map { test in
                (
                    test.name, test.started,
                    test.leaks.filter { leak in
                        ledgerTypes[leak.typeID]?.isJudgedPerTest(watch: watch) == true
                    }
                )
            }
            var globalState =
                watch.failsOnGlobalState
                ? [:]
                : Self.globalState(
                    among: byTest.flatMap { name, _, leaks in leaks.map { (name, $0) } },
                    outlived: ledger.outlivedByTest().flatMap { name, leaks in leaks.map { (name, $0) } }, in: ledger,
                    frames: frames)
            // What a global's object made and keeps (a registry's metric): told by the heap walk.
            if watch.walksHeaps && !watch.failsOnGlobalState {
                for (_, _, leaks) in byTest {
                    for leak in leaks where globalState[leak] == nil {
                        guard let path = naming.path(of: leak, aliveAtExit: ledger.isAlive) else { continue }
                        if Self.isMadeByItsGlobalHolder(path, frames: frames(ofStack: leak.site.stackID)) {
                            globalState[leak] = .madeByItsGlobalHolder
                        } else if Self.isHeldByThreadStorage(path) {
                            globalState[leak] = .heldByThreadStorage
                        }
                    }
                }
            }
            // Paths are shown with --retainers; what the test case keeps always names its property.
            func leakedTypes(_ leaks: [LifetimeLedger.Leak], withPaths: Bool = watch.retainers) -> [AuditReport.TestReport
                .LeakedType]
            {
                Dictionary(grouping: leaks, by: \.typeID).compactMap { typeID, leaks -> AuditReport.TestReport.LeakedType? in
                    guard let type = ledgerTypes[typeID] else { return nil }
                    var leaked = AuditReport.TestReport.LeakedType(
                        type: type.name, count: leaks.count, allocations: groups(leaks.map(\.site), typeName: type.name),
                        globalStateReason: leaks.lazy.compactMap { globalState[$0] }.first)
                    if withPaths {
                        (leaked.retainers, leaked.retainersUnavailable) = naming.retainers(
                            ofLeaks: leaks, aliveAtExit: ledger.isAlive, typeName: type.name)
                    }
                    return leaked
                }.sorted { ($0.count, $1.type) > ($1.count, $0.type) }
            }
            // What only a test case object holds (XCTest keeps them all): told by the heap walk.
            let tellsTestCaseState = watch.walksHeaps && !watch.failsOnTestCaseState
            for ((name, started, leaks), test) in zip(byTest, everyTest) {
                let ownLeaks = leaks.filter { globalState[$0] == nil }
                let kept = tellsTestCaseState ? ownLeaks.filter { naming.isKeptByTestCase($0, aliveAtExit: ledger.isAlive) } : []
                let keptSet = Set(kept)
                let leaked = leakedTypes(kept.isEmpty ? ownLeaks : ownLeaks.filter { !keptSet.contains($0) })
                let global = leakedTypes(leaks.filter { globalState[$0] != nil })
                let keptTypes = leakedTypes(kept, withPaths: true)
                // A name seen only on allocations (a Swift Testing suite's scope) is listed only when
                // something it allocated outlived it.
                guard started || !leaked.isEmpty || !global.isEmpty || !keptTypes.isEmpty else { continue }
                var report = AuditReport.TestReport(name: name, leaked: leaked, globalState: global, ran: started)
                report.keptByTestCase = keptTypes
                report.startedAt = test.startedAt.map { Int(clamping: $0) }
                report.finishedAt = test.finishedAt.map { Int(clamping: $0) }
                tests.append(report)
            }
        }
        return ProcessFindings(
            types: types, census: census, tests: tests, unknownBudgets: unknownBudgets,
            symbolizationProblems: symbolizer.problems)
    }

    /// The program's own modules (not the system's or the toolchain's libraries) that the report's
    /// stacks pass through without one frame that has a source file: they were built without
    /// debug information or stripped, which the user must know to read the stacks.
    static func modulesWithoutDebugInformation(in groups: [AuditReport.AllocationGroup]) -> [String] {
        var located: [String: Bool] = [:]
        var order: [String] = []
        for frame in groups.flatMap(\.frames) {
            guard let module = frame.module, !isSystemModule(module) else { continue }
            if located[module] == nil { order.append(module) }
            located[module] = (located[module] ?? false) || frame.file != nil
        }
        return order.filter { located[$0] == false }
    }

    /// True for a library of the system (`/lib`, `/usr/lib`) or the Swift toolchain (`…/lib/swift/`),
    /// which ship without debug information.
    static func isSystemModule(_ path: String) -> Bool {
        ["/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/libexec/"].contains { path.hasPrefix($0) }
            || path.includes("/lib/swift/") || path.hasPrefix("[") || path.hasPrefix("linux-vdso")
    }

    /// Budgets that matched no type named one warning each; more are counted in one line.
    static let unmatchedBudgetsNamed = 10

    /// What each process said of itself when it attached, and how many tests it started; a test
    /// bundle that another test bundle of the run started (a crash test or an exit test in a child
    /// process) runs tests its parent counts, so its own are not counted again.
    static func auditedProcesses(_ ledgers: [LifetimeLedger]) -> [AuditReport.AuditedProcess] {
        let testBundles = Set(ledgers.compactMap(\.process).filter(\.isTestBundle).map(\.pid))
        return ledgers.compactMap { ledger in
            guard var audited = auditedProcess(ledger) else { return nil }
            if let parent = ledger.process?.parentPID, parent > 0, parent != audited.pid, testBundles.contains(parent),
                audited.testingLibrary != nil
            {
                audited.startedByTestProcess = parent
                audited.testsRun = nil
                audited.skippedTests = nil
            }
            return audited
        }
    }

    /// What a process said of itself when it attached, and how many tests it started.
    static func auditedProcess(_ ledger: LifetimeLedger) -> AuditReport.AuditedProcess? {
        guard let process = ledger.process else { return nil }
        let library: AuditReport.AuditedProcess.TestingLibrary? =
            process.isTestBundle ? (process.runsSwiftTesting ? .swiftTesting : .xctest) : nil
        let started = ledger.tests.values.filter(\.started).count
        var audited = AuditReport.AuditedProcess(
            pid: process.pid, commandLine: process.commandLine, testingLibrary: library,
            testsRun: library != nil && process.testsObserved ? started : nil)
        audited.interruptedTests = ledger.interruptedTests
        audited.skippedTests = library != nil && process.testsObserved && process.skipsObserved ? ledger.skippedTests : nil
        return audited
    }

    /// LeakMonitor's and the shim's own frames, which sit on top of every captured stack.
    static func isMonitorFrame(_ frame: SymbolizedFrame) -> Bool {
        if let file = frame.file, file.includes("/Sources/LeakMonitor/") || file.includes("/Sources/CLeakMonitorShim/") {
            return true
        }
        guard let function = frame.function else { return false }
        return function.hasPrefix("leakaudit_") || function.hasPrefix("la_")
            || function.includes("LeakMonitor.MemoryLeakMonitor.")
    }
}
