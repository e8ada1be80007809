import LeakAuditModel
import LeakAuditPresentation

/// Turns a recorded run into a report: exact counts from the ledger, and, for the types over
/// budget only, symbolized allocation stacks.
struct ReportBuilder {
    /// The version the report names as its tool's.
    var toolVersion: String
    /// Makes the symbolizer of one process's loaded images.
    var makeSymbolizer: ([ModuleImage]) -> any AddressSymbolizer = currentPlatform().makeSymbolizer
    /// The symbolizer of one process's loaded images and the grouping of its stacks made with it
    /// ahead of the report (`PreparedSymbolizers`); when set, used instead of `makeSymbolizer`.
    var takePrepared: (([ModuleImage]) -> (symbolizer: any AddressSymbolizer, grouping: AllocationGrouping?))? = nil
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
        /// The objects nothing reached when it exited, if it was checked.
        var unreachable: UnreachableObjects? = nil
    }

    func build(from run: RecordedRun) -> AuditReport {
        let watch = run.plan.watch
        let channel = run.received.channel
        let (indexed, staticRuntime) = auditedProcesses(of: run)
        let ledgers = indexed.map(\.value)
        let walks = run.heapWalks
        let processes = indexed.map {
            report(
                of: $0.value, walk: walks.atExit[$0.key], afterTests: walks.afterTests[$0.key] ?? [:],
                afterTestsUnavailable: walks.afterTestsUnavailable[$0.key] ?? [:],
                deadWhenTestsSettled: walks.deadWhenTestsSettled[$0.key] ?? [], unreachable: walks.unreachable[$0.key],
                watch: watch)
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

        var warnings = Self.runWarnings(run, audited: indexed, staticRuntime: staticRuntime)
        warnings += Self.interruptionWarnings(target.processes)
        warnings += Self.channelWarnings(channel)
        warnings += Self.damageWarnings(
            run.received, unseenDeallocations: Self.unseenDeallocations(in: ledgers, watch: watch),
            inconsistentEvents: inconsistentEvents)
        warnings += Self.unmatchedBudgetWarnings(watch.budgets, types: types)
        warnings += Self.symbolizationWarnings(processes.flatMap(\.symbolizationProblems))

        let notAudited =
            Self.notAuditedReason(run, target: target) ?? (indexed.isEmpty && !staticRuntime.isEmpty ? .staticRuntime : nil)
        let census = watch.census ? Self.census(processes.flatMap(\.census), watch: watch) : nil
        // Counts from a target that could not be audited mean nothing (without observed
        // deallocations every instance looks alive forever): report none rather than wrong ones.
        let audited = notAudited == nil
        let tests = audited && watch.leaksPerTest ? Self.mergedTests(processes.flatMap(\.tests)) : nil
        if audited { warnings += Self.debugInformationWarnings(types: types, census: census, tests: tests) }
        var auditReport = AuditReport(
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
        if audited { auditReport.unreachable = Self.unreachable(processes.compactMap(\.unreachable), run: run, audited: indexed) }
        return auditReport
    }

    /// The objects nothing reached in the processes checked, merged, and which processes could not
    /// be checked and why; nil when no process was to be checked (`--unreachable` not given, and by
    /// default none that links no LeakMonitor asked).
    private static func unreachable(
        _ checked: [UnreachableObjects], run: RecordedRun, audited: [(key: UInt8, value: LifetimeLedger)]
    ) -> UnreachableObjects? {
        let walks = run.heapWalks
        guard run.plan.watch.unreachable || !walks.unreachable.isEmpty || !walks.unreachableUnavailable.isEmpty else {
            return nil
        }
        // By default the check is for the processes that link no LeakMonitor: one that did not
        // ask at its exit ended before it (it crashed, was killed or called _exit).
        let watch = run.plan.watch
        func isChecked(_ ledger: LifetimeLedger) -> Bool {
            watch.unreachable
                || (watch.unreachableByDefault && ledger.process?.linksMonitor == false && !ledger.definesTypesInCode)
        }
        var unavailable: [String] = []
        for (index, ledger) in audited where walks.unreachable[index] == nil {
            let process = ledger.process.map { "process \($0.pid) (\(Self.programName($0.commandLine)))" } ?? "a process"
            if let reason = walks.unreachableUnavailable[index] {
                unavailable.append("\(process): \(reason)")
            } else if isChecked(ledger), walks.atExit[index] == nil {
                unavailable.append(
                    "\(process) did not exit normally (it crashed, was killed or called _exit): its heap was not checked")
            }
        }
        // A process whose records were lost or damaged (its channel written over) asked all the
        // same: it was not checked, and the report says so rather than count it nowhere.
        let listed = Set(audited.map(\.key))
        for (index, reason) in walks.unreachableUnavailable.sorted(by: { $0.key < $1.key }) where !listed.contains(index) {
            unavailable.append("a process that never said who it was: \(reason)")
        }
        return UnreachableObjects.merged(checked, unavailable: unavailable)
    }

    /// A command line's program, by its file name.
    private static func programName(_ commandLine: [String]) -> String {
        ReportPhrases.escaped(commandLine.first.map { String($0.split(separator: "/").last ?? Substring($0)) } ?? "?")
    }

    /// The processes whose ledgers the report counts, by process index, and those left out: a
    /// program with the Swift runtime linked in (-static-stdlib) calls it directly, so the hooks of
    /// the preloaded library, which brings the shared runtime along, never see its allocations or
    /// its failed inits, and its counts would be wrong. Each program is read once (a test run may
    /// start it dozens of times), and the target not again where the plan named it by the path its
    /// process reports (a canonical one).
    private func auditedProcesses(of run: RecordedRun) -> (
        audited: [(key: UInt8, value: LifetimeLedger)], staticRuntime: [(key: UInt8, value: LifetimeLedger)]
    ) {
        let everyProcess = run.received.ledgers.sorted { $0.key < $1.key }
        var kinds: [String: TargetKind] = [:]
        if let kind = run.plan.targetKind { kinds[run.plan.executablePath] = kind }
        let staticRuntime = everyProcess.filter { _, ledger in
            guard let path = ledger.modules.first?.path else { return false }
            let kind = kinds[path] ?? inspectExecutable(path)
            kinds[path] = kind
            return kind == .staticSwift
        }
        let audited = everyProcess.filter { index, _ in !staticRuntime.contains { $0.key == index } }
        return (audited, staticRuntime)
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

    /// One process's findings: its tracked types (with symbolized stacks for those over budget),
    /// census and tests.
    private func report(
        of ledger: LifetimeLedger, walk: HeapWalks.Outcome?, afterTests: [HeapWalks.Instance: RetainerSearch.Path],
        afterTestsUnavailable: [HeapWalks.Instance: String], deadWhenTestsSettled: Set<HeapWalks.Instance>,
        unreachable: UnreachableStructures?, watch: WatchOptions
    ) -> ProcessFindings {
        let (symbolizer, prepared) = takePrepared?(ledger.modules) ?? (makeSymbolizer(ledger.modules), nil)
        let naming = RetainerNaming(
            symbolizer: symbolizer, modules: ledger.modules, walk: walk, afterTests: afterTests,
            afterTestsUnavailable: afterTestsUnavailable, deadWhenTestsSettled: deadWhenTestsSettled)
        let grouping = AllocationGrouping(ledger: ledger, symbolizer: symbolizer, progress: progress, taking: prepared)
        let process = ProcessReport(ledger: ledger, watch: watch, grouping: grouping, naming: naming)
        let (types, census, unknownBudgets) = process.typesAndCensus()
        var findings = ProcessFindings(
            types: types, census: census, tests: watch.leaksPerTest ? process.tests() : [], unknownBudgets: unknownBudgets,
            symbolizationProblems: symbolizer.problems)
        findings.unreachable = unreachable.map { found in
            UnreachableObjects(found, naming: naming) { objects in
                // The watched objects' allocation stacks, grouped type by type as elsewhere.
                let instances = ledger.liveInstances(at: objects)
                let types = ledger.typeCounts
                let byType = Dictionary(grouping: instances, by: \.typeID)
                let groups = byType.keys.sorted().flatMap { typeID in
                    grouping.groups(byType[typeID]?.map(\.site) ?? [], typeName: types[typeID]?.name ?? "")
                }
                return groups.enumerated().sorted { ($1.element.count, $0.offset) < ($0.element.count, $1.offset) }
                    .map(\.element)
            }
        }
        findings.symbolizationProblems = symbolizer.problems
        return findings
    }

    /// The program's own modules (not the system's or the toolchain's libraries) that the report's
    /// stacks pass through without one frame that has a source file: they were built without
    /// debug information or stripped, which the user must know to read the stacks.
    static func modulesWithoutDebugInformation(in groups: [AuditReport.AllocationGroup]) -> [String] {
        // The same stacks come back in many groups (each test's, the census's): each module is
        // judged once, and a frame costs one lookup (GraphQL's report: 4% of leak-audit's CPU when
        // every frame asked the system's prefixes again).
        enum Seen { case system, located, unlocated }
        var seen: [String: Seen] = [:]
        var order: [String] = []
        for group in groups {
            for frame in group.frames {
                guard let module = frame.module else { continue }
                switch seen[module] {
                case .system?, .located?:
                    continue
                case .unlocated?:
                    if frame.file != nil { seen[module] = .located }
                case nil:
                    if isSystemModule(module) {
                        seen[module] = .system
                    } else {
                        order.append(module)
                        seen[module] = frame.file != nil ? .located : .unlocated
                    }
                }
            }
        }
        return order.filter { seen[$0] == .unlocated }
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
