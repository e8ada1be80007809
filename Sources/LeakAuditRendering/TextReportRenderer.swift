import LeakAuditModel
import LeakAuditPresentation

/// The report for people: one block per failing type over budget with its allocation stacks as
/// `function at file:line`, then one line per type within budget, the census and the tests, then
/// one line per suppressed and per baselined finding and per baseline entry that is gone, then the
/// verdict. Its blocks and sentences are the report's phrases (ReportPhrases), laid out as sections.
public struct TextReportRenderer: ReportRenderer {
    /// How its parts are put into words: the working directory paths are shown relative to, the
    /// width lines are fitted to (nil for no limit), and whether every site and frame is shown.
    public var phrases: ReportPhrases

    /// Creates the renderer; `workingDirectory` defaults to the process's. Lines are fitted to
    /// `width` (a terminal's columns; 80 for a log or a file) unless `verbose` shows everything.
    /// `colored` marks the verdict, labels, names and frames with ANSI colours (`TextEmphasis`),
    /// for a terminal; whether the destination is one is the caller's to decide.
    public init(workingDirectory: String? = nil, width: Int? = nil, verbose: Bool = false, colored: Bool = false) {
        phrases = ReportPhrases(workingDirectory: workingDirectory, width: width, verbose: verbose, colored: colored)
    }

    /// Renders the report as text: plain unless the renderer is colored, so that it reads the same
    /// in a CI log and in a file.
    public func render(_ report: AuditReport) -> String {
        var lines: [String] = []
        if let explanation = phrases.notAuditedExplanation(report) {
            lines.append(contentsOf: explanation)
        } else {
            if let inspected = ReportPhrases.inspectionHeadline(report) {
                lines += ["", phrases.emphasized("inspected", as: .heading) + inspected.dropFirst("inspected".count)]
            }
            lines.append(contentsOf: renderTypes(report))
            if let census = report.census {
                lines.append(contentsOf: phrases.censusBlock(census, inspected: report.target.kind == .inspectedProcess))
            }
            if let largest = report.largestRetained { lines.append(contentsOf: phrases.largestRetainedBlock(largest)) }
            if let unreachable = report.unreachable {
                lines.append(contentsOf: phrases.unreachableBlock(unreachable, baseline: report.baseline))
            }
            if let tests = report.tests { lines.append(contentsOf: renderTests(tests, report)) }
            lines.append(contentsOf: renderSuppressed(report))
            lines.append(contentsOf: renderBaselined(report))
            lines.append(contentsOf: renderGone(report))
        }
        if let processes = processesLine(report) {
            lines.append(contentsOf: headed(phrases.wrapped(processes), "audited:", as: .heading))
        }
        // Warnings quote paths and names from the target.
        for warning in report.warnings {
            lines.append(
                contentsOf: headed(phrases.wrapped("warning: \(ReportPhrases.escaped(warning))"), "warning:", as: .caution))
        }
        // Slots reserved by a writer that then found leak-audit gone stay empty too: with drops, the
        // torn count is not evidence of a crash.
        if report.tornRecords > 0 && !report.isIncomplete {
            let records = counted(report.tornRecords, "record")
            lines.append(
                "note: \(records) \(report.tornRecords == 1 ? "was" : "were") cut short when the target ended; everything else was received"
            )
        }
        lines.append(contentsOf: phrases.wrapped(summary(report)).map { phrases.emphasized($0, as: verdictEmphasis(report)) })
        return lines.flatMap(fittedToWidth).joined(separator: "\n") + "\n"
    }

