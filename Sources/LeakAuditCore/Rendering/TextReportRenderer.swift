import FoundationEssentials

/// The report for people: one block per failing type over budget with its allocation stacks as
/// `function at file:line`, then one line per type within budget, the census and the tests, then
/// one line per suppressed and per baselined finding and per baseline entry that is gone, then the
/// verdict.
///
/// Stacks are tightened for reading (JSON keeps every frame): paths under the working directory
/// are shown relative to it, return types are left out of function names, compiler thunks that
/// have no line are skipped, and frames below the program's entry point are cut.
public struct TextReportRenderer: ReportRenderer {
    /// Paths under this directory are shown relative to it.
    public var workingDirectory: String

    /// Creates the renderer; `workingDirectory` defaults to the process's.
    public init(workingDirectory: String? = nil) {
        self.workingDirectory = workingDirectory ?? FileManager.default.currentDirectoryPath
    }

    /// Renders the report as plain text (no colour, so it reads the same in a CI log).
    public func render(_ report: AuditReport) -> String {
        var lines: [String] = []
        if let explanation = notAuditedExplanation(report) {
            lines.append(contentsOf: explanation)
        } else {
            lines.append(contentsOf: renderTypes(report))
            if let census = report.census { lines.append(contentsOf: renderCensus(census)) }
            if let tests = report.tests { lines.append(contentsOf: renderTests(tests, report)) }
            lines.append(contentsOf: renderSuppressed(report))
            lines.append(contentsOf: renderBaselined(report))
            lines.append(contentsOf: renderGone(report))
        }
        if let processes = processesLine(report) { lines.append(processes) }
        for warning in report.warnings { lines.append("warning: \(warning)") }
        // Slots reserved by a writer that then found leak-audit gone stay empty too: with drops, the
        // torn count is not evidence of a crash.
        if report.tornRecords > 0 && report.droppedRecords == 0 {
            lines.append("note: \(report.tornRecords) records were cut short when the target ended; everything else was received")
        }
        lines.append(summary(report))
        return lines.joined(separator: "\n") + "\n"
    }

    /// Why the target could not be audited and what to do, fitted to what the target is; nil when
    /// it was audited.
    func notAuditedExplanation(_ report: AuditReport) -> [String]? {
        let target = "'\(Self.escaped(report.target.path))'"
        let outcome = "it \(report.target.outcome.phrase)"
        let optIn = [
            "  Run it with --census to list the class instances still alive at exit, give budgets by type name",
            "  (--budget 'App.*ViewModel=1'), or make types opt in: MemoryLeakMonitorable and",
            "  MemoryLeakMonitor.validate(self) in init.",
        ]
        let notSwift = [
            "leak-audit: \(target) is not a Swift program (it does not load the Swift runtime) and started none",
            "  that could be audited, so nothing was (\(outcome)). leak-audit audits Swift programs and test",
            "  bundles: give it one (.build/debug/<Package>PackageTests.xctest), or a command that starts one",
            "  (swift test).",
        ]
        switch report.notAudited {
        case .neverAttached:
            switch report.target.kind {
            case .swiftTestBundle:
                return [
                    "leak-audit: \(target) is a Swift test bundle, but none of its types opted in and no budget or",
                    "  census was asked for, so nothing was audited (\(outcome)).",
                ] + optIn
            case .dynamicSwift:
                return [
                    "leak-audit: \(target) is a Swift program, but none of its types opted in and no budget or",
                    "  census was asked for, so nothing was audited (\(outcome)).",
                ] + optIn
            case .staticSwift: return staticRuntimeExplanation(target)
            case .notSwift: return notSwift
            case .other, nil:
                return [
                    "leak-audit: \(target) started no Swift program whose types opted in, and no budget or census",
                    "  was asked for, so nothing was audited (\(outcome)).",
                ] + optIn
            }
        case .recordFormatMismatch:
            return [
                "leak-audit: \(target) links a LeakMonitor that writes another record format than this",
                "  leak-audit (\(leakAuditVersion)) reads; build it against the same leak-audit release.",
            ]
        case .staticRuntime:
            return staticRuntimeExplanation(target)
        case .notSwift:
            if report.target.kind == .notSwift { return notSwift }
            return [
                "leak-audit: \(target) started no Swift program with the Swift runtime linked dynamically, so",
                "  nothing was audited (\(outcome)). leak-audit watches Swift class instances.",
            ]
        case .noTestsRan:
            return [
                "leak-audit: no test ran in \(target) (\(outcome)), so nothing was audited.",
                "  Check the test names given (XCTest: Module.Class/testName; --list-tests lists them). A test",
                "  bundle runs XCTest's tests unless started with --testing-library swift-testing; swift test",
                "  runs both.",
            ]
        case nil:
            return nil
        }
    }

