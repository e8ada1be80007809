/// Turns a recorded run into a report: exact counts from the ledger, and, for the types over
/// budget only, symbolized allocation stacks.
struct ReportBuilder {
    var toolVersion: String

    func build(from run: RecordedRun) -> AuditReport {
        let perProcess = run.ledgers.sorted { $0.key < $1.key }.flatMap { _, ledger in trackedTypes(of: ledger) }
        let types = Self.mergedByName(perProcess)
            .sorted { ($0.exceeded ? 0 : 1, $0.name) < ($1.exceeded ? 0 : 1, $1.name) }
        let inconsistentEvents = run.ledgers.values.reduce(0) { $0 + $1.inconsistentEvents }

        var warnings: [String] = []
        if run.droppedRecords > 0 {
            warnings.append(
                "\(run.droppedRecords) records were not written (leak-audit stopped reading, or a record was larger than the ring), so counts may be off"
            )
        }
        if run.tooManyProcesses {
            warnings.append("more than 256 instrumented processes: the later ones were not audited")
        }
        if run.typeTableFull {
            warnings.append("more distinct types than leak-audit keeps (16,384): later types were not tracked")
        }
        if run.stackTableFull {
            warnings.append("more distinct allocation stacks than leak-audit keeps: some allocations have no stack")
        }
        if inconsistentEvents > 0 {
            warnings.append("\(inconsistentEvents) records referred to unknown types or instances")
        }

        let notAudited: AuditReport.NotAuditedReason?
        if run.recordFormatMismatch && !run.attached {
            notAudited = .recordFormatMismatch
        } else if !run.attached {
            notAudited = .neverAttached
        } else if run.staticRuntime {
            notAudited = .staticRuntime
        } else {
            notAudited = nil
        }
        return AuditReport(
            tool: .init(name: "leak-audit", version: toolVersion),
            target: .init(
                path: run.request.target, arguments: run.request.arguments, attached: run.attached,
                attachedProcesses: run.attachedProcesses, outcome: run.outcome),
            notAudited: notAudited,
            types: types,
            droppedRecords: run.droppedRecords,
            tornRecords: run.tornSlots,
            warnings: warnings
        )
    }

    /// The tracked types of one process, with symbolized stacks for those over budget.
    private func trackedTypes(of ledger: LifetimeLedger) -> [AuditReport.TrackedType] {
        let symbolizer = Symbolizer(modules: ledger.modules)
        var resolved: [UInt64: [SymbolizedFrame]] = [:]
        func frames(ofStack stackID: UInt32) -> [SymbolizedFrame] {
            let symbolized = (ledger.stacks[stackID] ?? []).flatMap { address in
                if let known = resolved[address] { return known }
                let frames = symbolizer.symbolize(address)
                resolved[address] = frames
                return frames
            }
            return Array(symbolized.drop(while: Self.isMonitorFrame))
        }
        return ledger.types.values.map { type in
            var tracked = AuditReport.TrackedType(
                name: type.name, max: type.max, peakLive: type.peak, liveAtExit: type.live.count,
                allocatedTotal: type.allocated, allocations: [])
            if tracked.exceeded {
                var counts: [UInt32: Int] = [:]
                for stackID in LifetimeLedger.stacksAliveAtPeak(of: type) { counts[stackID, default: 0] += 1 }
                tracked.allocations = counts.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map { stackID, count in
                    AuditReport.AllocationGroup(
                        count: count, frames: frames(ofStack: stackID), truncated: ledger.truncatedStacks.contains(stackID))
                }
            }
            return tracked
        }
    }

    /// One entry per type name across processes. A budget holds within each process, so the entry
    /// shows the budget and peak of the process that went furthest over (or came closest), and is
    /// exceeded when any process exceeded; instances at exit and allocations are summed; the
    /// allocation groups are those of every process that went over, identical stacks merged.
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
            }
            existing.liveAtExit += type.liveAtExit
            existing.allocatedTotal += type.allocatedTotal
            existing.allocations = mergedGroups(existing.allocations + type.allocations)
            merged[type.name] = existing
        }
        return order.compactMap { merged[$0] }
    }

    private static func mergedGroups(_ groups: [AuditReport.AllocationGroup]) -> [AuditReport.AllocationGroup] {
        var byStack: [[SymbolizedFrame]: AuditReport.AllocationGroup] = [:]
        var order: [[SymbolizedFrame]] = []
        for group in groups {
            // Addresses differ between processes (ASLR): compare what the frames say.
            let key = group.frames.map {
                SymbolizedFrame(
                    address: 0, module: $0.module, moduleOffset: $0.moduleOffset, function: $0.function, file: $0.file,
                    line: $0.line, column: $0.column, inlined: $0.inlined)
            }
            if byStack[key] == nil { order.append(key) }
            byStack[key, default: AuditReport.AllocationGroup(count: 0, frames: group.frames, truncated: group.truncated)]
                .count += group.count
        }
        return order.compactMap { byStack[$0] }.sorted { $0.count > $1.count }
    }

    /// LeakMonitor's and the shim's own frames, which sit on top of every captured stack.
    static func isMonitorFrame(_ frame: SymbolizedFrame) -> Bool {
        if let file = frame.file, file.contains("/Sources/LeakMonitor/") || file.contains("/Sources/CLeakMonitorShim/") {
            return true
        }
        guard let function = frame.function else { return false }
        return function.hasPrefix("leakaudit_") || function.hasPrefix("la_")
            || function.contains("LeakMonitor.MemoryLeakMonitor.")
    }
}

/// Runs `request` under leak-audit and returns the report; throws when the target cannot start.
public func audit(_ request: AuditRequest, toolVersion: String) throws(LeakAuditError) -> AuditReport {
    let run = try recordRun(request)
    return ReportBuilder(toolVersion: toolVersion).build(from: run)
}
