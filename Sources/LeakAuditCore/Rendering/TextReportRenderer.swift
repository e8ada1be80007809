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
    /// The widest a line may be (a terminal's columns; 80 for a log or a file); nil for no limit.
    /// Longer lines are shortened in the middle of their paths and names.
    public var width: Int?
    /// Show every allocation site and every frame, unfolded (`--verbose`).
    public var verbose: Bool

    /// Creates the renderer; `workingDirectory` defaults to the process's.
    public init(workingDirectory: String? = nil, width: Int? = nil, verbose: Bool = false) {
        self.workingDirectory = workingDirectory ?? FileManager.default.currentDirectoryPath
        self.width = width
        self.verbose = verbose
    }

    /// Source frames shown per allocation site, from the line that constructed the instances out.
    static let sourceFramesShown = 5
    /// Allocation sites shown per type or test.
    static let sitesShown = 3

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
        if let processes = processesLine(report) { lines.append(contentsOf: wrapped(processes)) }
        for warning in report.warnings { lines.append(contentsOf: wrapped("warning: \(warning)")) }
        // Slots reserved by a writer that then found leak-audit gone stay empty too: with drops, the
        // torn count is not evidence of a crash.
        if report.tornRecords > 0 && report.droppedRecords == 0 {
            let records = counted(report.tornRecords, "record")
            lines.append(
                "note: \(records) \(report.tornRecords == 1 ? "was" : "were") cut short when the target ended; everything else was received"
            )
        }
        lines.append(contentsOf: wrapped(summary(report)))
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

    /// The allocation sites of `typeName`'s instances, most first: the first few unless verbose,
    /// each as the frames that matter (ReadableStack), fitted to the width.
    func renderGroups(_ groups: [AuditReport.AllocationGroup], indent: String, typeName: String) -> [String] {
        var lines: [String] = []
        let shown = verbose ? groups : Array(groups.prefix(Self.sitesShown))
        for group in shown {
            let test = group.test.map { " in \(Self.escaped($0))" } ?? ""
            lines.append(fitted("\(indent)\(group.count) × allocated\(test) at"))
            if group.frames.isEmpty { lines.append("\(indent)    (no stack recorded)") }
            let entries = ReadableStack.entries(group.frames, typeName: typeName, limit: verbose ? nil : Self.sourceFramesShown)
            for entry in entries {
                switch entry {
                case .frame(let frame, let times):
                    lines.append(contentsOf: self.lines("\(indent)    ", frame, suffix: times > 1 ? " × \(times)" : ""))
                case .cycle(let length, let times):
                    lines.append("\(indent)    … the \(length) frames above, \(times) times over (recursion)")
                case .folded(let count, let modules):
                    // As many module names as fit.
                    let head = "\(indent)    … \(counted(count, "frame")) in "
                    var names = modules.map(Self.escaped)
                    var text = head + names.joined(separator: ", ")
                    while let width, !verbose, text.count > width, names.count > 1 {
                        names.removeLast()
                        text = head + names.joined(separator: ", ") + ", …"
                    }
                    lines.append(fitted(text))
                case .more(let count):
                    lines.append("\(indent)    … \(counted(count, "more frame")) (--verbose or --format json shows them)")
                }
            }
            if group.truncated { lines.append("\(indent)    … (deeper frames not recorded)") }
        }
        let hidden = groups.count - shown.count
        if hidden > 0 {
            lines.append(
                "\(indent)… and \(counted(hidden, "more allocation site")) (--verbose shows them here, --format json lists them all)"
            )
        }
        return lines
    }

    /// `prefix` and a frame, `function at path:line`, shortened in the middle of the path (keeping
    /// the file name) and then of the function name until the line fits the width.
    private func lines(_ prefix: String, _ frame: SymbolizedFrame, suffix: String) -> [String] {
        let function = Self.escaped(
            verbose ? (frame.function ?? "??") : (frame.function.map(ReadableStack.readableFunction) ?? "??"))
        let inlined = frame.inlined ? " [inlined]" : ""
        var place = place(of: frame)
        let full = prefix + function + place.joiner + place.text + inlined + suffix
        guard let width, !verbose, full.count > width else { return [full] }
        // One line if shortening the path (down to its file name) is enough; else the place goes on
        // a line of its own, and each part gives way in its middle only if it alone is too wide.
        let fixed = prefix.count + function.count + place.joiner.count + inlined.count + suffix.count
        if place.isPath {
            let short = Self.elidedPath(place.text, to: width - fixed)
            if fixed + short.count <= width { return [prefix + function + place.joiner + short + inlined + suffix] }
        }
        let first = prefix + Self.elided(function, to: Swift.max(width - prefix.count - suffix.count, 24), keepingEnd: 16)
        let placePrefix = prefix + "  " + place.joiner.dropFirst()
        if place.isPath { place.text = Self.elidedPath(place.text, to: width - placePrefix.count - inlined.count) }
        return [first + suffix, placePrefix + place.text + inlined]
    }

    /// Where a frame is: ` at ` and its path:line (relative to the working directory), ` in ` and
    /// its module+0xoffset, or ` at ` and its address.
    private func place(of frame: SymbolizedFrame) -> (joiner: String, text: String, isPath: Bool) {
        if let file = frame.file {
            let path = Self.escaped(relativePath(file, under: workingDirectory))
            return (" at ", path + (frame.line.map { ":\($0)" } ?? ""), true)
        } else if let module = frame.module {
            let offset = frame.moduleOffset.map { "+0x" + String($0, radix: 16) } ?? ""
            return (" in ", Self.escaped(module) + offset, true)
        }
        return (" at ", "0x" + String(frame.address, radix: 16), false)
    }

    /// `path` at most `length` characters long: its first directory, `…`, and as many of its last
    /// components as fit (always the file name).
    static func elidedPath(_ path: String, to length: Int) -> String {
        guard path.count > length else { return path }
        let components = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard components.count > 2 else { return elided(path, to: length, keepingEnd: length / 2) }
        let head = components[0] + "/…"
        var tail = components[components.count - 1]
        // Never shorter than the file name and line: where the frame is matters most.
        guard head.count + 1 + tail.count <= length else { return "…/" + tail }
        for component in components.dropFirst().dropLast().reversed() {
            let candidate = component + "/" + tail
            guard head.count + 1 + candidate.count <= length else { break }
            tail = candidate
        }
        return head + "/" + tail
    }

    /// Prose (a warning, the verdict) broken between words to the width, continued two spaces in.
    func wrapped(_ text: String) -> [String] {
        guard let width, !verbose, text.count > width else { return [text] }
        let indent = String(text.prefix { $0 == " " })
        var lines: [String] = []
        var current = indent
        for word in text.dropFirst(indent.count).split(separator: " ") {
            let candidate = current.count == indent.count ? current + word : current + " " + word
            if candidate.count > width && current.count > indent.count {
                lines.append(current)
                current = indent + "  " + word
            } else {
                current = candidate
            }
        }
        lines.append(current)
        return lines.map(fitted)
    }

    /// `text` cut to the width in its middle.
    private func fitted(_ text: String) -> String {
        guard let width, !verbose else { return text }
        return Self.elided(text, to: width, keepingEnd: width / 3)
    }

    /// `text` at most `length` characters long: its start, `…`, and its last `keepingEnd` characters.
    static func elided(_ text: String, to length: Int, keepingEnd: Int) -> String {
        guard text.count > length, length > 1 else { return text }
        let end = Swift.min(keepingEnd, length - 1)
        return String(text.prefix(length - 1 - end)) + "…" + String(text.suffix(end))
    }

    /// An exceeded type's block: its counts, how it compares with the baseline when there is one,
    /// then its allocation stacks.
    func exceededBlock(_ type: AuditReport.TrackedType, baseline: AuditReport.BaselineComparison? = nil) -> [String] {
        let surplus = type.peakLive.subtractingReportingOverflow(type.max).partialValue
        // Too wide for one line: the counts go on the next; only a name wider than a line gives way.
        let counts = "\(budget(type)), peak \(type.peakLive), alive at exit \(type.liveAtExit)"
        var headline = ["EXCEEDED \(Self.escaped(type.name)): \(counts)"]
        if let width, !verbose, headline[0].count > width {
            headline = [fitted("EXCEEDED \(Self.escaped(type.name)):"), fitted("  " + counts)]
        }
        var lines = headline + ["  \(type.peakLive) alive at the peak (\(surplus) over budget), allocated at:"]
        if let comparison = Self.baselineComparison(type.status, baseline, unit: " over budget") {
            lines.insert(contentsOf: wrapped("  " + comparison), at: headline.count)
        }
        return lines + renderGroups(type.allocations, indent: "  ", typeName: type.name)
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
                    contentsOf: wrapped(
                        "  ok \(Self.escaped(type.name)): \(budget(type)), peak \(type.peakLive), alive at exit \(type.liveAtExit)"
                    ))
            }
        }
        lines.append("")
        return lines
    }

    private func renderTests(_ tests: [AuditReport.TestReport], _ report: AuditReport) -> [String] {
        let leaking = tests.filter { !$0.leaked.isEmpty }
        // The tests that ran, not the suites or names seen only on allocations.
        let ran = report.target.testsRun ?? tests.filter(\.ran).count
        var lines = ["tests: \(leaking.count) of \(counted(ran, "test")) left instances alive after they finished"]
        // Suppressed and baselined leaks have their own lines below.
        for test in leaking {
            let failing = test.leaked.filter(\.status.fails)
            guard !failing.isEmpty else { continue }
            let summary = failing.map { "\($0.count) \(Self.escaped($0.type))" }.joined(separator: ", ")
            lines.append(contentsOf: wrapped("  LEAKED \(Self.escaped(test.name)): \(summary)"))
            for type in failing {
                if let comparison = Self.baselineComparison(type.status, report.baseline, unit: "") {
                    lines.append("    \(Self.escaped(type.type)): \(comparison)")
                }
                lines.append(contentsOf: renderGroups(type.allocations, indent: "    ", typeName: type.type))
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
                    contentsOf: wrapped(
                        "  GLOBAL STATE first created by \(Self.escaped(test.name)): \(summary.joined(separator: ", "))"))
            }
        }
        lines.append("")
        return lines
    }

    /// Kinds of process named on the `audited:` line; JSON lists every process.
    static let processGroupsShown = 4

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
                let tests = process.testsRun.map { counted($0, "test") } ?? "tests not counted"
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
        if more > 0 { line += " and \(counted(more, "more process", plural: "more processes")) (--format json lists them)" }
        if report.target.skippedProcesses > 0 {
            let skipped = counted(
                report.target.skippedProcesses, "SwiftPM manifest or build process", plural: "SwiftPM manifest or build processes"
            )
            line += "; \(skipped) left out"
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

    func renderCensus(_ census: AuditReport.Census) -> [String] {
        let instances = census.entries.reduce(0) { $0 + $1.liveAtExit }
        var heading = "census: \(counted(instances, "instance")) of \(counted(census.entries.count, "type")) alive at exit"
        var folded: [String] = []
        if census.foldedTypes > 0 {
            folded.append(
                "\(counted(census.foldedInstances, "instance")) of \(counted(census.foldedTypes, "runtime and Foundation type"))")
        }
        if census.foldedTestCaseInstances > 0 {
            folded.append(
                "\(counted(census.foldedTestCaseInstances, "test case object")) that XCTest keeps until the run ends")
        }
        if !folded.isEmpty { heading += " (" + folded.joined(separator: "; ") + " folded; --census-all shows them)" }
        var lines = wrapped(heading)
        for entry in census.entries {
            lines.append("  \(entry.liveAtExit) \(Self.escaped(entry.name))")
            lines.append(contentsOf: renderGroups(entry.allocations, indent: "    ", typeName: entry.name))
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
        let processes =
            report.target.attachedProcesses > 1
            ? " (\(counted(report.target.attachedProcesses, "process", plural: "processes")) attached)" : ""
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
        if let testsRun = report.target.testsRun { exercised.append("\(counted(testsRun, "test")) ran") }
        if report.watchedInstances > 0 {
            exercised.append("\(counted(report.watchedInstances, "object")) watched")
        }
        let watched = exercised.isEmpty ? "" : "; " + exercised.joined(separator: ", ")
        switch report.verdict {
        case .clean:
            return "\(nothing) (\(tracked))\(watched); \(outcome)"
        case .budgetExceeded:
            let leakingTests = report.tests?.filter { $0.leaked.contains(where: \.status.fails) }.count ?? 0
            let tests = leakingTests > 0 ? ", \(counted(leakingTests, "test")) left instances alive" : ""
            let others = notFailing.isEmpty ? "" : " (\(notFailing))"
            return
                "\(report.failingTypes.count) of \(counted(report.types.count, "tracked type")) over budget\(tests)\(others); \(outcome)"
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
            if ReadableStack.isEntryPoint(frame) { break }
        }
        guard let lastWithLine = result.lastIndex(where: { ($0.line ?? 0) > 0 }) else { return result }
        return Array(result[...lastWithLine])
    }

    /// `function at file:line`, or what is known of the frame.
    func describe(_ frame: SymbolizedFrame) -> String {
        let place = place(of: frame)
        return Self.escaped(frame.function.map(Self.withoutReturnType) ?? "??") + place.joiner + place.text
            + (frame.inlined ? " [inlined]" : "")
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
