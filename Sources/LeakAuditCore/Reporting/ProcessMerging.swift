import LeakAuditModel

// One report of several processes: `swift test` runs a test bundle once per testing library, and a
// program may start others. Types, census entries, tests and allocation groups of the same name
// are merged into one entry each.

extension ReportBuilder {
    /// Test reports of several processes, one per test name, in name order.
    static func mergedTests(_ tests: [AuditReport.TestReport]) -> [AuditReport.TestReport] {
        var merged: [String: AuditReport.TestReport] = [:]
        // The same type left alive by the same test in two processes is one entry.
        func merging(_ types: [AuditReport.TestReport.LeakedType], into existing: inout [AuditReport.TestReport.LeakedType]) {
            for leaked in types {
                // What was released later stays apart from the same type's other global state.
                let late = leaked.globalStateReason == .releasedLater
                if let index = existing.firstIndex(where: {
                    $0.type == leaked.type && ($0.globalStateReason == .releasedLater) == late
                }) {
                    existing[index].count += leaked.count
                    existing[index].allocations = mergedGroups(existing[index].allocations + leaked.allocations)
                    if existing[index].retainers != nil || leaked.retainers != nil {
                        existing[index].retainers = RetainerNaming.grouped(
                            (existing[index].retainers ?? []) + (leaked.retainers ?? []))
                    }
                    existing[index].retainersUnavailable += leaked.retainersUnavailable
                    existing[index].releasedAfterMilliseconds = [
                        existing[index].releasedAfterMilliseconds, leaked.releasedAfterMilliseconds,
                    ].compactMap { $0 }.max()
                } else {
                    existing.append(leaked)
                }
            }
        }
        for test in tests {
            guard var entry = merged[test.name] else {
                merged[test.name] = test
                continue
            }
            merging(test.leaked, into: &entry.leaked)
            merging(test.globalState, into: &entry.globalState)
            merging(test.keptByTestCase, into: &entry.keptByTestCase)
            entry.ran = entry.ran || test.ran
            entry.startedAt = [entry.startedAt, test.startedAt].compactMap { $0 }.min()
            entry.finishedAt = [entry.finishedAt, test.finishedAt].compactMap { $0 }.max()
            merged[test.name] = entry
        }
        return merged.values.sorted { $0.name < $1.name }
    }

    /// Census entries of several processes, one per name, most instances first.
    static func mergedCensus(_ entries: [AuditReport.CensusEntry]) -> [AuditReport.CensusEntry] {
        var merged: [String: AuditReport.CensusEntry] = [:]
        for entry in entries {
            if var existing = merged[entry.name] {
                existing.liveAtExit += entry.liveAtExit
                if let bytes = entry.bytes { existing.bytes = (existing.bytes ?? 0) + bytes }
                existing.allocations = mergedGroups(existing.allocations + entry.allocations)
                existing.timeline = LiveCountTimeline.sum([existing.timeline, entry.timeline].compactMap { $0 })
                merged[entry.name] = existing
            } else {
                merged[entry.name] = entry
            }
        }
        return merged.values.sorted { ($0.liveAtExit, $1.name) > ($1.liveAtExit, $0.name) }
    }

    /// One entry per type name across processes. A budget holds within each process, so the entry
    /// shows the budget, the peak and the allocation groups of the process that went furthest over
    /// (or came closest), whose counts add up to that peak, and is exceeded when any process
    /// exceeded; instances at exit and allocations over the run are summed.
    static func mergedByName(_ types: [AuditReport.TrackedType]) -> [AuditReport.TrackedType] {
        var merged: [String: AuditReport.TrackedType] = [:]
        var order: [String] = []
        for type in types {
            guard var existing = merged[type.name] else {
                merged[type.name] = type
                order.append(type.name)
                continue
            }
            if type.peakLive.subtractingReportingOverflow(type.max).partialValue
                > existing.peakLive.subtractingReportingOverflow(existing.max).partialValue
            {
                existing.max = type.max
                existing.peakLive = type.peakLive
                existing.peakTime = type.peakTime
                existing.allocations = type.allocations
            }
            existing.allocationsAtExit = mergedGroups(existing.allocationsAtExit + type.allocationsAtExit)
            existing.timeline = LiveCountTimeline.sum([existing.timeline, type.timeline].compactMap { $0 })
            existing.liveAtExit += type.liveAtExit
            existing.allocatedTotal += type.allocatedTotal
            if existing.retainers != nil || type.retainers != nil {
                existing.retainers = RetainerNaming.grouped((existing.retainers ?? []) + (type.retainers ?? []))
            }
            for reason in type.retainersUnavailable where !existing.retainersUnavailable.contains(reason) {
                existing.retainersUnavailable.append(reason)
            }
            merged[type.name] = existing
        }
        return order.compactMap { merged[$0] }
    }

    static func mergedGroups(_ groups: [AuditReport.AllocationGroup]) -> [AuditReport.AllocationGroup] {
        struct Key: Hashable {
            var frames: [SymbolizedFrame]
            var test: String?
        }
        var byKey: [Key: AuditReport.AllocationGroup] = [:]
        var order: [Key] = []
        for group in groups {
            // Addresses differ between processes (ASLR): compare what the frames say.
            let frames = group.frames.map {
                SymbolizedFrame(
                    address: 0, module: $0.module, moduleOffset: $0.moduleOffset, function: $0.function, file: $0.file,
                    line: $0.line, column: $0.column, inlined: $0.inlined)
            }
            let key = Key(frames: frames, test: group.test)
            if byKey[key] == nil { order.append(key) }
            byKey[key, default: AuditReport.AllocationGroup(count: 0, frames: group.frames, truncated: false, test: group.test)]
                .count += group.count
            if group.truncated { byKey[key]?.truncated = true }
        }
        return order.compactMap { byKey[$0] }.sorted { $0.count > $1.count }
    }
}
