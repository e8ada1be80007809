import LeakAuditModel
import LeakAuditPresentation

// The report's warnings, each kind a step of `ReportBuilder.build(from:)` (which lists them in
// this order), and the census the report shows.

extension ReportBuilder {
    /// How the run went: processes left out for their static runtime, a signal passed on, a
    /// --timeout, and processes that could not be walked at their exit.
    static func runWarnings(
        _ run: RecordedRun, audited indexed: [(key: UInt8, value: LifetimeLedger)],
        staticRuntime: [(key: UInt8, value: LifetimeLedger)]
    ) -> [String] {
        let watch = run.plan.watch
        let walks = run.heapWalks
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
        return warnings
    }

    /// Test processes that ended in the middle of a test.
    static func interruptionWarnings(_ processes: [AuditReport.AuditedProcess]) -> [String] {
        var warnings: [String] = []
        // A test process another started (a crash test's child) is meant to end in its test: one
        // line for all of them.
        let interrupted = processes.filter { !$0.interruptedTests.isEmpty }
        for process in interrupted where process.startedByTestProcess == nil {
            warnings.append(Self.interruptionWarning(process))
        }
        let children = interrupted.filter { $0.startedByTestProcess != nil }
        if !children.isEmpty {
            warnings.append(
                "\(counted(children.count, "test process", plural: "test processes")) that other test processes started (crash or exit tests) ended in the middle of their test, as such tests mean them to; those tests were not judged there"
            )
        }
        return warnings
    }

    /// What the channel's header says was lost: records not written, children forked without exec,
    /// and full tables.
    static func channelWarnings(_ channel: ChannelSummary) -> [String] {
        var warnings: [String] = []
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
        return warnings
    }

    /// Counts that may be off, and records that were damaged, cut or not counted.
    static func damageWarnings(_ received: Reception, unseenDeallocations: Int, inconsistentEvents: Int) -> [String] {
        var warnings: [String] = []
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
        let malformed = received.malformedSlots &- received.overlongStacks
        if malformed > 0 {
            warnings.append(
                "\(counted(malformed, "record")) in leak-audit's channel \(malformed == 1 ? "was" : "were") no record LeakMonitor writes: something else wrote into it, so counts may be wrong"
            )
        }
        if received.overlongStacks > 0 {
            warnings.append(
                "\(counted(received.overlongStacks, "allocation stack")) held more than the \(RecordDecoder.mostFrames) frames LeakMonitor records (\(received.cutFrames) more): each was cut to its innermost \(RecordDecoder.mostFrames), and counted as damage"
            )
        }
        if received.longNames > 0 {
            warnings.append(
                "\(counted(received.longNames, "type or test name")) \(received.longNames == 1 ? "was" : "were") longer than \(RecordDecoder.longestName) bytes: cut there, ending in '…'"
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
        return warnings
    }

    /// Budgets that matched no type: a configuration of thousands of budgets says which matched
    /// nothing in a few lines.
    static func unmatchedBudgetWarnings(_ budgets: [BudgetPattern], types: [AuditReport.TrackedType]) -> [String] {
        var warnings: [String] = []
        let applied = Set(types.compactMap { if case .pattern(let budget) = $0.budget { budget } else { nil } })
        let unmatched = budgets.filter { !applied.contains($0) }
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
        return warnings
    }

    /// Missing or unreadable debug information: frames the user sees with less than they could,
    /// each problem once.
    static func symbolizationWarnings(_ everyProblem: [String]) -> [String] {
        var problems: [String] = []
        for problem in everyProblem where !problems.contains(problem) {
            problems.append(problem)
        }
        return problems.map { "symbolization: \($0)" }
    }

    /// The program's modules without debug information among the stacks the report shows.
    static func debugInformationWarnings(
        types: [AuditReport.TrackedType], census: AuditReport.Census?, tests: [AuditReport.TestReport]?
    ) -> [String] {
        var warnings: [String] = []
        var shown: [AuditReport.AllocationGroup] = types.filter(\.exceeded).flatMap(\.allocations)
        shown += (census?.entries ?? []).flatMap(\.allocations)
        shown += (tests ?? []).flatMap { $0.leaked + $0.globalState }.flatMap(\.allocations)
        for module in Self.modulesWithoutDebugInformation(in: shown) {
            warnings.append(
                "symbolization: '\(module)' has no debug information, so its frames show no file or line; build it with debug information (swift build's default) and do not strip it"
            )
        }
        return warnings
    }

    /// Watched objects freed where no hook saw it, of the types the report shows only: budgeted
    /// ones, and the runtime's and Foundation's own only when the census shows them (CoreFoundation
    /// frees its bridged objects where no hook sees it).
    static func unseenDeallocations(in ledgers: [LifetimeLedger], watch: WatchOptions) -> Int {
        ledgers.reduce(0) { total, ledger in
            let types = ledger.typeCounts
            return total
                + ledger.unseenDeallocations.reduce(0) { sum, entry in
                    guard let type = types[entry.key],
                        type.budget != .none || !TypeOrigin.isInternalType(type.name) || watch.censusShowsInternals
                    else { return sum }
                    return sum + entry.value
                }
        }
    }

    /// The census of every process, merged: the toolchain's types and test case objects folded
    /// into counts unless the census shows internals.
    static func census(_ processCensus: [AuditReport.CensusEntry], watch: WatchOptions) -> AuditReport.Census {
        let entries = mergedCensus(processCensus)
        let all = watch.censusShowsInternals
        var shown = all ? entries : entries.filter { !$0.isInternal && !$0.isTestCase }
        // A chart for the types with the most instances, not for thousands.
        for index in shown.indices.dropFirst(censusTimelines) { shown[index].timeline = nil }
        let folded = all ? [] : entries.filter(\.isInternal)
        // XCTest keeps every test case object until the run ends: the harness's, not a leak.
        let testCases = all ? [] : entries.filter { $0.isTestCase && !$0.isInternal }
        return AuditReport.Census(
            entries: shown, foldedTypes: folded.count, foldedInstances: folded.reduce(0) { $0 + $1.liveAtExit },
            foldedTestCaseTypes: testCases.count, foldedTestCaseInstances: testCases.reduce(0) { $0 + $1.liveAtExit })
    }
}
