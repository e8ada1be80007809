import FoundationEssentials
import LeakAuditModel

/// How a report's parts are put into words for people: why a target was not audited, a type's
/// budget, its allocation sites as readable stacks, an exceeded type's block, the census, a
/// suppression, the verdict. The text report is assembled from these, and the formats that carry
/// prose for people (JUnit's failure bodies, GitHub's annotations, SARIF's messages) quote the
/// same phrases, so that every format says a thing the same way and none borrows from another.
///
/// Stacks are tightened for reading (JSON keeps every frame): paths under the working directory
/// are shown relative to it, return types are left out of function names, compiler thunks that
/// have no line are skipped, and frames below the program's entry point are cut.
public struct ReportPhrases: Sendable {
    /// Paths under this directory are shown relative to it.
    public var workingDirectory: String
    /// The widest a line may be (a terminal's columns; 80 for a log or a file); nil for no limit.
    /// Longer lines are shortened in the middle of their paths and names.
    public var width: Int?
    /// Show every allocation site and every frame, unfolded (`--verbose`).
    public var verbose: Bool
    /// Mark labels, names, verdicts and frames with colour (`TextEmphasis`), for a terminal. Lines
    /// are fitted to the width before, so the escapes take no columns.
    public var colored: Bool

    /// Creates the phrases; `workingDirectory` defaults to the process's.
    public init(workingDirectory: String? = nil, width: Int? = nil, verbose: Bool = false, colored: Bool = false) {
        self.workingDirectory = workingDirectory ?? FileManager.default.currentDirectoryPath
        self.width = width
        self.verbose = verbose
        self.colored = colored
    }

    /// `text` marked as `emphasis` when the phrases are colored, else unchanged. `text` must be
    /// escaped already.
    public func emphasized(_ text: String, as emphasis: TextEmphasis) -> String {
        colored ? emphasis.applied(to: text) : text
    }

    /// A line that reads `indent`, `label`, a space and `name` (escaped), then anything, already
    /// fitted to the width: with its label marked as `emphasis` and its name as a name. When the
    /// name was shortened to fit, the name is what lies before the line's last `:`.
    public func emphasizedHeadline(_ line: String, label: String, as emphasis: TextEmphasis, name: String) -> String {
        guard colored else { return line }
        let indent = String(line.prefix { $0 == " " })
        let head = indent + label + " "
        guard line.hasPrefix(head) else { return line }
        let rest = line.dropFirst(head.count)
        let shown: Substring
        if rest.hasPrefix(name) {
            shown = rest.prefix(name.count)
        } else if let colon = rest.lastIndex(of: ":") {
            shown = rest[..<colon]
        } else {
            shown = rest
        }
        return indent + emphasized(label, as: emphasis) + " " + emphasized(String(shown), as: .name) + rest[shown.endIndex...]
    }

    /// `line` after its indentation marked as `emphasis`.
    private func emphasizedAfterIndent(_ line: String, as emphasis: TextEmphasis) -> String {
        guard colored else { return line }
        let indent = line.prefix { $0 == " " }
        return indent + emphasized(String(line.dropFirst(indent.count)), as: emphasis)
    }

    /// Source frames shown per allocation site, from the line that constructed the instances out.
    public static let sourceFramesShown = 5

    /// Allocation sites shown per type or test.
    public static let sitesShown = 3

    /// Why the target could not be audited and what to do, fitted to what the target is, as one
    /// paragraph wrapped at the width (one line when there is none); nil when it was audited.
    public func notAuditedExplanation(_ report: AuditReport) -> [String]? {
        explanationLines(report).map(paragraph)
    }

    /// `lines`, a first line and the lines indented by two spaces that continue it, as one
    /// paragraph fitted to the width: wrapped there with its continuation lines indented by two,
    /// in verbose output too, or one line when there is no width (HTML, SARIF, JUnit and GitHub
    /// flow it themselves). Lines broken by hand for the source's sake would be broken again by a
    /// terminal narrower than them, leaving ragged lines.
    func paragraph(_ lines: [String]) -> [String] {
        let text = lines.map { String($0.drop { $0 == " " }) }.joined(separator: " ")
        var fitted = self
        fitted.verbose = false
        return fitted.wrapped(text)
    }

