import LeakAuditModel
import LeakAuditPresentation

/// A comparison of two reports for people: the two runs, then one line per changed finding (types
/// over budget, tests' leaks, groups of unreachable objects), the census, what limits the
/// comparison, and the verdict.
///
/// ```
/// leak-audit diff: 'old.json' → 'new.json'
///   old: '.build/debug/App' exited with code 0 (clean)
///   new: '.build/debug/App' exited with code 0 (budgetExceeded)
///
/// types over budget:
///   APPEARED App.LoginViewModel: max 1, peak 1 → 3 (+2), alive at exit 0 → 3 (+3), over budget 0 → 2 (+2)
///
/// leak-audit: 1 finding appeared or grew and fails the new run (1 appeared)
/// ```
public struct TextDiffRenderer: ReportDiffRenderer {
    /// Creates the renderer.
    public init() {}

    /// Renders the comparison as plain text.
    public func render(_ diff: ReportDiff) -> String {
        var lines = [
            "leak-audit diff: '\(ReportPhrases.escaped(diff.old.path))' → '\(ReportPhrases.escaped(diff.new.path))'",
            "  old: " + side(diff.old),
            "  new: " + side(diff.new),
            "",
        ]
        if diff.verdict != .notComparable {
            lines.append("types over budget:")
            lines += diff.types.isEmpty ? ["  none in either run"] : diff.types.map(typeLine)
            lines.append("")
        }
        if let leaks = diff.testLeaks {
            lines.append("tests that left instances alive (--leaks-per-test):")
            lines += leaks.isEmpty ? ["  none in either run"] : leaks.map(testLine)
            lines.append("")
        }
        if let unreachable = diff.unreachable {
            lines.append("unreachable objects of the program's types:")
            lines += unreachable.isEmpty ? ["  none in either run"] : unreachable.map(unreachableLine)
            lines.append("")
        }
        if let census = diff.census {
            let inspected = diff.old.outcome == .running && diff.new.outcome == .running
            lines.append("census (alive \(inspected ? "when inspected" : "at exit"); informs, fails nothing):")
            lines += census.isEmpty ? ["  none in either run"] : census.map(censusLine)
            lines.append("")
        }
        lines += diff.notes.map { "note: " + ReportPhrases.note($0) }
        lines.append("leak-audit: " + verdict(diff))
        return lines.joined(separator: "\n") + "\n"
    }

    /// `'.build/debug/App' exited with code 0 (clean)`.
    private func side(_ side: ReportDiff.Side) -> String {
        "'\(ReportPhrases.escaped(side.target))' \(side.outcome.phrase) (\(side.verdict.name))"
    }

    private func typeLine(_ type: ReportDiff.TypeChange) -> String {
        let (old, new) = (type.old, type.new)
        var parts = [
            Self.counts("max", old?.max, new?.max), Self.counts("peak", old?.peakLive, new?.peakLive),
            Self.counts("alive at exit", old?.liveAtExit, new?.liveAtExit),
            Self.counts("over budget", old?.overBudget, new?.overBudget),
        ]
        if old == nil { parts.append("not tracked in the old run") }
        if new == nil { parts.append("not tracked in the new run") }
        let status = type.change == .disappeared ? "" : Self.status(type.status)
        return "  \(type.change.rawValue.uppercased()) \(ReportPhrases.escaped(type.name)): "
            + parts.joined(separator: ", ") + status
    }

    private func testLine(_ leak: ReportDiff.TestLeakChange) -> String {
        let status = leak.change == .disappeared ? "" : Self.status(leak.status)
        return "  \(leak.change.rawValue.uppercased()) \(ReportPhrases.escaped(leak.test)): "
            + Self.counts(ReportPhrases.escaped(leak.type), leak.old, leak.new) + status
    }

    /// `  APPEARED cycle PairA.other → PairB.other → PairA: structures 3, objects 6, bytes 96`.
    private func unreachableLine(_ group: ReportDiff.UnreachableChange) -> String {
        let (old, new) = (group.old, group.new)
        let shape = group.shape == .cycle ? "cycle" : "over-retained"
        let chain = ReportPhrases.retainerChain(
            Retainer(count: 0, root: Retainer.Root(kind: .cycle, name: ""), path: group.path))
        let status = group.change == .disappeared ? "" : Self.status(group.status)
        return "  \(group.change.rawValue.uppercased()) \(shape) \(chain): "
            + [
                Self.counts("structures", old?.count, new?.count), Self.counts("objects", old?.objects, new?.objects),
                Self.counts("bytes", old?.bytes, new?.bytes),
            ].joined(separator: ", ") + status
    }

    /// `GREW App.Node: 3 → 5 (+2)`, and with heap walks' bytes `, 120 bytes → 200 bytes (+80 bytes)`.
    private func censusLine(_ entry: ReportDiff.CensusChange) -> String {
        var line =
            "  \(entry.change.rawValue.uppercased()) "
            + Self.counts(ReportPhrases.escaped(entry.type) + ":", entry.old, entry.new)
        if let (old, new) = entry.bytes {
            let delta = new - old
            line +=
                old == new
                ? ", \(ReportPhrases.byteCount(new))"
                : ", \(ReportPhrases.byteCount(old)) → \(ReportPhrases.byteCount(new)) (\(delta > 0 ? "+" : "-")\(ReportPhrases.byteCount(abs(delta))))"
        }
        return line
    }

    /// `peak 3`, `peak 1 → 3 (+2)`: both sides when they differ, one side's value when the other
    /// run has none.
    static func counts(_ label: String, _ old: Int?, _ new: Int?) -> String {
        switch (old, new) {
        case (let old?, let new?) where old != new:
            let delta = new - old
            return "\(label) \(old) → \(new) (\(delta > 0 ? "+" : "")\(delta))"
        case (_, let new?):
            return "\(label) \(new)"
        case (let old?, nil):
            return "\(label) \(old)"
        case (nil, nil):
            return label
        }
    }

    /// ` (suppressed)`, ` (baselined)`: why a finding of the new run fails nothing.
    static func status(_ status: FindingStatus) -> String {
        switch status {
        case .failing, .largerThanBaseline: ""
        case .suppressed: " (suppressed)"
        case .baselined: " (baselined)"
        }
    }

    /// The last line: what grew and fails, then every change counted.
    func verdict(_ diff: ReportDiff) -> String {
        let changes = ReportDiff.Change.allCases.compactMap { change -> String? in
            let count = diff.findings(change)
            return count > 0 ? "\(count) \(change.rawValue)" : nil
        }
        let counted = changes.isEmpty ? "no finding in either run" : changes.joined(separator: ", ")
        switch diff.verdict {
        case .notComparable:
            return "not compared: a run could not be audited"
        case .grew:
            let failing = diff.failingFindings
            return
                "\(failing) \(failing == 1 ? "finding" : "findings") appeared or grew and \(failing == 1 ? "fails" : "fail") the new run (\(counted))"
        case .noGrowth:
            let growth = diff.findings(.appeared) + diff.findings(.grew)
            let which = growth > 0 ? "that fails the new run " : ""
            return "no finding \(which)appeared or grew (\(counted))"
        }
    }
}
