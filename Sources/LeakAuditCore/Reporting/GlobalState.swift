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
    /// - or released later in the run right after global state the same test left alive, in the
    ///   order of deaths: presumably held by it, it went in the same deinit's cascade (a replaced
    ///   metrics system's counters). See `heldDeathsBetween` and `heldMillisecondsApart`.
    /// A stack's constructing line comes from `constructingLine` when given (the report's
    /// grouping, which finds it once), else from its `frames`.
    static func globalState(
        among leaks: [(test: String, leak: LifetimeLedger.Leak)], outlived: [(test: String, leak: LifetimeLedger.Leak)],
        in ledger: LifetimeLedger, constructingLine: ((_ stackID: UInt32, _ typeName: String) -> String?)? = nil,
        frames: (UInt32) -> [SymbolizedFrame]
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
            // The report's grouping knows the line of every stack it groups (`constructingLine`).
            let line =
                constructingLine.map { $0(leak.site.stackID, typeName) }
                ?? AuditReport.AllocationGroup.constructingSite(in: symbolized, typeName: typeName)
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
        // By test, the deaths of what it left alive, in order; then what died right after its
        // global state.
        var deaths: [String: [(death: LifetimeLedger.LateDeath, leak: LifetimeLedger.Leak)]] = [:]
        for (test, leak) in leaks {
            if let death = ledger.lateDeath(of: leak) { deaths[test, default: []].append((death, leak)) }
        }
        for chain in deaths.values {
            var previous: LifetimeLedger.LateDeath? = nil
            for (death, leak) in chain.sorted(by: { $0.death.order < $1.death.order }) {
                if reasons[leak] != nil {
                    previous = death
                } else if let held = previous, death.order - held.order <= Self.heldDeathsBetween + 1,
                    Swift.max(death.milliseconds, held.milliseconds) - Swift.min(death.milliseconds, held.milliseconds)
                        <= Self.heldMillisecondsApart
                {
                    reasons[leak] = .releasedWithGlobalState
                    previous = death
                }
            }
        }
        return reasons
    }

    /// True when `path` runs from a global (or thread-local storage) through an object of a type
    /// one of whose methods is on `frames`, the instance's allocation stack: the global's object
    /// made it and keeps it (a process-wide registry's `makeHistogram`, which keeps each metric by
    /// name). An object the test made and handed to a global (a view model subscribed to a
    /// shared hub) has no such frame: it stays the test's leak.
    static func isMadeByItsGlobalHolder(_ path: RetainerSearch.Path, frames: [SymbolizedFrame]) -> Bool {
        switch path.root {
        case .global, .threadLocal: break
        default: return false
        }
        // The holders before the instance itself, by their types' names without generic arguments.
        let holders = Set(
            path.steps.dropLast().map { String($0.type.prefix { $0 != "<" }) }.filter {
                !$0.isEmpty && !$0.hasPrefix("[") && !$0.hasPrefix("Swift.") && $0 != "closure context"
            })
        guard !holders.isEmpty else { return false }
        return frames.contains { frame in
            guard let function = frame.function else { return false }
            return holders.contains { holder in function.hasPrefix(holder + ".") || function.includes(" in " + holder + ".") }
        }
    }

    /// True when `frames`, the instance's allocation stack, runs code of the initializer
    /// expression of `global`, the global its path starts at: a closure that initializer handed to
    /// another thread made it, and the global keeps it (a cache a static fills on a Dispatch queue
    /// the first time it is read: `static let roots = queue.loading { … }`). Only that global's
    /// expression counts: on Linux every XCTest test runs under a closure of SwiftPM's generated
    /// test list (`variable initialization expression of static Module.Tests.__allTests__Tests`),
    /// and a closure of another global's initializer may hand the test's objects anywhere. False
    /// when the path starts at no global (`global` nil).
    static func isMadeByItsGlobalsInitializer(global: String?, frames: [SymbolizedFrame]) -> Bool {
        guard let global else { return false }
        // `closure #1 … in variable initialization expression of static Module.Type.name : Type`.
        return frames.contains { frame in
            guard let function = frame.function.map(SwiftName.withoutPrivateDiscriminators),
                let expression = function.firstRange(of: "variable initialization expression of ")
            else { return false }
            var variable = function[expression.upperBound...]
            if variable.hasPrefix("static ") { variable = variable.dropFirst("static ".count) }
            if let type = variable.firstRange(of: " : ") { variable = variable[..<type.lowerBound] }
            return variable == global
        }
    }

    /// True when `path` runs from a global whose object (the path's first) is of one of
    /// `globalsMadeFirst`, the types of the globals' objects whose one-time initializers ran during
    /// `test`, and the instance was made on a thread of its own with none of the test's code on it:
    /// `frames`, its whole allocation stack (`complete`), starts in libc (a thread's start) and
    /// shows neither the test nor a test runner, a task or a dispatch queue that could run the
    /// test's code. A lazily made pool whose threads each make the object it keeps (NIO's
    /// `NIOThread`), through another type's function, made it. An object a test hands to a global
    /// that an earlier test made stays the test's leak, from whatever thread; one handed, from a
    /// thread showing none of its code, to a global the same test made first is taken for the
    /// global's (leak-audit does not record which thread started which).
    static func isMadeOnAThreadOfANewGlobal(
        _ path: RetainerSearch.Path, frames: [SymbolizedFrame], complete: Bool, globalsMadeFirst: Set<String>,
        test: String
    ) -> Bool {
        guard case .global = path.root, complete, !globalsMadeFirst.isEmpty else { return false }
        let baseName = { (type: String) in String(type.prefix { $0 != "<" }) }
        let madeFirst = Set(globalsMadeFirst.map(baseName))
        guard path.steps.count >= 2, let global = path.steps.first, madeFirst.contains(baseName(global.type)) else {
            return false
        }
        guard let outermost = frames.last?.module, outermost.split(separator: "/").last?.hasPrefix("libc.so") == true
        else { return false }
        // The test's function as frames name it: `Module.Type/method()` is `Module.Type.method(`.
        let testFunction =
            test.prefix { $0 != "(" }.split(separator: "/", omittingEmptySubsequences: false).joined(separator: ".") + "("
        let runners = ["libXCTest", "libTesting", "libswift_Concurrency", "libdispatch"]
        return !frames.contains { frame in
            if let function = frame.function, function.includes(testFunction) { return true }
            guard let module = frame.module?.split(separator: "/").last else { return false }
            return runners.contains { module.hasPrefix($0) }
        }
    }

    /// True when `path` holds the instance from a thread's own storage only: its root is a
    /// thread's thread-local storage, or the path goes through a thread's dictionary
    /// (`Foundation.Thread.threadDictionary`), where a library keeps a per-thread cache. Not
    /// through a closure: work scheduled on what the thread keeps (an event loop's timer) is the
    /// work of whoever left it, not the thread's storage.
    static func isHeldByThreadStorage(_ path: RetainerSearch.Path) -> Bool {
        if path.steps.contains(where: { $0.closure != nil || $0.type == "closure context" }) { return false }
        if case .threadLocal = path.root { return true }
        return path.steps.contains { step in
            guard case .property("threadDictionary", _) = step.hold else { return false }
            return true
        } && path.steps.contains { $0.type == "Foundation.Thread" }
    }

    /// How close after the death of a test's global state (or of what it held) the death of another
    /// instance the test left alive must come for that instance to count as held by it, and go
    /// with it. An instance's death is recorded before what it holds is released, so one deinit's
    /// cascade is a run of deaths in the order of the records: at most this many deaths of tests'
    /// instances between the two (what it held that the test did not leave alive, a dictionary's
    /// storage, and other threads' tests')...
    static let heldDeathsBetween: UInt64 = 64
    /// ...and this many milliseconds apart by the records' times, which leak-audit's clock stamps
    /// as it publishes it (every few milliseconds while it reads): a cascade takes microseconds,
    /// and a death seconds later that nothing else died before is not part of it.
    static let heldMillisecondsApart: UInt64 = 50

    /// True for a frame of a one-time initializer: a lazily initialised global or static variable's
    /// initializer (`one-time initialization function for X`), or the runtime's `swift_once`
    /// machinery that calls it. An instance allocated under one is global state.
    static func isOneTimeInitialization(_ frame: SymbolizedFrame) -> Bool {
        guard let function = frame.function else { return false }
        return function.hasPrefix("one-time initialization function for ") || function == "swift_once"
            || function.hasPrefix("swift::threading_impl::once") || function.hasPrefix("swift::once")
    }
}