    private func staticRuntimeExplanation(_ target: String) -> [String] {
        [
            "leak-audit: \(target) links the Swift runtime statically (-static-stdlib), so allocations and",
            "  deallocations cannot be observed and live counts would be wrong; rebuild it without -static-stdlib.",
        ]
    }

    /// `max 1`, or `max 1 from 'App.*ViewModel=1' (--budget)` for a pattern's budget.
    func budget(_ type: AuditReport.TrackedType) -> String {
        switch type.budget {
        case .code: "max \(type.max)"
        case .pattern(let pattern):
            "max \(type.max) from '\(Self.escaped(pattern.description))' (\(Self.escaped(pattern.origin)))"
        }
    }

    func renderGroups(_ groups: [AuditReport.AllocationGroup], indent: String) -> [String] {
        var lines: [String] = []
        for group in groups {
            let test = group.test.map { " in \(Self.escaped($0))" } ?? ""
            lines.append("\(indent)\(group.count) × allocated\(test) at")
            if group.frames.isEmpty { lines.append("\(indent)    (no stack recorded)") }
            let shown = readableFrames(group.frames)
            for frame in shown { lines.append("\(indent)    " + describe(frame)) }
            let hidden = group.frames.count - shown.count
            if hidden > 0 {
                let frames = hidden == 1 ? "frame" : "frames"
                lines.append(
                    "\(indent)    … \(hidden) more \(frames) in libraries and compiler thunks (--format json lists them)")
            }
            if group.truncated { lines.append("\(indent)    … (deeper frames not recorded)") }
        }
        return lines
    }

    /// An exceeded type's block: its counts, how it compares with the baseline when there is one,
    /// then its allocation stacks.
    func exceededBlock(_ type: AuditReport.TrackedType, baseline: AuditReport.BaselineComparison? = nil) -> [String] {
        let surplus = type.peakLive.subtractingReportingOverflow(type.max).partialValue
        var lines = [
            "EXCEEDED \(Self.escaped(type.name)): \(budget(type)), peak \(type.peakLive), alive at exit \(type.liveAtExit)",
            "  \(type.peakLive) alive at the peak (\(surplus) over budget), allocated at:",
        ]
        if let comparison = Self.baselineComparison(type.status, baseline, unit: " over budget") {
            lines.insert("  " + comparison, at: 1)
        }
        return lines + renderGroups(type.allocations, indent: "  ")
    }

    /// `larger than the baseline, which records 2 over budget`, `new: not in the baseline`, or nil
    /// without a baseline.
    static func baselineComparison(
        _ status: FindingStatus, _ baseline: AuditReport.BaselineComparison?, unit: String
    ) -> String? {
        guard let baseline else { return nil }
        let file = "'\(escaped(baseline.path))'"
        switch status {
        case .largerThanBaseline(let recorded): return "larger than the baseline \(file), which records \(recorded)\(unit)"
        case .failing: return "new: not in the baseline \(file)"
        case .suppressed, .baselined: return nil
        }
    }

    private func renderTypes(_ report: AuditReport) -> [String] {
        var lines: [String] = []
        for type in report.types where type.fails {
            lines.append("")
            lines.append(contentsOf: exceededBlock(type, baseline: report.baseline))
        }
        let within = report.types.filter { !$0.exceeded }
        if !within.isEmpty {
            lines.append("")
            lines.append("within budget:")
            for type in within {
                lines.append(
                    "  ok \(Self.escaped(type.name)): \(budget(type)), peak \(type.peakLive), alive at exit \(type.liveAtExit)")
            }
        }
        lines.append("")
        return lines
    }

