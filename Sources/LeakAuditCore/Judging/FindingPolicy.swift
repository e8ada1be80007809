import FoundationEssentials
import LeakAuditModel

/// Decides which findings fail the run: suppressions from the configuration file first, then the
/// baseline. A finding is a type over budget or, with `--leaks-per-test`, a type a test left alive.
///
/// - A finding that a suppression matches is `.suppressed`; the first matching rule, in file
///   order, names it.
/// - Otherwise, with a baseline, a finding the baseline records with at least as many instances is
///   `.baselined`; with fewer, `.largerThanBaseline`; one it does not record stays `.failing`.
/// - Baseline entries that no unsuppressed finding matched are reported as gone. Test entries are
///   compared only when the run reports tests (`--leaks-per-test`).
///
/// Neither changes a count: the report keeps every finding, with its status.
public struct FindingPolicy: Sendable, Hashable {
    /// Suppressions, in configuration order.
    public var suppressions: [Suppression]
    /// The baseline to compare with, nil without `--baseline`.
    public var baseline: Baseline?
    /// File suppressions also match paths relative to this directory.
    public var workingDirectory: String

    /// Creates a policy; `workingDirectory` defaults to the process's.
    public init(suppressions: [Suppression] = [], baseline: Baseline? = nil, workingDirectory: String? = nil) {
        self.suppressions = suppressions
        self.baseline = baseline
        self.workingDirectory = workingDirectory ?? FileManager.default.currentDirectoryPath
    }

    /// Sets the status of every finding of `report`, the baseline comparison, and a warning for each
    /// suppression that matched nothing. A report of a target that could not be audited has no
    /// findings to judge and is left as it is.
    public func apply(to report: inout AuditReport) {
        guard report.notAudited == nil else { return }
        var usedRules: Set<Suppression> = []
        var matchedKeys: Set<Baseline.Entry.Key> = []
        let recorded = Dictionary((baseline?.entries ?? []).map { ($0.key, $0.count) }) { first, _ in first }

        func status(_ key: Baseline.Entry.Key, count: Int, type: String, allocations: [AuditReport.AllocationGroup])
            -> FindingStatus
        {
            if let rule = suppressions.first(where: {
                $0.matches(typeName: type, allocations: allocations, workingDirectory: workingDirectory)
            }) {
                usedRules.insert(rule)
                return .suppressed(rule)
            }
            let stable = Baseline.stableKey(key)
            guard let limit = recorded[stable] else { return .failing }
            matchedKeys.insert(stable)
            return count > limit ? .largerThanBaseline(recorded: limit) : .baselined(recorded: limit)
        }

        for index in report.types.indices where report.types[index].exceeded {
            let type = report.types[index]
            report.types[index].status = status(
                .type(type.name), count: type.overBudget, type: type.name, allocations: type.allocations)
        }
        if var tests = report.tests {
            for testIndex in tests.indices {
                for leakIndex in tests[testIndex].leaked.indices {
                    let leaked = tests[testIndex].leaked[leakIndex]
                    tests[testIndex].leaked[leakIndex].status = status(
                        .test(test: tests[testIndex].name, type: leaked.type), count: leaked.count, type: leaked.type,
                        allocations: leaked.allocations)
                }
            }
            report.tests = tests
        }

        if let baseline {
            let gone = baseline.entries.filter { entry in
                if matchedKeys.contains(entry.key) { return false }
                if case .test = entry.key { return report.tests != nil }
                return true
            }
            report.baseline = AuditReport.BaselineComparison(path: baseline.path ?? "baseline", gone: gone)
        }
        for rule in suppressions where !usedRules.contains(rule) {
            report.warnings.append(
                "suppression '\(rule.rule)' (\(rule.origin)) matched no finding; remove it if that leak is fixed")
        }
    }
}
