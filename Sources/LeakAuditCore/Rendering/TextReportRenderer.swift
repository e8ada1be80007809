import FoundationEssentials

/// The report for people: one block per exceeded type with its allocation stacks as
/// `function at file:line`, then one line per type within budget, then the verdict.
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
            if let tests = report.tests { lines.append(contentsOf: renderTests(tests)) }
        }
        for warning in report.warnings { lines.append("warning: \(warning)") }
        // Slots reserved by a writer that then found leak-audit gone stay empty too: with drops, the
        // torn count is not evidence of a crash.
        if report.tornRecords > 0 && report.droppedRecords == 0 {
            lines.append("note: \(report.tornRecords) records were cut short when the target ended; everything else was received")
        }
        lines.append(summary(report))
        return lines.joined(separator: "\n") + "\n"
    }

    /// Why the target could not be audited and what to do, or nil when it was audited.
    func notAuditedExplanation(_ report: AuditReport) -> [String]? {
        let target = Self.escaped(report.target.path)
        var lines: [String] = []
        switch report.notAudited {
        case .neverAttached:
            lines.append("leak-audit: '\(target)' never attached, so nothing was audited (it \(report.target.outcome.phrase)).")
            lines.append("  It must link the LeakMonitor library and call MemoryLeakMonitor.validate(self) in init,")
            lines.append("  or be given budgets by type name: --budget 'App.*ViewModel=1', or --census to list survivors.")
        case .recordFormatMismatch:
            lines.append("leak-audit: '\(target)' links a LeakMonitor that writes another record format than this")
            lines.append("  leak-audit (\(leakAuditVersion)) reads; build it against the same leak-audit release.")
        case .staticRuntime:
            lines.append("leak-audit: '\(target)' links the Swift runtime statically (-static-stdlib), so allocations and")
            lines.append("  deallocations cannot be observed and live counts would be wrong; rebuild it without -static-stdlib.")
        case .notSwift:
            lines.append("leak-audit: '\(target)' is not a Swift program and started none with the Swift runtime")
            lines.append("  linked dynamically: leak-audit watches Swift class instances (it \(report.target.outcome.phrase)).")
        case nil:
            return nil
        }
        return lines
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

    /// An exceeded type's block: its counts, then its allocation stacks.
    func exceededBlock(_ type: AuditReport.TrackedType) -> [String] {
        let surplus = type.peakLive.subtractingReportingOverflow(type.max).partialValue
        return [
            "EXCEEDED \(Self.escaped(type.name)): \(budget(type)), peak \(type.peakLive), alive at exit \(type.liveAtExit)",
            "  \(type.peakLive) alive at the peak (\(surplus) over budget), allocated at:",
        ] + renderGroups(type.allocations, indent: "  ")
    }

    private func renderTypes(_ report: AuditReport) -> [String] {
        var lines: [String] = []
        for type in report.types where type.exceeded {
            lines.append("")
            lines.append(contentsOf: exceededBlock(type))
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

    private func renderTests(_ tests: [AuditReport.TestReport]) -> [String] {
        let leaking = tests.filter { !$0.leaked.isEmpty }
        var lines = ["tests: \(leaking.count) of \(tests.count) left instances alive after they finished"]
        for test in leaking {
            let summary = test.leaked.map { "\($0.count) \(Self.escaped($0.type))" }.joined(separator: ", ")
            lines.append("  LEAKED \(Self.escaped(test.name)): \(summary)")
            for type in test.leaked {
                lines.append(contentsOf: renderGroups(Array(type.allocations.prefix(Self.censusStacksShown)), indent: "    "))
            }
        }
        lines.append("")
        return lines
    }

    /// Stacks shown per census entry in text; JSON has them all.
    static let censusStacksShown = 3

    func renderCensus(_ census: AuditReport.Census) -> [String] {
        let instances = census.entries.reduce(0) { $0 + $1.liveAtExit }
        var heading = "census: \(instances) instances of \(census.entries.count) types alive at exit"
        if census.foldedTypes > 0 {
            heading +=
                " (\(census.foldedInstances) instances of \(census.foldedTypes) runtime and Foundation types folded; --census-all shows them)"
        }
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
        switch report.verdict {
        case .clean:
            return "no type over budget (\(report.types.count) tracked); \(outcome)"
        case .budgetExceeded:
            let leakingTests = report.tests?.filter { !$0.leaked.isEmpty }.count ?? 0
            let tests = leakingTests > 0 ? ", \(leakingTests) tests left instances alive" : ""
            return "\(report.exceededTypes.count) of \(report.types.count) tracked types over budget\(tests); \(outcome)"
        case .targetFailed:
            return "no type over budget (\(report.types.count) tracked), but \(outcome)"
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