    private func renderTests(_ tests: [AuditReport.TestReport], _ report: AuditReport) -> [String] {
        let leaking = tests.filter { !$0.leaked.isEmpty }
        // The tests that ran, not the suites or names seen only on allocations.
        let ran = report.target.testsRun ?? tests.filter(\.ran).count
        var lines = ["tests: \(leaking.count) of \(Self.counted(ran, "test")) left instances alive after they finished"]
        // Suppressed and baselined leaks have their own lines below.
        for test in leaking {
            let failing = test.leaked.filter(\.status.fails)
            guard !failing.isEmpty else { continue }
            let summary = failing.map { "\($0.count) \(Self.escaped($0.type))" }.joined(separator: ", ")
            lines.append("  LEAKED \(Self.escaped(test.name)): \(summary)")
            for type in failing {
                if let comparison = Self.baselineComparison(type.status, report.baseline, unit: "") {
                    lines.append("    \(Self.escaped(type.type)): \(comparison)")
                }
                lines.append(contentsOf: renderGroups(Array(type.allocations.prefix(Self.censusStacksShown)), indent: "    "))
            }
        }
        let creators = tests.filter { !$0.globalState.isEmpty }
        if !creators.isEmpty {
            lines.append("global state (reported, not failing; --fail-on-global-state fails for it):")
            for test in creators {
                let summary = test.globalState.map { type in
                    let why =
                        switch type.globalStateReason {
                        case .oneTimeInitializer, nil: "a global or static's one-time initializer"
                        case .replacedByLaterTests: "replaced when later tests ran the same line"
                        }
                    return "\(type.count) \(Self.escaped(type.type)) (\(why))"
                }
                lines.append(
                    "  GLOBAL STATE first created by \(Self.escaped(test.name)): \(summary.joined(separator: ", "))")
            }
        }
        lines.append("")
        return lines
    }

    /// Kinds of process named on the `audited:` line; JSON lists every process.
    static let processGroupsShown = 4

    /// `1 test`, `2 tests`.
    static func counted(_ count: Int, _ noun: String) -> String {
        "\(count) \(noun)\(count == 1 ? "" : "s")"
    }

    /// The audited processes, when the run had more than the target itself or ran tests: `audited:
    /// swift-logPackageTests.xctest (XCTest, 0 tests), … --testing-library swift-testing (Swift
    /// Testing, 176 tests); 2 SwiftPM and build processes left out`.
    func processesLine(_ report: AuditReport) -> String? {
        let processes = report.target.processes
        guard report.target.skippedProcesses > 0 || processes.count > 1 || processes.contains(where: { $0.testingLibrary != nil })
        else { return nil }
        let described = processes.map { process -> String in
            let program = process.commandLine.first.map { String($0.split(separator: "/").last ?? Substring($0)) } ?? "?"
            let arguments = process.commandLine.dropFirst().filter { $0.hasPrefix("--testing-library") || $0 == "swift-testing" }
            var text = ([program] + arguments).joined(separator: " ")
            if let library = process.testingLibrary {
                let tests = process.testsRun.map { Self.counted($0, "test") } ?? "tests not counted"
                text += " (\(library.rawValue), \(tests))"
            }
            return Self.escaped(text)
        }
        // The same program started many times (a test suite running its examples) is one entry.
        var groups: [(text: String, count: Int)] = []
        for text in described {
            if let index = groups.firstIndex(where: { $0.text == text }) {
                groups[index].count += 1
            } else {
                groups.append((text, 1))
            }
        }
        let shown = groups.prefix(Self.processGroupsShown).map { $0.count > 1 ? "\($0.text) ×\($0.count)" : $0.text }
        let more = groups.dropFirst(Self.processGroupsShown).reduce(0) { $0 + $1.count }
        var line = "audited: " + (shown.isEmpty ? "no process" : shown.joined(separator: ", "))
        if more > 0 { line += " and \(more) more \(more == 1 ? "process" : "processes") (--format json lists them)" }
        if report.target.skippedProcesses > 0 {
            let skipped = report.target.skippedProcesses
            line += "; \(skipped) SwiftPM manifest or build \(skipped == 1 ? "process" : "processes") left out"
        }
        return line
    }

    /// A type's counts on one line, with `note` after its surplus.
    private func findingLine(_ label: String, type: AuditReport.TrackedType, note: String = "") -> String {
        "\(label) \(Self.escaped(type.name)): \(budget(type)), peak \(type.peakLive), alive at exit \(type.liveAtExit) "
            + "(\(type.overBudget) over budget\(note))"
    }

    /// A test's leak of one type on one line, with `note` in parentheses.
    private func findingLine(
        _ label: String, test: String, leaked: AuditReport.TestReport.LeakedType, note: String = ""
    ) -> String {
        "\(label) \(Self.escaped(test)): \(leaked.count) \(Self.escaped(leaked.type)) alive after the test"
            + (note.isEmpty ? "" : " (\(note.dropFirst(2)))")
    }

    /// `by type:App.Legacy* (.leak-audit.json): the reason`.
    func suppressionLine(_ suppression: Suppression) -> String {
        let reason = suppression.reason.map { ": \(Self.escaped($0))" } ?? ""
        return "by \(Self.escaped(suppression.rule)) (\(Self.escaped(suppression.origin)))\(reason)"
    }