    /// A line wider than the width, broken as prose is (`ReportPhrases.wrapped`): every line of a
    /// report fits a log's 80 columns, whatever the names in it. Colour escapes take no columns; a
    /// colored line too wide is broken without its colours.
    private func fittedToWidth(_ line: String) -> [String] {
        guard let width = phrases.width, !phrases.verbose, line.count > width else { return [line] }
        let plain = line.contains("\u{1B}") ? line.replacing(#/\x{1B}\[[0-9;]*m/#, with: "") : line
        return plain.count > width ? phrases.wrapped(plain) : [line]
    }

    /// How the verdict is marked: a failing finding in red, a clean run in green, any other run
    /// that is not clean in yellow.
    private func verdictEmphasis(_ report: AuditReport) -> TextEmphasis {
        switch report.verdict {
        case .clean: .success
        case .budgetExceeded, .testsLeaked, .unreachableObjects: .failure
        case .incomplete, .targetFailed, .notAudited: .caution
        }
    }

    /// `lines` with `label`, which the first starts with, marked as `emphasis`.
    private func headed(_ lines: [String], _ label: String, as emphasis: TextEmphasis) -> [String] {
        guard phrases.colored, let first = lines.first, first.hasPrefix(label) else { return lines }
        return [phrases.emphasized(label, as: emphasis) + first.dropFirst(label.count)] + lines.dropFirst()
    }

    private func renderTypes(_ report: AuditReport) -> [String] {
        var lines: [String] = []
        for type in report.types where type.fails {
            lines.append("")
            lines.append(contentsOf: phrases.exceededBlock(type, baseline: report.baseline))
        }
        let within = report.types.filter { !$0.exceeded }
        if !within.isEmpty {
            lines.append("")
            lines.append(phrases.emphasized("within budget:", as: .heading))
            for type in within {
                let name = ReportPhrases.escaped(type.name)
                var entry = phrases.wrapped(
                    "  ok \(name): \(phrases.budget(type)), peak \(type.peakLive), alive at exit \(type.liveAtExit)")
                entry[0] = phrases.emphasizedHeadline(entry[0], label: "ok", as: .success, name: name)
                lines.append(contentsOf: entry)
            }
        }
        lines.append("")
        return lines
    }

    private func renderTests(_ tests: [AuditReport.TestReport], _ report: AuditReport) -> [String] {
        let leaking = tests.filter { !$0.leaked.isEmpty }
        // The tests that ran, not the suites or names seen only on allocations.
        let ran = report.target.testsRun ?? tests.filter(\.ran).count
        var lines = [
            phrases.emphasized("tests:", as: .heading)
                + " \(leaking.count) of \(counted(ran, "test")) left instances alive after they finished"
        ]
        // Suppressed and baselined leaks have their own lines below. Tests that left the same
        // thing (the same types and counts, made by the same lines, held the same way) are one
        // entry, shown with the first test's stacks; the entries that most tests share first.
        let groups = Self.sameLeaks(leaking)
        // A suite where hundreds of tests leak stays readable: the first entries in full, then the
        // rest by the types they left.
        let detailed = phrases.verbose || phrases.width == nil ? groups : Array(groups.prefix(Self.detailedGroups))
        for group in detailed {
            let test = group[0]
            let failing = test.leaked.filter(\.status.fails)
            let summary = failing.map { "\($0.count) \(ReportPhrases.escaped($0.type))" }.joined(separator: ", ")
            let name = ReportPhrases.escaped(test.name)
            if group.count == 1 {
                var entry = phrases.wrapped("  LEAKED \(name): \(summary)")
                entry[0] = phrases.emphasizedHeadline(entry[0], label: "LEAKED", as: .failure, name: name)
                lines.append(contentsOf: entry)
            } else {
                let label = "LEAKED by \(group.count) tests"
                var entry = phrases.wrapped("  \(label): each left \(summary)")
                entry[0] = phrases.emphasizedHeadline(entry[0], label: "LEAKED", as: .failure, name: "by \(group.count) tests")
                lines.append(contentsOf: entry)
                let shown = phrases.verbose ? group : Array(group.prefix(Self.testsShownPerGroup))
                let more = group.count - shown.count
                lines += phrases.wrapped(
                    "    tests: " + shown.map { ReportPhrases.escaped($0.name) }.joined(separator: ", ")
                        + (more > 0 ? " and \(more) more (--verbose or --format json lists them)" : ""))
            }
            for type in failing {
                if let comparison = ReportPhrases.baselineComparison(type.status, report.baseline, unit: "") {
                    lines.append("    \(ReportPhrases.escaped(type.type)): \(comparison)")
                }
                lines.append(contentsOf: phrases.allocationSites(type.allocations, indent: "    ", typeName: type.type))
                if let retainers = type.retainers {
                    lines.append(
                        contentsOf: phrases.retainerLines(retainers, unavailable: type.retainersUnavailable, indent: "    "))
                }
            }
        }
        lines += briefLeakLines(Array(groups.dropFirst(detailed.count)))
        let creators = tests.filter { $0.globalState.contains { $0.globalStateReason != .releasedLater } }
        if !creators.isEmpty {
            lines += headed(
                phrases.wrapped("global state (reported, not failing; --fail-on-global-state fails for it):"), "global state",
                as: .heading)
            for test in creators {
                let summary = test.globalState.filter { $0.globalStateReason != .releasedLater }.map { type in
                    let why =
                        switch type.globalStateReason {
                        case .oneTimeInitializer, nil: "a global or static's one-time initializer"
                        case .replacedByLaterTests: "replaced when later tests ran the same line"
                        case .releasedWithGlobalState: "released with the test's global state"
                        case .madeByItsGlobalHolder: "made and kept by the global that holds it"
                        case .heldByThreadStorage: "kept in a thread's own storage"
                        case .releasedLater: "released later in the run"
                        }
                    return "\(type.count) \(ReportPhrases.escaped(type.type)) (\(why))"
                }
                let name = ReportPhrases.escaped(test.name)
                var entry = phrases.wrapped("  GLOBAL STATE first created by \(name): \(summary.joined(separator: ", "))")
                entry[0] = phrases.emphasizedHeadline(entry[0], label: "GLOBAL STATE first created by", as: .caution, name: name)
                lines.append(contentsOf: entry)
                for type in test.globalState where type.globalStateReason != .releasedLater {
                    guard let retainers = type.retainers, !retainers.isEmpty else { continue }
                    lines.append(contentsOf: phrases.retainerLines(retainers, unavailable: [], indent: "    "))
                }
            }
        }
        lines += releasedLaterLines(tests)
        lines += keptByTestCaseLines(tests)
        lines.append("")
        return lines
    }

    /// What tests left alive that the run released later, while tests still ran: per test, the
    /// types and how long after the test finished, with their paths; then the grace period that
    /// would wait for the slowest.
    private func releasedLaterLines(_ tests: [AuditReport.TestReport]) -> [String] {
        let released = tests.compactMap { test -> (String, [AuditReport.TestReport.LeakedType])? in
            let types = test.globalState.filter { $0.globalStateReason == .releasedLater }
            return types.isEmpty ? nil : (test.name, types)
        }
        guard !released.isEmpty else { return [] }
        var lines = headed(
            phrases.wrapped("released later in the run (reported, not failing; --fail-on-global-state fails for it):"),
            "released later in the run", as: .heading)
        var longest = 0
        for (test, types) in released {
            let summary = types.map { type in
                let after = type.releasedAfterMilliseconds.map { " (\($0) ms after the test finished)" } ?? ""
                longest = Swift.max(longest, type.releasedAfterMilliseconds ?? 0)
                return "\(type.count) \(ReportPhrases.escaped(type.type))\(after)"
            }
            let name = ReportPhrases.escaped(test)
            var entry = phrases.wrapped("  RELEASED LATER, left by \(name): \(summary.joined(separator: ", "))")
            entry[0] = phrases.emphasizedHeadline(entry[0], label: "RELEASED LATER, left by", as: .caution, name: name)
            lines.append(contentsOf: entry)
            for type in types {
                guard let retainers = type.retainers, !retainers.isEmpty else { continue }
                lines.append(contentsOf: phrases.retainerLines(retainers, unavailable: [], indent: "    "))
            }
        }
        // Rounded up to the next 100 ms: the records' times are the reader's, a few ms late.
        let grace = (longest / 100 + 1) * 100
        lines += phrases.wrapped(
            "  Work each test left in flight (a timer, an event loop's task) released these after its grace period, while later tests ran: --grace-period \(grace) waits for them."
        )
        return lines
    }

    /// What only test case objects hold, one entry per property however many tests set it: the
    /// property, what it held in how many tests, the first tests, and what to do.
    private func keptByTestCaseLines(_ tests: [AuditReport.TestReport]) -> [String] {
        let properties = TestCaseProperty.grouped(tests)
        guard !properties.isEmpty else { return [] }
        var lines = headed(
            phrases.wrapped("kept by test case objects (reported, not failing; --fail-on-test-case-state fails for it):"),
            "kept by test case objects", as: .heading)
        lines += phrases.wrapped(
            "  XCTest keeps every test case object until the run ends, and what its properties hold with it: set each property below to nil in tearDown, or make it a local of the test."
        )
        for property in properties {
            let held = property.types.map { "\($0.count) \(ReportPhrases.escaped($0.type))" }.joined(separator: ", ")
            let name = "\(ReportPhrases.escaped(property.holder)).\(ReportPhrases.escaped(property.property))"
            let label = "KEPT BY \(name)"
            let shown = property.tests.prefix(Self.testsShownPerProperty).map(ReportPhrases.escaped)
            let more = property.tests.count - shown.count
            var entry = phrases.wrapped(
                "  \(label): \(held), in \(counted(property.tests.count, "test")): \(shown.joined(separator: ", "))"
                    + (more > 0 ? " and \(more) more" : ""))
            entry[0] = phrases.emphasizedHeadline(entry[0], label: "KEPT BY", as: .caution, name: name)
            lines += entry
        }
        return lines
    }

    /// Sets of types the brief part lists, the commonest first, before it only counts the rest.
    static let briefGroups = 40

    /// Entries of failing tests shown with their stacks and paths before the rest go in brief.
    static let detailedGroups = 5

    /// The failing tests past the detailed entries, grouped by the types they left (most tests
    /// first), each group's tests named.
    private func briefLeakLines(_ groups: [[AuditReport.TestReport]]) -> [String] {
        guard !groups.isEmpty else { return [] }
        var byTypes: [[String]: [String]] = [:]
        var order: [[String]] = []
        for test in groups.joined() {
            // Without module or generic arguments: a line per kind of leftover, not per instantiation.
            let types = Set(
                test.leaked.filter(\.status.fails).map { String(ReportPhrases.shortTypeName($0.type).prefix { $0 != "<" }) }
            ).sorted()
            if byTypes[types] == nil { order.append(types) }
            byTypes[types, default: []].append(test.name)
        }
        let total = groups.reduce(0) { $0 + $1.count }
        var lines = phrases.wrapped(
            "  … and \(counted(total, "more test")) that left instances alive, by the types they left (--verbose shows their stacks and paths here, --format json lists everything):"
        )
        let sorted = order.sorted(by: { (byTypes[$0]?.count ?? 0) > (byTypes[$1]?.count ?? 0) })
        for types in sorted.prefix(Self.briefGroups) {
            let names = byTypes[types] ?? []
            let shown = names.prefix(Self.testsShownPerGroup).map(ReportPhrases.escaped)
            lines += phrases.wrapped(
                "    \(names.count) left \(types.map(ReportPhrases.escaped).joined(separator: ", ")): "
                    + shown.joined(separator: ", ") + (names.count > shown.count ? " and \(names.count - shown.count) more" : ""))
        }
        let rest = sorted.dropFirst(Self.briefGroups)
        if !rest.isEmpty {
            let tests = rest.reduce(0) { $0 + (byTypes[$1]?.count ?? 0) }
            lines += phrases.wrapped(
                "    and \(counted(tests, "more test")) that left \(counted(rest.count, "other set")) of types (--verbose or --format json lists them)"
            )
        }
        return lines
    }

    /// Tests named per group of tests that leaked the same, unless verbose.
    static let testsShownPerGroup = 5

    /// The failing tests grouped by what they left: the same types and counts, constructed by the
    /// same lines, held the same way (the test's name aside); most tests first, then test order.
    static func sameLeaks(_ tests: [AuditReport.TestReport]) -> [[AuditReport.TestReport]] {
        struct Held: Hashable {
            var root: Retainer.Root
            var path: [String]
        }
        struct Leaked: Hashable {
            var type: String
            var count: Int
            var lines: [String?]
            var held: [Held]
        }
        var groups: [[Leaked]: [AuditReport.TestReport]] = [:]
        var order: [[Leaked]] = []
        for test in tests {
            let failing = test.leaked.filter(\.status.fails)
            guard !failing.isEmpty else { continue }
            let key = failing.map { leaked in
                Leaked(
                    type: leaked.type, count: leaked.count,
                    lines: leaked.allocations.map {
                        AuditReport.AllocationGroup.constructingSite(in: $0.frames, typeName: leaked.type)
                    },
                    held: (leaked.retainers ?? []).map { Held(root: $0.root, path: $0.path.map { $0.via + " " + $0.type }) })
            }
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(test)
        }
        return order.enumerated().sorted { left, right in
            let (leftCount, rightCount) = (groups[left.element]?.count ?? 0, groups[right.element]?.count ?? 0)
            return leftCount != rightCount ? leftCount > rightCount : left.offset < right.offset
        }.compactMap { groups[$0.element] }
    }

    /// Tests named per property of the `kept by test case objects` section; JSON lists them all.
    static let testsShownPerProperty = 3

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
                var tests =
                    process.startedByTestProcess.map { "started by process \($0), its tests counted there" }
                    ?? process.testsRun.map { counted($0, "test") } ?? "tests not counted"
                let skipped = process.startedByTestProcess == nil ? process.skippedTests?.count ?? 0 : 0
                if skipped > 0 { tests += ", \(skipped) skipped" }
                text += " (\(library.rawValue), \(tests))"
            }
            return ReportPhrases.escaped(text)
        }
        // The same program started many times (a test suite running its examples) is one entry.
        // Indexed by text: a report read from a file may list any number of processes.
        var groups: [(text: String, count: Int)] = []
        var groupIndex: [String: Int] = [:]
        for text in described {
            if let index = groupIndex[text] {
                groups[index].count += 1
            } else {
                groupIndex[text] = groups.count
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

    /// A type's counts on one line, after two spaces and `label` (a finding that does not fail),
    /// with `note` after its surplus.
    private func findingLine(_ label: String, type: AuditReport.TrackedType, note: String = "") -> String {
        let name = ReportPhrases.escaped(type.name)
        let line =
            "  \(label) \(name): \(phrases.budget(type)), peak \(type.peakLive), alive at exit \(type.liveAtExit) "
            + "(\(type.overBudget) over budget\(note))"
        return phrases.emphasizedHeadline(line, label: label, as: .exempt, name: name)
    }

    /// A test's leak of one type on one line, after two spaces and `label` (a finding that does
    /// not fail), with `note` in parentheses.
    private func findingLine(
        _ label: String, test: String, leaked: AuditReport.TestReport.LeakedType, note: String = ""
    ) -> String {
        let name = ReportPhrases.escaped(test)
        let line =
            "  \(label) \(name): \(leaked.count) \(ReportPhrases.escaped(leaked.type)) alive after the test"
            + (note.isEmpty ? "" : " (\(note.dropFirst(2)))")
        return phrases.emphasizedHeadline(line, label: label, as: .exempt, name: name)
    }

    /// A group of unreachable objects on one line, after two spaces and `label` (a finding that
    /// does not fail), with `note` in parentheses.
    private func findingLine(_ label: String, group: UnreachableObjects.Group, note: String = "") -> String {
        let line =
            "  \(label) unreachable \(ReportPhrases.unreachableHeadline(group))" + (note.isEmpty ? "" : " (\(note.dropFirst(2)))")
        return phrases.emphasizedHeadline(line, label: label, as: .exempt, name: "unreachable")
    }

    /// Findings a suppression matched: one line each and the rule, no stacks (JSON has them).
    private func renderSuppressed(_ report: AuditReport) -> [String] {
        var lines: [String] = []
        for type in report.exceededTypes {
            guard let suppression = type.status.suppression else { continue }
            lines += [findingLine("SUPPRESSED", type: type), "    " + phrases.suppressionLine(suppression)]
        }
        for (test, leaked) in report.testLeaks {
            guard let suppression = leaked.status.suppression else { continue }
            lines += [findingLine("SUPPRESSED", test: test, leaked: leaked), "    " + phrases.suppressionLine(suppression)]
        }
        for group in report.unreachableFindings {
            guard let suppression = group.status.suppression else { continue }
            lines += [findingLine("SUPPRESSED", group: group), "    " + phrases.suppressionLine(suppression)]
        }
        guard !lines.isEmpty else { return [] }
        return [phrases.emphasized("suppressed", as: .heading) + " (reported, not failing; --format json lists their stacks):"]
            + lines + [""]
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
            lines.append(findingLine("BASELINED", type: type, note: recordedNote(recorded, now: type.overBudget)))
        }
        for (test, leaked) in report.testLeaks {
            guard case .baselined(let recorded) = leaked.status else { continue }
            lines.append(
                findingLine("BASELINED", test: test, leaked: leaked, note: recordedNote(recorded, now: leaked.count)))
        }
        for group in report.unreachableFindings {
            guard case .baselined(let recorded) = group.status else { continue }
            lines.append(findingLine("BASELINED", group: group, note: recordedNote(recorded, now: group.count)))
        }
        guard !lines.isEmpty else { return [] }
        return [
            phrases.emphasized("baselined", as: .heading)
                + " (in the baseline '\(ReportPhrases.escaped(baseline.path))', not failing; --format json lists their stacks):"
        ]
            + lines + [""]
    }

    /// Baseline entries that no finding matched: leaks that were fixed.
    private func renderGone(_ report: AuditReport) -> [String] {
        guard let baseline = report.baseline, !baseline.gone.isEmpty else { return [] }
        var lines = [
            phrases.emphasized("gone from the baseline", as: .heading)
                + " '\(ReportPhrases.escaped(baseline.path))' (fixed; write it again with --write-baseline so they stay fixed):"
        ]
        for entry in baseline.gone {
            switch entry.key {
            case .type(let type):
                let name = ReportPhrases.escaped(type)
                lines.append(
                    phrases.emphasizedHeadline(
                        "  GONE \(name) (the baseline records \(entry.count) over budget)", label: "GONE", as: .exempt, name: name
                    ))
            case .test(let test, let type):
                let name = ReportPhrases.escaped(test)
                lines.append(
                    phrases.emphasizedHeadline(
                        "  GONE \(name): \(ReportPhrases.escaped(type)) (the baseline records \(entry.count))", label: "GONE",
                        as: .exempt, name: name))
            case .unreachable(let identity):
                lines.append(
                    phrases.emphasizedHeadline(
                        "  GONE unreachable \(ReportPhrases.escaped(identity)) (the baseline records \(entry.count))",
                        label: "GONE", as: .exempt, name: "unreachable"))
            }
        }
        return lines + [""]
    }

    /// The last line of the report: the verdict and how the target ended.
    func summary(_ report: AuditReport) -> String {
        "leak-audit: " + phrases.summarySentence(report)
    }

}
