/// Turns a recorded run into a report: exact counts from the ledger, and, for the types over
/// budget only, symbolized allocation stacks.
struct ReportBuilder {
    var toolVersion: String

    func build(from run: RecordedRun) -> AuditReport {
        let ledgers = run.ledgers.sorted { $0.key < $1.key }.map(\.value)
        let processes = ledgers.map { report(of: $0, watch: run.request.watch) }
        let target = AuditReport.Target(
            path: run.request.target, arguments: run.request.arguments, attached: run.attached,
            attachedProcesses: run.attachedProcesses, outcome: run.outcome, kind: run.targetKind,
            processes: ledgers.compactMap(Self.auditedProcess), skippedProcesses: run.skippedProcesses)
        let types = Self.mergedByName(processes.flatMap(\.types))
            .sorted { ($0.exceeded ? 0 : 1, $0.name) < ($1.exceeded ? 0 : 1, $1.name) }
        let inconsistentEvents = run.ledgers.values.reduce(0) { $0 + $1.inconsistentEvents }
        // Only the types the report shows: budgeted ones, and the runtime's and Foundation's own only
        // when the census shows them (CoreFoundation frees its bridged objects where no hook sees it).
        let unseenDeallocations = run.ledgers.values.reduce(0) { total, ledger in
            let types = ledger.types
            return total
                + ledger.unseenDeallocations.reduce(0) { sum, entry in
                    guard let type = types[entry.key],
                        type.budget != .none || !Self.isInternalType(type.name) || run.request.watch.censusShowsInternals
                    else { return sum }
                    return sum + entry.value
                }
        }

        var warnings: [String] = []
        if run.droppedRecords > 0 {
            warnings.append(
                "\(counted(run.droppedRecords, "record")) \(run.droppedRecords == 1 ? "was" : "were") not written (leak-audit stopped reading, or a record was larger than the ring), so counts may be off"
            )
        }
        if run.tooManyProcesses {
            warnings.append("more than 256 instrumented processes: the later ones were not audited")
        }
        if run.typeTableFull {
            warnings.append("more distinct types than leak-audit keeps (16,384): later types were not tracked")
        }
        if run.stackTableFull {
            warnings.append("more distinct allocation stacks than leak-audit keeps: some allocations have no stack")
        }
        if unseenDeallocations > 0 {
            warnings.append(
                "\(counted(unseenDeallocations, "watched object")) \(unseenDeallocations == 1 ? "was" : "were") freed where leak-audit could not see it (the address was reused); counts of \(unseenDeallocations == 1 ? "its type" : "their types") may be high"
            )
        }
        if inconsistentEvents > 0 {
            warnings.append(
                "\(counted(inconsistentEvents, "record")) referred to unknown types or instances")
        }
        for budget in run.request.watch.budgets where !types.contains(where: { $0.budget == .pattern(budget) }) {
            warnings.append(
                "budget '\(budget.description)' (\(budget.origin)) matched no type that was allocated, or only types whose max is declared in code"
            )
        }

        let notAudited: AuditReport.NotAuditedReason?
        if run.recordFormatMismatch && !run.attached {
            notAudited = .recordFormatMismatch
        } else if !run.attached, run.request.watch.watchesAllocations {
            // Watched without LeakMonitor: if a Swift process ran under the preloaded library,
            // nothing attaching only means nothing matched; if none did, say why.
            if run.watchedProcesses > 0 {
                notAudited = nil
            } else {
                notAudited = run.targetKind == .staticSwift ? .staticRuntime : .notSwift
            }
        } else if !run.attached || (!run.instrumented && !run.request.watch.watchesAllocations) {
            // The preloaded library attaches to name tests even where nothing links LeakMonitor and
            // no budget was given: that audits nothing.
            notAudited = .neverAttached
        } else if run.staticRuntime {
            notAudited = .staticRuntime
        } else if target.testsRun == 0 {
            // Test bundles ran and reported every test, and there were none: a filter that matched
            // nothing, or a bundle run for the testing library its tests do not use.
            notAudited = .noTestsRan
        } else {
            notAudited = nil
        }

        var census: AuditReport.Census?
        if run.request.watch.census {
            let entries = Self.mergedCensus(processes.flatMap(\.census))
            let all = run.request.watch.censusShowsInternals
            let shown = all ? entries : entries.filter { !$0.isInternal && !$0.isTestCase }
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
        return AuditReport(
            tool: .init(name: "leak-audit", version: toolVersion),
            target: target,
            notAudited: notAudited,
            types: audited ? types : [],
            census: audited ? census : nil,
            tests: audited && run.request.watch.leaksPerTest ? Self.mergedTests(processes.flatMap(\.tests)) : nil,
            watchedInstances: audited ? ledgers.reduce(0) { $0 + $1.types.values.reduce(0) { $0 + $1.allocated } } : 0,
            droppedRecords: run.droppedRecords,
            tornRecords: run.tornSlots,
            warnings: warnings
        )
    }

    /// One process's tracked types (with symbolized stacks for those over budget) and census.
    private func report(of ledger: LifetimeLedger, watch: WatchOptions) -> (
        types: [AuditReport.TrackedType], census: [AuditReport.CensusEntry], tests: [AuditReport.TestReport]
    ) {
        let symbolizer = Symbolizer(modules: ledger.modules)
        var resolved: [UInt64: [SymbolizedFrame]] = [:]
        func frames(ofStack stackID: UInt32) -> [SymbolizedFrame] {
            let symbolized = (ledger.stacks[stackID] ?? []).flatMap { address in
                if let known = resolved[address] { return known }
                let frames = symbolizer.symbolize(address)
                resolved[address] = frames
                return frames
            }
            return Array(symbolized.drop(while: Self.isMonitorFrame))
        }
        let testNames = ledger.tests.mapValues(\.name)
        /// The sites grouped by the line that constructed their instances (and their test): stacks
        /// that differ only above or below that line are one group, shown with its commonest stack
        /// (an instance first seen by the allocation hook and one seen by validate, say).
        func groups(_ sites: [LifetimeLedger.Site], typeName: String) -> [AuditReport.AllocationGroup] {
            var counts: [LifetimeLedger.Site: Int] = [:]
            for site in sites { counts[site, default: 0] += 1 }
            struct Key: Hashable {
                var line: String?
                var stackID: UInt32?
                var test: UInt32?
            }
            var merged: [Key: (count: Int, representative: LifetimeLedger.Site, representativeCount: Int, truncated: Bool)] = [:]
            // Stack order, so that the commonest stack wins ties the same way every time.
            for (site, count) in counts.sorted(by: {
                ($0.key.stackID, $0.key.test ?? .max) < ($1.key.stackID, $1.key.test ?? .max)
            }) {
                let key =
                    AuditReport.AllocationGroup.constructingSite(in: frames(ofStack: site.stackID), typeName: typeName)
                    .map { Key(line: $0, test: site.test) } ?? Key(stackID: site.stackID, test: site.test)
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
        let ledgerTypes = ledger.types
        for type in ledgerTypes.values {
            let budget: AuditReport.BudgetOrigin?
            switch type.budget {
            case .code: budget = .code
            case .pattern(let index): budget = watch.budgets.indices.contains(index) ? .pattern(watch.budgets[index]) : .code
            case .none: budget = nil
            }
            if let budget {
                var tracked = AuditReport.TrackedType(
                    name: type.name, budget: budget, max: type.max, peakLive: type.peak, liveAtExit: type.live.count,
                    allocatedTotal: type.allocated, allocations: [])
                if tracked.exceeded {
                    tracked.allocations = groups(LifetimeLedger.sitesAliveAtPeak(of: type), typeName: type.name)
                }
                types.append(tracked)
            }
            if watch.census && !type.live.isEmpty {
                let isInternal = Self.isInternalType(type.name)
                let folded = (isInternal || type.heldByXCTest) && !watch.censusShowsInternals
                census.append(
                    AuditReport.CensusEntry(
                        name: type.name, liveAtExit: type.live.count, isInternal: isInternal, isTestCase: type.heldByXCTest,
                        // Stacks are symbolized only for what the report shows.
                        allocations: folded ? [] : groups(type.live.values.map(\.site), typeName: type.name)))
            }
        }

        // Per test: the instances it left alive of the types judged per test (isJudgedPerTest).
        var tests: [AuditReport.TestReport] = []
        if watch.leaksPerTest {
            // Per test, the instances of judged types it left alive; the test harness's
            // own objects (XCTest's, Swift Testing's) are never a test's leak.
            let byTest = ledger.leaksByTest().map { test in
                (
                    test.name, test.started,
                    test.leaks.filter { leak in
                        ledgerTypes[leak.typeID].map { Self.isJudgedPerTest($0, watch: watch) } == true
                    }
                )
            }
            let globalState =
                watch.failsOnGlobalState
                ? [:]
                : Self.globalState(
                    among: byTest.flatMap { name, _, leaks in leaks.map { (name, $0) } },
                    outlived: ledger.outlivedByTest().flatMap { name, leaks in leaks.map { (name, $0) } }, in: ledger,
                    frames: frames)
            func leakedTypes(_ leaks: [LifetimeLedger.Leak]) -> [AuditReport.TestReport.LeakedType] {
                Dictionary(grouping: leaks, by: \.typeID).compactMap { typeID, leaks -> AuditReport.TestReport.LeakedType? in
                    guard let type = ledgerTypes[typeID] else { return nil }
                    return .init(
                        type: type.name, count: leaks.count, allocations: groups(leaks.map(\.site), typeName: type.name),
                        globalStateReason: leaks.lazy.compactMap { globalState[$0] }.first)
                }.sorted { ($0.count, $1.type) > ($1.count, $0.type) }
            }
            for (name, started, leaks) in byTest {
                let leaked = leakedTypes(leaks.filter { globalState[$0] == nil })
                let global = leakedTypes(leaks.filter { globalState[$0] != nil })
                // A name seen only on allocations (a Swift Testing suite's scope) is listed only when
                // something it allocated outlived it.
                guard started || !leaked.isEmpty || !global.isEmpty else { continue }
                tests.append(AuditReport.TestReport(name: name, leaked: leaked, globalState: global, ran: started))
            }
        }
        return (types, census, tests)
    }

    /// Test reports of several processes, one per test name, in name order.
    static func mergedTests(_ tests: [AuditReport.TestReport]) -> [AuditReport.TestReport] {
        var merged: [String: AuditReport.TestReport] = [:]
        // The same type left alive by the same test in two processes is one entry.
        func merging(_ types: [AuditReport.TestReport.LeakedType], into existing: inout [AuditReport.TestReport.LeakedType]) {
            for leaked in types {
                if let index = existing.firstIndex(where: { $0.type == leaked.type }) {
                    existing[index].count += leaked.count
                    existing[index].allocations = mergedGroups(existing[index].allocations + leaked.allocations)
                } else {
                    existing.append(leaked)
                }
            }
        }
        for test in tests {
            guard var entry = merged[test.name] else {
                merged[test.name] = test
                continue
            }
            merging(test.leaked, into: &entry.leaked)
            merging(test.globalState, into: &entry.globalState)
            entry.ran = entry.ran || test.ran
            merged[test.name] = entry
        }
        return merged.values.sorted { $0.name < $1.name }
    }

    /// Census entries of several processes, one per name, most instances first.
    static func mergedCensus(_ entries: [AuditReport.CensusEntry]) -> [AuditReport.CensusEntry] {
        var merged: [String: AuditReport.CensusEntry] = [:]
        for entry in entries {
            if var existing = merged[entry.name] {
                existing.liveAtExit += entry.liveAtExit
                existing.allocations = mergedGroups(existing.allocations + entry.allocations)
                merged[entry.name] = existing
            } else {
                merged[entry.name] = entry
            }
        }
        return merged.values.sorted { ($0.liveAtExit, $1.name) > ($1.liveAtExit, $0.name) }
    }

    /// Modules of the toolchain whose types users cannot act on.
    static let internalModules: Set<String> = [
        "Swift", "_Concurrency", "_StringProcessing", "_RegexParser", "Foundation", "FoundationEssentials",
        "FoundationInternationalization", "FoundationNetworking", "FoundationXML", "CoreFoundation", "XCTest",
        "Testing", "_Testing_Foundation", "Dispatch", "Synchronization", "Observation", "Distributed", "RegexBuilder",
        "__C", "_SwiftConcurrencyShims",
    ]

    /// The instances tests left alive that are global state rather than the tests' leaks, and why
    /// (docs/design.md, "Global state"):
    /// - allocated under a one-time initializer (a lazily initialised global or static);
    /// - or made by a line whose instances outlived the end of each of at least two tests that ran
    ///   it, and of which at most half those tests' are still alive at the end of the run: each
    ///   test's were held past its end and released when a later test replaced them (a logging or
    ///   metrics bootstrap per test). A line whose instances die within the tests that do not leak, or that
    ///   keeps every leaking test's instances alive, stays each test's leak.
    static func globalState(
        among leaks: [(test: String, leak: LifetimeLedger.Leak)], outlived: [(test: String, leak: LifetimeLedger.Leak)],
        in ledger: LifetimeLedger, frames: (UInt32) -> [SymbolizedFrame]
    ) -> [LifetimeLedger.Leak: AuditReport.GlobalStateReason] {
        struct StackKey: Hashable {
            var stackID: UInt32
            var typeID: UInt32
        }
        var stacks: [StackKey: (once: Bool, line: String?)] = [:]
        let typeNames = ledger.types.mapValues(\.name)
        func stack(_ leak: LifetimeLedger.Leak) -> (once: Bool, line: String?) {
            let key = StackKey(stackID: leak.site.stackID, typeID: leak.typeID)
            if let known = stacks[key] { return known }
            let symbolized = frames(leak.site.stackID)
            let typeName = typeNames[leak.typeID] ?? ""
            let line = AuditReport.AllocationGroup.constructingSite(in: symbolized, typeName: typeName)
            let answer = (symbolized.contains(where: isOneTimeInitialization), line)
            stacks[key] = answer
            return answer
        }
        struct LineKey: Hashable {
            var typeID: UInt32
            var line: String
        }
        func lineKey(_ leak: LifetimeLedger.Leak) -> LineKey? {
            stack(leak).line.map { LineKey(typeID: leak.typeID, line: $0) }
        }
        // Lines whose instances every test that kept them past its end later lost to another.
        var outlivedByLine: [LineKey: [(test: String, leak: LifetimeLedger.Leak)]] = [:]
        for entry in outlived {
            if let key = lineKey(entry.leak) { outlivedByLine[key, default: []].append(entry) }
        }
        var replacedLines: Set<LineKey> = []
        for (key, entries) in outlivedByLine {
            let tests = Set(entries.map(\.test))
            let stillAlive = Set(entries.filter { ledger.isAlive($0.leak) }.map(\.test))
            // Replacement is the rule, not the exception: at most half the tests still hold theirs
            // (two globals bootstrapped from one line keep two tests' instances).
            if tests.count >= 2 && stillAlive.count * 2 <= tests.count { replacedLines.insert(key) }
        }
        var reasons: [LifetimeLedger.Leak: AuditReport.GlobalStateReason] = [:]
        for (_, leak) in leaks {
            if stack(leak).once {
                reasons[leak] = .oneTimeInitializer
            } else if let key = lineKey(leak), replacedLines.contains(key) {
                reasons[leak] = .replacedByLaterTests
            }
        }
        return reasons
    }

    /// True for a frame of a one-time initializer: a lazily initialised global or static variable's
    /// initializer (`one-time initialization function for X`), or the runtime's `swift_once`
    /// machinery that calls it. An instance allocated under one is global state.
    static func isOneTimeInitialization(_ frame: SymbolizedFrame) -> Bool {
        guard let function = frame.function else { return false }
        return function.hasPrefix("one-time initialization function for ") || function == "swift_once"
            || function.hasPrefix("swift::threading_impl::once") || function.hasPrefix("swift::once")
    }

    /// True for a type whose instances a test can leak: one with a budget, or with every class
    /// watched, one of the package's own classes; never the harness's, the toolchain's, or a test
    /// case class (XCTest keeps those).
    static func isJudgedPerTest(_ type: LifetimeLedger.TypeLedger, watch: WatchOptions) -> Bool {
        if isHarnessType(type.name) { return false }
        if type.budget != .none { return true }
        return (watch.census || watch.watchesEveryClass) && !isInternalType(type.name) && !type.heldByXCTest
    }

    /// Modules of the test harnesses, whose objects (test cases, runners, locks) live as long as
    /// the harness needs them.
    static let harnessModules: Set<String> = ["XCTest", "Testing", "_Testing_Foundation", "_TestingInterop", "_TestDiscovery"]

    /// True for a type of XCTest or Swift Testing.
    static func isHarnessType(_ name: String) -> Bool {
        harnessModules.contains(String(name.prefix { $0 != "." && $0 != "<" }))
    }

    /// What a process said of itself when it attached, and how many tests it started.
    static func auditedProcess(_ ledger: LifetimeLedger) -> AuditReport.AuditedProcess? {
        guard let process = ledger.process else { return nil }
        let library: AuditReport.AuditedProcess.TestingLibrary? =
            process.isTestBundle ? (process.runsSwiftTesting ? .swiftTesting : .xctest) : nil
        let started = ledger.tests.values.filter(\.started).count
        return AuditReport.AuditedProcess(
            pid: process.pid, commandLine: process.commandLine, testingLibrary: library,
            testsRun: library != nil && process.testsObserved ? started : nil)
    }

    /// True for a type of the Swift runtime, Foundation, XCTest or another toolchain library.
    static func isInternalType(_ name: String) -> Bool {
        let module = name.prefix { $0 != "." && $0 != "<" }
        return internalModules.contains(String(module)) || module.hasPrefix("_")
    }

    /// One entry per type name across processes. A budget holds within each process, so the entry
    /// shows the budget, the peak and the allocation groups of the process that went furthest over
    /// (or came closest), whose counts add up to that peak, and is exceeded when any process
    /// exceeded; instances at exit and allocations over the run are summed.
    static func mergedByName(_ types: [AuditReport.TrackedType]) -> [AuditReport.TrackedType] {
        var merged: [String: AuditReport.TrackedType] = [:]
        var order: [String] = []
        for type in types {
            guard var existing = merged[type.name] else {
                merged[type.name] = type
                order.append(type.name)
                continue
            }
            if type.peakLive.subtractingReportingOverflow(type.max).partialValue
                > existing.peakLive.subtractingReportingOverflow(existing.max).partialValue
            {
                existing.max = type.max
                existing.peakLive = type.peakLive
                existing.allocations = type.allocations
            }
            existing.liveAtExit += type.liveAtExit
            existing.allocatedTotal += type.allocatedTotal
            merged[type.name] = existing
        }
        return order.compactMap { merged[$0] }
    }

    private static func mergedGroups(_ groups: [AuditReport.AllocationGroup]) -> [AuditReport.AllocationGroup] {
        struct Key: Hashable {
            var frames: [SymbolizedFrame]
            var test: String?
        }
        var byKey: [Key: AuditReport.AllocationGroup] = [:]
        var order: [Key] = []
        for group in groups {
            // Addresses differ between processes (ASLR): compare what the frames say.
            let frames = group.frames.map {
                SymbolizedFrame(
                    address: 0, module: $0.module, moduleOffset: $0.moduleOffset, function: $0.function, file: $0.file,
                    line: $0.line, column: $0.column, inlined: $0.inlined)
            }
            let key = Key(frames: frames, test: group.test)
            if byKey[key] == nil { order.append(key) }
            byKey[key, default: AuditReport.AllocationGroup(count: 0, frames: group.frames, truncated: false, test: group.test)]
                .count += group.count
            if group.truncated { byKey[key]?.truncated = true }
        }
        return order.compactMap { byKey[$0] }.sorted { $0.count > $1.count }
    }

    /// LeakMonitor's and the shim's own frames, which sit on top of every captured stack.
    static func isMonitorFrame(_ frame: SymbolizedFrame) -> Bool {
        if let file = frame.file, file.contains("/Sources/LeakMonitor/") || file.contains("/Sources/CLeakMonitorShim/") {
            return true
        }
        guard let function = frame.function else { return false }
        return function.hasPrefix("leakaudit_") || function.hasPrefix("la_")
            || function.contains("LeakMonitor.MemoryLeakMonitor.")
    }
}

/// Runs `request` under leak-audit and returns the report, its findings judged by the request's
/// policy (suppressions and baseline); throws when the target cannot start.
public func audit(_ request: AuditRequest, toolVersion: String) throws(LeakAuditError) -> AuditReport {
    let run = try recordRun(request)
    var report = ReportBuilder(toolVersion: toolVersion).build(from: run)
    request.policy.apply(to: &report)
    return report
}