    /// Findings a suppression matched: one line each and the rule, no stacks (JSON has them).
    private func renderSuppressed(_ report: AuditReport) -> [String] {
        var lines: [String] = []
        for type in report.exceededTypes {
            guard let suppression = type.status.suppression else { continue }
            lines += [findingLine("  SUPPRESSED", type: type), "    " + suppressionLine(suppression)]
        }
        for (test, leaked) in report.testLeaks {
            guard let suppression = leaked.status.suppression else { continue }
            lines += [findingLine("  SUPPRESSED", test: test, leaked: leaked), "    " + suppressionLine(suppression)]
        }
        guard !lines.isEmpty else { return [] }
        return ["suppressed (reported, not failing; --format json lists their stacks):"] + lines + [""]
    }

    /// `, the baseline records 2`, and a hint when the finding shrank.
    private func recordedNote(_ recorded: Int, now: Int) -> String {
        let ratchet = now < recorded ? ": fewer now, write the baseline again to keep it so" : ""
        return ", the baseline records \(recorded)\(ratchet)"
    }

    /// Findings within the baseline: one line each, no stacks.
    private func renderBaselined(_ report: AuditReport) -> [String] {
        guard let baseline = report.baseline else { return [] }
        var lines: [String] = []
        for type in report.exceededTypes {
            guard case .baselined(let recorded) = type.status else { continue }
            lines.append(findingLine("  BASELINED", type: type, note: recordedNote(recorded, now: type.overBudget)))
        }
        for (test, leaked) in report.testLeaks {
            guard case .baselined(let recorded) = leaked.status else { continue }
            lines.append(
                findingLine("  BASELINED", test: test, leaked: leaked, note: recordedNote(recorded, now: leaked.count)))
        }
        guard !lines.isEmpty else { return [] }
        return ["baselined (in the baseline '\(Self.escaped(baseline.path))', not failing; --format json lists their stacks):"]
            + lines + [""]
    }

    /// Baseline entries that no finding matched: leaks that were fixed.
    private func renderGone(_ report: AuditReport) -> [String] {
        guard let baseline = report.baseline, !baseline.gone.isEmpty else { return [] }
        var lines = [
            "gone from the baseline '\(Self.escaped(baseline.path))' (fixed; write it again with --write-baseline so they stay fixed):"
        ]
        for entry in baseline.gone {
            switch entry.key {
            case .type(let type):
                lines.append("  GONE \(Self.escaped(type)) (the baseline records \(entry.count) over budget)")
            case .test(let test, let type):
                lines.append("  GONE \(Self.escaped(test)): \(Self.escaped(type)) (the baseline records \(entry.count))")
            }
        }
        return lines + [""]
    }

    /// Stacks shown per census entry in text; JSON has them all.
    static let censusStacksShown = 3

    func renderCensus(_ census: AuditReport.Census) -> [String] {
        let instances = census.entries.reduce(0) { $0 + $1.liveAtExit }
        var heading = "census: \(instances) instances of \(census.entries.count) types alive at exit"
        var folded: [String] = []
        if census.foldedTypes > 0 {
            folded.append("\(census.foldedInstances) instances of \(census.foldedTypes) runtime and Foundation types")
        }
        if census.foldedTestCaseInstances > 0 {
            folded.append(
                "\(Self.counted(census.foldedTestCaseInstances, "test case object")) that XCTest keeps until the run ends")
        }
        if !folded.isEmpty { heading += " (" + folded.joined(separator: "; ") + " folded; --census-all shows them)" }
        var lines = [heading]
        for entry in census.entries {
            lines.append("  \(entry.liveAtExit) \(Self.escaped(entry.name))")
            lines.append(contentsOf: renderGroups(Array(entry.allocations.prefix(Self.censusStacksShown)), indent: "    "))
            if entry.allocations.count > Self.censusStacksShown {
                lines.append("    … \(entry.allocations.count - Self.censusStacksShown) more stacks (--format json lists them)")
            }
        }
        lines.append("")
        return lines
    }

    /// The last line of the report: the verdict and how the target ended.
    func summary(_ report: AuditReport) -> String {
        "leak-audit: " + summarySentence(report)
    }

