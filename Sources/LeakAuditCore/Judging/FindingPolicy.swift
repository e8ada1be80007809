import LeakAuditModel

// The judge stage: a policy (Configuration/AuditConfiguration.swift) applied to a built report.

extension FindingPolicy {
    /// Sets the status of every finding of `report`, the baseline comparison, and a warning for each
    /// suppression that matched nothing. A report of a target that could not be audited has no
    /// findings to judge and is left as it is.
    public func apply(to report: inout AuditReport) {
        guard report.notAudited == nil else { return }
        var usedRules: Set<Suppression> = []
        var matchedKeys: Set<Baseline.Entry.Key> = []
        let recorded = Dictionary((baseline?.entries ?? []).map { ($0.key, $0.count) }) { first, _ in first }

        func status(_ key: Baseline.Entry.Key, count: Int, types: [String], allocations: [AuditReport.AllocationGroup])
            -> FindingStatus
        {
            if let rule = suppressions.first(where: { rule in
                types.contains { rule.matches(typeName: $0, allocations: allocations, workingDirectory: workingDirectory) }
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
                .type(type.name), count: type.overBudget, types: [type.name], allocations: type.allocations)
        }
        if var tests = report.tests {
            for testIndex in tests.indices {
                for leakIndex in tests[testIndex].leaked.indices {
                    let leaked = tests[testIndex].leaked[leakIndex]
                    tests[testIndex].leaked[leakIndex].status = status(
                        .test(test: tests[testIndex].name, type: leaked.type), count: leaked.count, types: [leaked.type],
                        allocations: leaked.allocations)
                }
            }
            report.tests = tests
        }
        // A group of unreachable objects is matched by any type on its path (a type rule), or by
        // its allocation stacks (a function or file rule); internal groups are never findings.
        if var unreachable = report.unreachable {
            for index in unreachable.groups.indices where !unreachable.groups[index].isInternal {
                let group = unreachable.groups[index]
                unreachable.groups[index].status = status(
                    .unreachable(group.identity), count: group.count, types: group.pathTypes, allocations: group.allocations)
            }
            report.unreachable = unreachable
        }

        if let baseline {
            let gone = baseline.entries.filter { entry in
                if matchedKeys.contains(entry.key) { return false }
                switch entry.key {
                case .type: return true
                case .test: return report.tests != nil
                case .unreachable: return report.unreachable != nil
                }
            }
            report.baseline = AuditReport.BaselineComparison(path: baseline.path ?? "baseline", gone: gone)
        }
        for rule in suppressions where !usedRules.contains(rule) {
            report.warnings.append(
                "suppression '\(rule.rule)' (\(rule.origin)) matched no finding; remove it if that leak is fixed")
        }
    }
}