    /// `notAuditedExplanation`'s words, broken where the source reads well.
    private func explanationLines(_ report: AuditReport) -> [String]? {
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
            case .other, .inspectedProcess, nil:
                return [
                    "leak-audit: \(target) started no Swift program whose types opted in, and no budget or census",
                    "  was asked for, so nothing was audited (\(outcome)).",
                ] + optIn
            }
        case .recordFormatMismatch:
            return [
                "leak-audit: \(target) links a LeakMonitor that writes another record format than this",
                "  leak-audit (\(report.tool.version)) reads; build it against the same leak-audit release.",
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
            // With no filter, a bundle that failed or was killed ran none because it ended before
            // its first test: a hint about filters would send the reader the wrong way.
            if !Self.namesTests(report.target), let ended = Self.endedBeforeTests(report.target.outcome) {
                return [
                    "leak-audit: no test ran in \(target): it \(ended) before its first test, so nothing was",
                    "  audited. No test filter was given: it failed as it started (its output says why).",
                ]
            }
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

    /// True when `target`'s arguments choose tests: `--filter` or `--skip` (swift test, Swift
    /// Testing), or for a test bundle an argument that is no option nor an option's value
    /// (XCTest's `Module.Class/testName`).
    static func namesTests(_ target: AuditReport.Target) -> Bool {
        let options = ["--filter", "--skip"]
        var previous: String? = nil
        for argument in target.arguments {
            defer { previous = argument }
            if options.contains(where: { argument == $0 || argument.hasPrefix($0 + "=") }) { return true }
            if target.kind == .swiftTestBundle, !argument.hasPrefix("-"), previous?.hasPrefix("-") != true {
                return true
            }
        }
        return false
    }

    /// How a target that failed ended, as "was killed by signal 11 (SIGSEGV)" or "exited with code
    /// 1"; nil for one that succeeded.
    static func endedBeforeTests(_ outcome: TargetOutcome) -> String? {
        switch outcome {
        case .signaled: "was \(outcome.phrase)"
        case .exited(let code) where code != 0: outcome.phrase
        case .exited, .running: nil
        }
    }

    private func staticRuntimeExplanation(_ target: String) -> [String] {
        [
            "leak-audit: \(target) links the Swift runtime statically (-static-stdlib), so allocations and",
            "  deallocations cannot be observed and live counts would be wrong; rebuild it without -static-stdlib.",
        ]
    }

    /// `max 1`, or `max 1 from 'App.*ViewModel=1' (--budget)` for a pattern's budget.
    public func budget(_ type: AuditReport.TrackedType) -> String {
        switch type.budget {
        case .code: "max \(type.max)"
        case .pattern(let pattern):
            "max \(type.max) from '\(Self.escaped(pattern.description))' (\(Self.escaped(pattern.origin)))"
        }
    }

    /// The allocation sites of `typeName`'s instances, most first: the first few unless verbose,
    /// each as the frames that matter (ReadableStack), fitted to the width.
    public func allocationSites(_ groups: [AuditReport.AllocationGroup], indent: String, typeName: String) -> [String] {
        var lines: [String] = []
        let shown = verbose ? groups : Array(groups.prefix(Self.sitesShown))
        for group in shown {
            let test = group.test.map { " in \(Self.escaped($0))" } ?? ""
            lines += wrapped("\(indent)\(group.count) × allocated\(test) at")
            if group.frames.isEmpty { lines.append(emphasizedAfterIndent("\(indent)    (no stack recorded)", as: .library)) }
            let entries = ReadableStack.entries(group.frames, typeName: typeName, limit: verbose ? nil : Self.sourceFramesShown)
            for entry in entries {
                switch entry {
                case .frame(let frame, let times):
                    lines.append(contentsOf: self.lines("\(indent)    ", frame, suffix: times > 1 ? " × \(times)" : ""))
                case .cycle(let length, let times):
                    lines.append(
                        emphasizedAfterIndent(
                            "\(indent)    … the \(length) frames above, \(times) times over (recursion)", as: .library))
                case .folded(let count, let modules):
                    // As many module names as fit.
                    let head = "\(indent)    … \(counted(count, "frame")) in "
                    var names = modules.map(Self.escaped)
                    var text = head + names.joined(separator: ", ")
                    while let width, !verbose, text.count > width, names.count > 1 {
                        names.removeLast()
                        text = head + names.joined(separator: ", ") + ", …"
                    }
                    lines.append(emphasizedAfterIndent(fitted(text), as: .library))
                case .more(let count):
                    lines.append(
                        emphasizedAfterIndent(
                            "\(indent)    … \(counted(count, "more frame")) (--verbose or --format json shows them)", as: .library
                        ))
                }
            }
            if group.truncated {
                lines.append(emphasizedAfterIndent("\(indent)    … (deeper frames not recorded)", as: .library))
            }
        }
        let hidden = groups.count - shown.count
        if hidden > 0 {
            lines += wrapped(
                "\(indent)… and \(counted(hidden, "more allocation site")) (--verbose shows them here, --format json lists them all)"
            ).map { emphasizedAfterIndent($0, as: .library) }
        }
        return lines
    }

    /// `prefix` and a frame, `function at path:line`, shortened in the middle of the path (keeping
    /// the file name) and then of the function name until the line fits the width. Colored, a frame
    /// of the user's code (one with a source line) has its place marked, and any other is dim.
    private func lines(_ prefix: String, _ frame: SymbolizedFrame, suffix: String) -> [String] {
        let function = Self.escaped(
            verbose ? (frame.function ?? "??") : (frame.function.map(ReadableStack.readableFunction) ?? "??"))
        let inlined = frame.inlined ? " [inlined]" : ""
        var place = place(of: frame)
        let isUsers = frame.hasSourceLine
        // The parts are fitted plain, then marked: escapes take no columns.
        func line(_ lead: String, _ function: String, _ joiner: Substring, _ place: String, _ end: String) -> String {
            guard colored else { return lead + function + joiner + place + end }
            if !isUsers { return lead + emphasized(function + joiner + place + end, as: .library) }
            return lead + function + joiner + emphasized(place, as: .location) + end
        }
        let full = prefix + function + place.joiner + place.text + inlined + suffix
        guard let width, !verbose, full.count > width else {
            return [line(prefix, function, Substring(place.joiner), place.text, inlined + suffix)]
        }
        // One line if shortening the path (down to its file name) is enough; else the place goes on
        // a line of its own, and each part gives way in its middle only if it alone is too wide.
        let fixed = prefix.count + function.count + place.joiner.count + inlined.count + suffix.count
        if place.isPath {
            let short = Self.elidedPath(place.text, to: width - fixed)
            if fixed + short.count <= width { return [line(prefix, function, Substring(place.joiner), short, inlined + suffix)] }
        }
        let first = Self.elided(function, to: Swift.max(width - prefix.count - suffix.count, 24), keepingEnd: 16)
        let placePrefix = prefix + "  "
        let joiner = place.joiner.dropFirst()
        if place.isPath { place.text = Self.elidedPath(place.text, to: width - placePrefix.count - joiner.count - inlined.count) }
        return [line(prefix, first, "", "", suffix), line(placePrefix, "", joiner, place.text, inlined)]
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
    public static func elidedPath(_ path: String, to length: Int) -> String {
        guard path.count > length else { return path }
        let components = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        // Never the file name cut: with no directory to give way, the path stays whole.
        guard components.count > 2 else { return components.count == 2 ? "…/" + components[1] : path }
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
    /// A word wider than a line (a path, a long name) is broken after a `/` or `.`, never cut short;
    /// only a part with neither that is still wider than a line is broken where the line ends.
    public func wrapped(_ text: String) -> [String] {
        guard let width, !verbose, text.count > width else { return [text] }
        let indent = String(text.prefix { $0 == " " })
        let continuation = indent + "  "
        var lines: [String] = []
        var current = indent
        // Characters in `current`, kept as it grows: counting a string walks all of it, and doing
        // so per word made wrapping quadratic.
        var currentCount = indent.count
        var atLineStart = true
        func newLine() {
            lines.append(current)
            current = continuation
            currentCount = continuation.count
            atLineStart = true
        }
        for word in text.dropFirst(indent.count).split(separator: " ") {
            let wordCount = word.count
            let space = atLineStart ? 0 : 1
            if currentCount + space + wordCount <= width {
                current += (atLineStart ? "" : " ") + word
                currentCount += space + wordCount
                atLineStart = false
                continue
            }
            if !atLineStart { newLine() }
            // Wider than a line: in parts, each ending after a separator where one falls.
            for part in Self.breakable(word, into: width - continuation.count) {
                if !atLineStart && currentCount + part.count > width { newLine() }
                current += part
                currentCount += part.count
                atLineStart = false
            }
        }
        lines.append(current)
        return lines
    }

    /// `word` in parts of at most `length` characters, each ending after a `/` or a `.` where one
    /// falls, else where the length ends.
    static func breakable(_ word: Substring, into length: Int) -> [Substring] {
        let length = Swift.max(length, 8)
        var parts: [Substring] = []
        var start = word.startIndex
        while start < word.endIndex {
            let remaining = word.distance(from: start, to: word.endIndex)
            if remaining <= length {
                parts.append(word[start...])
                break
            }
            let limit = word.index(start, offsetBy: length)
            var cut = limit
            if let separator = word[start..<limit].lastIndex(where: { $0 == "/" || $0 == "." }) {
                cut = word.index(after: separator)
            }
            parts.append(word[start..<cut])
            start = cut
        }
        return parts
    }

    /// `text` cut to the width in its middle.
    private func fitted(_ text: String) -> String {
        guard let width, !verbose else { return text }
        return Self.elided(text, to: width, keepingEnd: width / 3)
    }

    /// `text` at most `length` characters long: its start, `…`, and its last `keepingEnd` characters.
    public static func elided(_ text: String, to length: Int, keepingEnd: Int) -> String {
        guard text.count > length, length > 1 else { return text }
        let end = Swift.min(keepingEnd, length - 1)
        return String(text.prefix(length - 1 - end)) + "…" + String(text.suffix(end))
    }

    /// An exceeded type's block: its counts, how it compares with the baseline when there is one,
    /// then its allocation stacks.
    public func exceededBlock(_ type: AuditReport.TrackedType, baseline: AuditReport.BaselineComparison? = nil) -> [String] {
        let surplus = type.peakLive.subtractingReportingOverflow(type.max).partialValue
        // Too wide for one line: the counts go on the next; only a name wider than a line gives way.
        let counts = "\(budget(type)), peak \(type.peakLive), alive at exit \(type.liveAtExit)"
        let name = Self.escaped(type.name)
        var headline = ["EXCEEDED \(name): \(counts)"]
        if let width, !verbose, headline[0].count > width {
            headline = [fitted("EXCEEDED \(name):"), fitted("  " + counts)]
        }
        headline[0] = emphasizedHeadline(headline[0], label: "EXCEEDED", as: .failure, name: name)
        var lines = headline + ["  \(type.peakLive) alive at the peak (\(surplus) over budget), allocated at:"]
        if let comparison = Self.baselineComparison(type.status, baseline, unit: " over budget") {
            lines.insert(contentsOf: wrapped("  " + comparison), at: headline.count)
        }
        lines += allocationSites(type.allocations, indent: "  ", typeName: type.name)
        if let retainers = type.retainers {
            lines += retainerLines(retainers, unavailable: type.retainersUnavailable, indent: "  ")
        }
        return lines
    }

    /// `inspected pid 1234 (InspectService), stopped 41 ms`: what `leak-audit inspect` copied and
    /// how long the process was stopped; nil for a report of a run.
    public static func inspectionHeadline(_ report: AuditReport) -> String? {
        guard report.target.kind == .inspectedProcess else { return nil }
        let pid = report.target.processes.first.map { "pid \($0.pid)" } ?? "a process"
        let name = report.target.path.split(separator: "/").last.map { " (\(escaped(String($0))))" } ?? ""
        let stopped = report.target.stoppedMicroseconds.map { microseconds in
            // Tenths of a millisecond below 10 ms, where they matter.
            microseconds < 10_000
                ? ", stopped \(microseconds / 1_000).\(microseconds % 1_000 / 100) ms" : ", stopped \(microseconds / 1_000) ms"
        }
        return "inspected \(pid)\(name)\(stopped ?? "")"
    }

    /// `largest retained:` and one line per object that alone keeps the most memory alive
    /// (`leak-audit inspect`): what it retains, then its path from its root.
    public func largestRetainedBlock(_ retainers: [Retainer]) -> [String] {
        var lines = [emphasized("largest retained:", as: .heading) + " what each object alone keeps alive, and what holds it"]
        if retainers.isEmpty { lines.append("  no Swift object") }
        for retainer in retainers {
            let type = Self.escaped(retainer.path.last.map { Self.shortTypeName($0.type) } ?? "?")
            let objects = retainer.count == 1 ? type : "in \(retainer.count) × \(type)"
            // A collection's storage held by a global directly has no step of its own to show.
            let chain = Self.retainerChain(retainer)
            lines += wrapped(
                "  \(Self.byteCount(retainer.retainedBytes)) \(objects), held by \(Self.retainerRoot(retainer.root))"
                    + (chain.isEmpty ? "" : ": \(chain)"))
        }
        lines.append("")
        return lines
    }

    /// `held by` lines (`--retainers`): one per group of instances with the same path, then why
    /// some have none.
    public func retainerLines(_ retainers: [Retainer], unavailable: [String], indent: String) -> [String] {
        var lines: [String] = []
        for retainer in retainers {
            lines += wrapped(
                "\(indent)\(retainer.count) × held by \(Self.retainerRoot(retainer.root)): \(Self.retainerChain(retainer))"
                    + (retainer.retainedBytes > 0 ? " (retains \(Self.byteCount(retainer.retainedBytes)))" : ""))
        }
        let which = retainers.isEmpty ? "them" : "the rest"
        for reason in unavailable { lines += wrapped("\(indent)who holds \(which) is unknown: \(reason)") }
        if retainers.isEmpty && unavailable.isEmpty {
            lines.append("\(indent)none of them was alive when its process was walked")
        }
        return lines
    }

    /// One sentence per retainer group, most instances first, at most `limit` then how many more:
    /// `Held by global App.router: AppRouter.stack → [i] Screen.viewModel → LoginViewModel (3
    /// instances, retains 1.2 MB).` Empty without retainers. For the messages of SARIF, JUnit and
    /// GitHub, which carry no stack block.
    public static func retainerSentences(_ retainers: [Retainer]?, limit: Int = 3) -> String {
        guard let retainers, !retainers.isEmpty else { return "" }
        var sentences = retainers.prefix(limit).map { retainer in
            let count = "\(retainer.count) instance\(retainer.count == 1 ? "" : "s")"
            let retains = retainer.retainedBytes > 0 ? ", retains \(byteCount(retainer.retainedBytes))" : ""
            return "Held by \(retainerRoot(retainer.root)): \(retainerChain(retainer)) (\(count)\(retains))."
        }
        if retainers.count > limit { sentences.append("And \(retainers.count - limit) more holders.") }
        return sentences.joined(separator: " ")
    }

    /// `512 bytes`, `12.3 KB`, `1.2 MB` (powers of 1,000, as file sizes are usually shown).
    public static func byteCount(_ bytes: Int) -> String {
        if bytes < 1_000 { return "\(bytes) bytes" }
        let units = ["KB", "MB", "GB", "TB"]
        var value = Double(bytes) / 1_000
        var unit = 0
        while value >= 1_000 && unit < units.count - 1 {
            value /= 1_000
            unit += 1
        }
        let tenths = (value * 10).rounded() / 10
        let text = tenths == tenths.rounded() ? String(Int(tenths)) : String(tenths)
        return "\(text) \(units[unit])"
    }

    /// `global App.router`, `a cycle of 2 objects…`, `the stack of thread 'main' in f()`.
    public static func retainerRoot(_ root: Retainer.Root) -> String {
        let thread = root.thread.map { " of thread '\(escaped($0))'" } ?? ""
        switch root.kind {
        case .global: return "global \(escaped(root.name))"
        case .threadLocal: return "thread-local storage\(thread)"
        case .stack: return "a local in \(escaped(root.name))\(thread)"
        case .register: return "a register\(thread) in \(escaped(root.name))"
        case .task: return root.name.isEmpty ? "an async task" : "the async task running \(escaped(root.name))"
        case .testCase: return "the test case \(escaped(root.name))"
        case .memory: return "untyped memory (\(escaped(root.name)))"
        case .cycle, .unknown: return escaped(root.name)
        }
    }

    /// The steps a long retaining path shows at each end in text; the objects between are counted.
    public static let retainerChainStepsShown = 8

    /// `AppRouter.stack → [i] Screen.viewModel → LoginViewModel`: each object's type without its
    /// module, how it holds the next, collection storage folded into the step after it. A path of
    /// more than twice `retainerChainStepsShown` steps shows its first and last ones, and how many
    /// objects lie between (`… 1999984 more objects …`).
    public static func retainerChain(_ retainer: Retainer) -> String {
        let path = retainer.path
        let shown = retainerChainStepsShown
        let total = path.count + retainer.omittedSteps
        guard total > 2 * shown + 1, path.count >= 2 * shown else { return chain(path[...]) }
        // The tail's first object is shown by its type: how it is held lies among those left out.
        let hidden = total - 2 * shown
        return chain(path[..<shown]) + " → … \(hidden) more objects … → " + chain(path[(path.count - shown)...])
    }

    /// The text of consecutive steps of a path, the first shown by its type alone.
    private static func chain(_ path: ArraySlice<Retainer.Step>) -> String {
        let path = Array(path)
        guard let first = path.first else { return "" }
        // A collection's storage reads as the step after it, unless it is all there is (an
        // over-retained dictionary's storage).
        var text = first.isCollectionStorage && path.count > 1 ? "" : shortTypeName(first.type)
        for (index, step) in path.enumerated().dropFirst() {
            let isLast = index == path.count - 1
            if step.via.hasPrefix(".") {
                // An enum's case: `Session.state (.loading) → RequestViewModel`.
                text += " (\(escaped(step.via)))"
            } else if step.via.hasPrefix("[") {
                text += (text.isEmpty ? "" : " → ") + escaped(step.via)
            } else if text.isEmpty {
                text += escaped(step.via)
            } else if step.via.hasPrefix("(") {
                text += " → " + step.via
            } else if step.via.hasPrefix("captured") {
                text += " → (\(step.via))"
            } else {
                text += "." + escaped(step.via)
            }
            // A collection's storage, or an enum whose case the next step names, is not an object
            // of its own to the reader.
            let enumFollows = !isLast && path[index + 1].via.hasPrefix(".")
            if (step.isCollectionStorage || enumFollows) && !isLast { continue }
            text += (step.via.hasPrefix("[") ? " " : " → ") + shortTypeName(step.type)
        }
        return text
    }

    /// A type's name without its module: `App.Outer.Inner<App.Model>` reads `Outer.Inner<Model>`.
    public static func shortTypeName(_ name: String) -> String {
        shortTypeNames.value(for: name, makeShortTypeName)
    }

    /// What `shortTypeName` made of each name so far.
    private static let shortTypeNames = TextMemo()

    private static func makeShortTypeName(_ name: String) -> String {
        var result = ""
        var token = ""
        func flush() {
            let parts = token.split(separator: ".", omittingEmptySubsequences: false)
            result += parts.count > 1 && parts[0].first?.isLetter == true ? parts.dropFirst().joined(separator: ".") : token
            token = ""
        }
        for character in name {
            if character.isLetter || character.isNumber || character == "_" || character == "." {
                token.append(character)
            } else {
                flush()
                result.append(character)
            }
        }
        flush()
        return escaped(result)
    }

    /// `larger than the baseline, which records 2 over budget`, `new: not in the baseline`, or nil
    /// without a baseline.
    public static func baselineComparison(
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

    /// `by type:App.Legacy* (.leak-audit.json): the reason`.
    public func suppressionLine(_ suppression: Suppression) -> String {
        let reason = suppression.reason.map { ": \(Self.escaped($0))" } ?? ""
        return "by \(Self.escaped(suppression.rule)) (\(Self.escaped(suppression.origin)))\(reason)"
    }

    /// Census entries shown with their allocation stacks in a report fitted to a width.
    public static let censusTypesWithStacks = 10
    /// Census entries listed at all in a report fitted to a width; `--verbose` lists every one.
    public static let censusTypesListed = 50

    public func censusBlock(_ census: AuditReport.Census, inspected: Bool = false) -> [String] {
        let instances = census.entries.reduce(0) { $0 + $1.liveAtExit }
        let moment = inspected ? "alive when inspected" : "alive at exit"
        var heading = "census: \(counted(instances, "instance")) of \(counted(census.entries.count, "type")) \(moment)"
        if inspected, census.entries.allSatisfy({ $0.bytes != nil }) {
            heading += ", \(Self.byteCount(census.entries.reduce(0) { $0 + ($1.bytes ?? 0) }))"
        }
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
        if let first = lines.first, first.hasPrefix("census:") {
            lines[0] = emphasized("census:", as: .heading) + first.dropFirst("census:".count)
        }
        // The types with the most instances with their stacks; unless verbose, the next a line
        // each, then how many more.
        let fitted = !verbose && width != nil
        for (index, entry) in census.entries.enumerated() {
            let name = Self.escaped(entry.name)
            if fitted, index >= Self.censusTypesListed {
                let more = census.entries.count - index
                lines += wrapped(
                    "  … and \(counted(more, "more type")) with \(counted(census.entries[index...].reduce(0) { $0 + $1.liveAtExit }, "instance")) (--verbose shows them here, --format json lists them all)"
                )
                break
            }
            // A heap walk's census has bytes too.
            let bytes = entry.bytes.map { " (\(Self.byteCount($0)))" } ?? ""
            if fitted, index >= Self.censusTypesWithStacks {
                lines += wrapped("  \(entry.liveAtExit) \(name)\(bytes)")
                continue
            }
            let entryLines = wrapped("  \(entry.liveAtExit) \(name)\(bytes)")
            lines +=
                entryLines.count == 1 ? ["  \(entry.liveAtExit) " + emphasized(name, as: .name) + bytes] : entryLines
            lines.append(contentsOf: allocationSites(entry.allocations, indent: "    ", typeName: entry.name))
        }
        lines.append("")
        return lines
    }

    /// What the record stream lost on the way ("12 records lost, 3 records damaged"), nil when
    /// nothing was: why a report is incomplete.
    public func incompleteness(_ report: AuditReport) -> String? {
        var losses: [String] = []
        if report.droppedRecords > 0 { losses.append("\(counted(report.droppedRecords, "record")) lost") }
        if report.damagedRecords > 0 { losses.append("\(counted(report.damagedRecords, "record")) damaged") }
        if report.exceededCapacity { losses.append("more types or processes than leak-audit keeps") }
        return losses.isEmpty ? nil : losses.joined(separator: ", ")
    }

    /// The verdict and how the target ended, without the `leak-audit: ` prefix.
    public func summarySentence(_ report: AuditReport) -> String {
        let processes =
            report.target.attachedProcesses > 1
            ? " (\(counted(report.target.attachedProcesses, "process", plural: "processes")) attached)" : ""
        let outcome =
            Self.inspectionHeadline(report).map { "\($0); it ran on" }
            ?? "'\(Self.escaped(report.target.path))'\(processes) \(report.target.outcome.phrase)"
        let statuses = report.findingStatuses
        let suppressed = statuses.filter { $0.suppression != nil }.count
        let baselined = statuses.filter { if case .baselined = $0 { true } else { false } }.count
        let gone = report.baseline?.gone.count ?? 0
        let notFailing = [(suppressed, "suppressed"), (baselined, "baselined"), (gone, "gone from the baseline")]
            .filter { $0.0 > 0 }.map { "\($0.0) \($0.1)" }.joined(separator: ", ")
        // "No type over budget" would not be true with suppressed or baselined ones; a per-test
        // run with no budget speaks of tests, not of "0 tracked" types it was never given.
        let testsOnly = report.types.isEmpty && report.tests != nil
        let nothing =
            suppressed + baselined > 0 ? "nothing failing" : testsOnly ? "no test leaked" : "no type over budget"
        let tracked = [testsOnly ? nil : "\(report.types.count) tracked", notFailing.isEmpty ? nil : notFailing]
            .compactMap { $0 }.joined(separator: "; ")
        // What was exercised: the tests that ran under audit and the objects watched.
        var exercised: [String] = []
        if let testsRun = report.target.testsRun { exercised.append("\(counted(testsRun, "test")) ran") }
        if let skipped = report.target.testsSkipped, skipped > 0 { exercised.append("\(skipped) skipped") }
        if report.watchedInstances > 0 {
            exercised.append("\(counted(report.watchedInstances, "object")) watched")
        }
        let watched = exercised.isEmpty ? "" : "; " + exercised.joined(separator: ", ")
        let leakingTests = report.tests?.filter { $0.leaked.contains(where: \.status.fails) }.count ?? 0
        let others = notFailing.isEmpty ? "" : " (\(notFailing))"
        // What the unreachable check found, when it ran: alone when nothing else was tracked.
        let failingGroups = report.unreachable?.failingGroups ?? []
        let structures = failingGroups.reduce(0) { $0 + $1.count }
        let unreachableFound = structures > 0 ? ", \(counted(structures, "unreachable structure"))" : ""
        var checked = tracked
        if let unreachable = report.unreachable {
            let processes = Self.processesChecked(unreachable)
            var none =
                report.unreachableFindings.isEmpty
                ? "no unreachable object of the program's types (\(processes))"
                : "no failing unreachable object of the program's types (\(processes))"
            // No process checked: nothing is known either way.
            if unreachable.processesChecked == 0 && report.unreachableFindings.isEmpty {
                none = "the unreachable check was not made (no process could be checked)"
            }
            checked = (report.types.isEmpty && report.tests == nil) || tracked.isEmpty ? none : "\(tracked); \(none)"
        }
        let nothingChecked =
            report.unreachable != nil && report.types.isEmpty && report.tests == nil
            ? checked + (notFailing.isEmpty ? "" : "; \(notFailing)")
            : checked.isEmpty ? nothing : "\(nothing) (\(checked))"
        switch report.verdict {
        case .clean where report.target.kind == .inspectedProcess:
            // No budget to speak of: what the copy held.
            let alive = report.census.map { census in
                census.entries.reduce(census.foldedInstances + census.foldedTestCaseInstances) { $0 + $1.liveAtExit }
            }
            return "\(alive.map { counted($0, "Swift object") + " alive" } ?? "nothing failing")\(others); \(outcome)"
        case .clean:
            return "\(nothingChecked)\(watched); \(outcome)"
        case .testsLeaked:
            // Only tests failed: no budget to speak of.
            let ran = report.target.testsRun.map { " of \(counted($0, "test"))" } ?? (leakingTests == 1 ? " test" : " tests")
            return "LEAKED: \(leakingTests)\(ran) left instances alive\(unreachableFound)\(others); \(outcome)"
        case .budgetExceeded:
            let tests = leakingTests > 0 ? ", \(counted(leakingTests, "test")) left instances alive" : ""
            return
                "\(report.failingTypes.count) of \(counted(report.types.count, "tracked type")) over budget\(tests)\(unreachableFound)\(others); \(outcome)"
        case .unreachableObjects:
            let objects = failingGroups.reduce(0) { $0 + $1.objects }
            let bytes = failingGroups.reduce(0) { $0 + $1.bytes }
            return
                "UNREACHABLE: \(counted(objects, "object")) of the program's types (\(Self.byteCount(bytes))) that nothing reaches, in \(counted(structures, "structure"))\(others); \(outcome)"
        case .incomplete:
            return
                "\(nothingChecked)\(watched), but the report is incomplete (\(incompleteness(report) ?? "")), so the run is not clean; \(outcome)"
        case .targetFailed:
            return "\(nothingChecked)\(watched), but \(outcome)"
        case .notAudited:
            return "not audited; \(outcome)"
        }
    }

    /// What limits a comparison of two reports, in one sentence for people, without a final period.
    public static func note(_ note: ReportDiff.Note) -> String {
        func run(_ old: Bool) -> String { old ? "the old run" : "the new run" }
        switch note {
        case .notAudited(let old, let reason):
            return "\(run(old)) could not be audited (\(reason.name)), so there is nothing to compare"
        case .incomplete(let old):
            return "\(run(old)) is incomplete (records were lost or damaged), so its counts may be wrong"
        case .testsInOneRun(let old):
            return "only \(run(old)) was made with --leaks-per-test, so tests are not compared"
        case .censusInOneRun(let old):
            return "only \(run(old)) was made with --census, so censuses are not compared"
        case .unreachableInOneRun(let old):
            return "only \(run(old)) checked for unreachable objects, so they are not compared"
        case .differentTargets(let old, let new):
            return "the runs audited different targets ('\(escaped(old))' and '\(escaped(new))')"
        }
    }

    /// The frames worth reading: thunks without a line dropped, nothing below the entry point, and
    /// nothing after the last frame with a source line (the runtime, Dispatch or XCTest calling in).
    public func readableFrames(_ frames: [SymbolizedFrame]) -> [SymbolizedFrame] {
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
    public func describe(_ frame: SymbolizedFrame) -> String {
        let place = place(of: frame)
        return (frame.function.map(Self.describedFunction) ?? "??") + place.joiner + place.text
            + (frame.inlined ? " [inlined]" : "")
    }

    /// A frame's function as `describe` shows it: without its return type, escaped.
    private static func describedFunction(_ function: String) -> String {
        describedFunctions.value(for: function) { escaped(SwiftName.withoutReturnType($0)) }
    }

    /// What `describedFunction` made of each function so far.
    private static let describedFunctions = TextMemo()

    /// Makes a string from the target safe for a terminal and a log: control characters, line and
    /// paragraph separators and the bidirectional controls (which can make a line read other than
    /// it is) become escapes.
    public static func escaped(_ text: String) -> String {
        // Most of what a report shows has nothing to escape: it is returned as it is, printable
        // ASCII found so byte by byte.
        if isPrintableASCII(text) || !text.unicodeScalars.contains(where: needsEscape) {
            return text
        }
        var result = ""
        for scalar in text.unicodeScalars {
            if needsEscape(scalar) {
                result += "\\u{" + String(scalar.value, radix: 16) + "}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// True when every byte of `text` is printable ASCII; over its contiguous bytes, which a
    /// native string has: the reports ask it of every text they escape, and the generic walk of
    /// `utf8` took 36 M of the 450 M instructions of Swinject's HTML report.
    private static func isPrintableASCII(_ text: String) -> Bool {
        let printable = { (byte: UInt8) in byte >= 0x20 && byte < 0x7F }
        return text.utf8.withContiguousStorageIfAvailable { bytes in
            for byte in bytes where !printable(byte) { return false }
            return true
        } ?? text.utf8.allSatisfy(printable)
    }

    /// True for the scalars `escaped` writes as escapes: the C0 and C1 controls, DEL, and
    /// `invisibleControls`, looked up only for a scalar within their range (most of a report's
    /// text that is not ASCII is arrows and ellipses, which the set's hashing made costly).
    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        if value < 0x7F { return value < 0x20 }
        if value <= 0x9F { return true }
        return (0x061C...0x2069).contains(value) && invisibleControls.contains(value)
    }

    /// The bidirectional marks, embeddings, overrides and isolates, and the line and paragraph
    /// separators: invisible, yet they change how a line reads or where it ends.
    private static let invisibleControls: Set<UInt32> = [
        0x061C, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069,
    ]
}