    /// The verdict and how the target ended, without the `leak-audit: ` prefix.
    func summarySentence(_ report: AuditReport) -> String {
        let processes = report.target.attachedProcesses > 1 ? " (\(report.target.attachedProcesses) processes attached)" : ""
        let outcome = "'\(Self.escaped(report.target.path))'\(processes) \(report.target.outcome.phrase)"
        let statuses = report.findingStatuses
        let suppressed = statuses.filter { $0.suppression != nil }.count
        let baselined = statuses.filter { if case .baselined = $0 { true } else { false } }.count
        let gone = report.baseline?.gone.count ?? 0
        let notFailing = [(suppressed, "suppressed"), (baselined, "baselined"), (gone, "gone from the baseline")]
            .filter { $0.0 > 0 }.map { "\($0.0) \($0.1)" }.joined(separator: ", ")
        // "No type over budget" would not be true with suppressed or baselined ones.
        let nothing = suppressed + baselined > 0 ? "nothing failing" : "no type over budget"
        let tracked = "\(report.types.count) tracked" + (notFailing.isEmpty ? "" : "; \(notFailing)")
        // What was exercised: the tests that ran under audit and the objects watched.
        var exercised: [String] = []
        if let testsRun = report.target.testsRun { exercised.append("\(Self.counted(testsRun, "test")) ran") }
        if report.watchedInstances > 0 {
            exercised.append("\(Self.counted(report.watchedInstances, "object")) watched")
        }
        let watched = exercised.isEmpty ? "" : "; " + exercised.joined(separator: ", ")
        switch report.verdict {
        case .clean:
            return "\(nothing) (\(tracked))\(watched); \(outcome)"
        case .budgetExceeded:
            let leakingTests = report.tests?.filter { $0.leaked.contains(where: \.status.fails) }.count ?? 0
            let tests = leakingTests > 0 ? ", \(leakingTests) tests left instances alive" : ""
            let others = notFailing.isEmpty ? "" : " (\(notFailing))"
            return "\(report.failingTypes.count) of \(report.types.count) tracked types over budget\(tests)\(others); \(outcome)"
        case .targetFailed:
            return "\(nothing) (\(tracked))\(watched), but \(outcome)"
        case .notAudited:
            return "not audited; \(outcome)"
        }
    }

    /// The frames worth reading: thunks without a line dropped, nothing below the entry point, and
    /// nothing after the last frame with a source line (the runtime, Dispatch or XCTest calling in).
    func readableFrames(_ frames: [SymbolizedFrame]) -> [SymbolizedFrame] {
        var result: [SymbolizedFrame] = []
        for frame in frames {
            if frame.file != nil && (frame.line ?? 0) == 0 { continue }
            result.append(frame)
            let function = frame.function ?? ""
            if function == "main" || (function.hasSuffix("_main") && !function.contains(" ")) { break }
        }
        guard let lastWithLine = result.lastIndex(where: { ($0.line ?? 0) > 0 }) else { return result }
        return Array(result[...lastWithLine])
    }

    /// `function at file:line`, or what is known of the frame.
    func describe(_ frame: SymbolizedFrame) -> String {
        var text = Self.escaped(frame.function.map(Self.withoutReturnType) ?? "??")
        if let file = frame.file {
            let prefix = workingDirectory.hasSuffix("/") ? workingDirectory : workingDirectory + "/"
            let shown = file.hasPrefix(prefix) ? String(file.dropFirst(prefix.count)) : file
            text += " at \(Self.escaped(shown))"
            if let line = frame.line { text += ":\(line)" }
        } else if let module = frame.module {
            let offset = frame.moduleOffset.map { "+0x" + String($0, radix: 16) } ?? ""
            text += " in \(Self.escaped(module))\(offset)"
        } else {
            text += " at 0x" + String(frame.address, radix: 16)
        }
        if frame.inlined { text += " [inlined]" }
        return text
    }

    /// `A.f(x: Swift.Int) -> Swift.String` without ` -> Swift.String`: only the last arrow at
    /// nesting depth 0 starts the function's return type, so arrows inside parameter lists
    /// (closure parameters) and the signatures of closures and thunks (`closure #1 () -> () in
    /// A.f() -> ()`) are kept up to their enclosing function.
    static func withoutReturnType(_ function: String) -> String {
        var depth = 0
        var lastTopLevelArrow: String.Index?
        var index = function.startIndex
        while index < function.endIndex {
            if function[index...].hasPrefix(" -> ") {
                if depth == 0 { lastTopLevelArrow = index }
                index = function.index(index, offsetBy: 4)
                continue
            }
            switch function[index] {
            case "(", "<", "[": depth += 1
            case ")", ">", "]": depth = max(0, depth - 1)
            default: break
            }
            index = function.index(after: index)
        }
        guard let arrow = lastTopLevelArrow else { return function }
        // The arrow must follow the parameter list of the outermost function, not a closure's
        // signature earlier in the name: `closure #1 () -> () in main.f()` has no return type.
        let tail = function[arrow...]
        if tail.contains(" in ") { return function }
        return String(function[..<arrow])
    }

    /// Makes a string from the target safe for a terminal: control characters become escapes.
    static func escaped(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F || (0x80...0x9F).contains(scalar.value) {
                result += "\\u{" + String(scalar.value, radix: 16) + "}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
