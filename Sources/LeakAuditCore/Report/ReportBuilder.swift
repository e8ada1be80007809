/// Turns a recorded run into a report: exact counts from the ledger, and, for the types over
/// budget only, symbolized allocation stacks.
struct ReportBuilder {
    var toolVersion: String

    func build(from run: RecordedRun) -> AuditReport {
        let symbolizer = Symbolizer(modules: run.ledger.modules)
        var resolved: [UInt64: [SymbolizedFrame]] = [:]
        func frames(ofStack stackID: UInt32) -> [SymbolizedFrame] {
            let addresses = run.ledger.stacks[stackID] ?? []
            let symbolized = addresses.flatMap { address in
                if let known = resolved[address] { return known }
                let frames = symbolizer.symbolize(address)
                resolved[address] = frames
                return frames
            }
            return Array(symbolized.drop(while: Self.isMonitorFrame))
        }

        var types: [AuditReport.TrackedType] = run.ledger.types.values.map { ledger in
            var type = AuditReport.TrackedType(
                name: ledger.name,
                max: ledger.max,
                peakLive: ledger.peak,
                liveAtExit: ledger.live.count,
                allocatedTotal: ledger.allocated,
                allocations: []
            )
            if type.exceeded {
                var counts: [UInt32: Int] = [:]
                for stackID in LifetimeLedger.stacksAliveAtPeak(of: ledger) { counts[stackID, default: 0] += 1 }
                type.allocations =
                    counts
                    .sorted { ($0.value, $1.key) > ($1.value, $0.key) }
                    .map { stackID, count in
                        AuditReport.AllocationGroup(
                            count: count,
                            frames: frames(ofStack: stackID),
                            truncated: run.ledger.truncatedStacks.contains(stackID)
                        )
                    }
            }
            return type
        }
        types.sort { ($0.exceeded ? 0 : 1, $0.name) < ($1.exceeded ? 0 : 1, $1.name) }

        var warnings: [String] = []
        if run.droppedRecords > 0 {
            warnings.append("the record channel filled up: \(run.droppedRecords) records were dropped, so counts may be low")
        }
        if run.stackTableFull {
            warnings.append("more distinct allocation stacks than leak-audit keeps: some allocations have no stack")
        }
        if run.ledger.inconsistentEvents > 0 {
            warnings.append("\(run.ledger.inconsistentEvents) records referred to unknown types or instances")
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
                path: run.request.target, arguments: run.request.arguments, attached: run.attached, outcome: run.outcome),
            notAudited: notAudited,
            types: types,
            droppedRecords: run.droppedRecords,
            tornRecords: run.tornSlots,
            warnings: warnings
        )
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
