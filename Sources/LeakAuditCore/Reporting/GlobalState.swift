import LeakAuditModel

// Global state among what tests left alive (docs/design.md, "Global state"): instances made by a
// one-time initializer, or by a line whose instances later tests replaced, and what such instances
// held, are reported apart from the tests' leaks.

extension ReportBuilder {
    /// The instances tests left alive that are global state rather than the tests' leaks, and why
    /// (docs/design.md, "Global state"):
    /// - allocated under a one-time initializer (a lazily initialised global or static);
    /// - or made by a line whose instances outlived the end of each of at least two tests that ran
    ///   it, and of which at most half those tests' are still alive at the end of the run: each
    ///   test's were held past its end and released when a later test replaced them (a logging or
    ///   metrics bootstrap per test). A line whose instances die within the tests that do not leak, or that
    ///   keeps every leaking test's instances alive, stays each test's leak;
    /// - or released later in the run within a millisecond of global state the same test left alive:
    ///   held by it, it went in the same deinit's cascade (a replaced metrics system's counters).
    static func globalState(
        among leaks: [(test: String, leak: LifetimeLedger.Leak)], outlived: [(test: String, leak: LifetimeLedger.Leak)],
        in ledger: LifetimeLedger, frames: (UInt32) -> [SymbolizedFrame]
    ) -> [LifetimeLedger.Leak: AuditReport.GlobalStateReason] {
        struct StackKey: Hashable {
            var stackID: UInt32
            var typeID: UInt32
        }
        var stacks: [StackKey: (once: Bool, line: String?)] = [:]
        let typeNames = ledger.typeCounts.mapValues(\.name)
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
        // By test, when the global state it left alive died; then what died with it.
        var globalDeaths: [String: [UInt64]] = [:]
        for (test, leak) in leaks where reasons[leak] != nil {
            if let died = ledger.deathTime(of: leak) { globalDeaths[test, default: []].append(died) }
        }
        for (test, leak) in leaks where reasons[leak] == nil {
            guard let died = ledger.deathTime(of: leak), let deaths = globalDeaths[test] else { continue }
            if deaths.contains(where: { $0 &+ 1 >= died && died &+ 1 >= $0 }) { reasons[leak] = .releasedWithGlobalState }
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
}
