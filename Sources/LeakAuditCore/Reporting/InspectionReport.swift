import LeakAuditModel

/// The report of `leak-audit inspect`: the census of the copy's live Swift objects by type (count
/// and bytes, the toolchain's types folded as in a run's census), the unreachable objects grouped
/// by structure, the objects that retain the most with their paths from their roots, named by the
/// process's symbols as `--retainers` names them, and how long the process was stopped. No
/// allocation was watched, so no stack.
struct InspectionReport {
    let process: InspectedProcess
    let modules: [ModuleImage]
    let symbolizer: any AddressSymbolizer

    /// How many objects that retain the most are looked at for each entry the report shows: the
    /// same path shape (cycles of the same types, entries of one array) is one entry.
    static let objectsPerLargestEntry = 10

    /// The report of `heap`, walked in a copy of the process taken in `stoppedNanoseconds`, with
    /// at most `largestEntries` entries of the objects that retain the most.
    func build(
        _ heap: HeapInspection, stoppedNanoseconds: UInt64, showsInternals: Bool, largestEntries: Int, toolVersion: String
    ) -> AuditReport {
        var target = AuditReport.Target(
            path: process.executablePath.isEmpty ? process.name : process.executablePath,
            arguments: Array(process.commandLine.dropFirst()), attached: false, attachedProcesses: 1, outcome: .running,
            kind: .inspectedProcess,
            processes: [AuditReport.AuditedProcess(pid: process.pid, commandLine: process.commandLine)])
        target.stoppedMicroseconds = Int(clamping: (stoppedNanoseconds + 500) / 1_000)
        let entries = heap.census.map { tally in
            var entry = AuditReport.CensusEntry(
                name: tally.name, liveAtExit: tally.count,
                // The runtime's objects that are no class instance (closure contexts, boxes,
                // tasks) have no type the program can act on by name: folded with the toolchain's.
                isInternal: !tally.isClassInstance || TypeOrigin.isInternalType(tally.name), isTestCase: tally.isTestCase,
                allocations: [])
            entry.bytes = tally.bytes
            return entry
        }
        let census = ReportBuilder.census(
            entries, watch: WatchOptions(census: true, censusShowsInternals: showsInternals))
        let naming = RetainerNaming(
            symbolizer: symbolizer, modules: modules,
            walk: .searched(Dictionary(heap.largest.map { ($0.address, $0.path) }, uniquingKeysWith: { first, _ in first })))
        // Objects with the same path shape are one entry (their count and bytes added), the
        // entries that retain the most first.
        let largest = RetainerNaming.grouped(
            heap.largest.compactMap { heavy in
                naming.retainers(of: [heavy.address], typeName: heavy.typeName).retainers.first
            }
        ).enumerated().sorted { ($1.element.retainedBytes, $0.offset) < ($0.element.retainedBytes, $1.offset) }
            .map(\.element).prefix(largestEntries)
        var unreachable = UnreachableObjects(heap.unreachable, naming: naming, allocations: { _ in [] })
        // That no stack was recorded is said once: by the unreachable objects' notes when groups of
        // the program's types are shown (they say where those were allocated is unknown), else here.
        var warnings =
            unreachable.groups.contains { !$0.isInternal }
            ? []
            : [
                "no allocation stacks: the process was inspected, not started by leak-audit, so nothing recorded where its objects were allocated"
            ]
        warnings += ReportBuilder.symbolizationWarnings(symbolizer.problems)
        // Neither the unreachable objects nor the largest are known.
        if let reason = heap.unavailable {
            unreachable.processesChecked = 0
            unreachable.unavailable = [reason]
            warnings.append(reason)
        }
        var report = AuditReport(
            tool: .init(name: "leak-audit", version: toolVersion), target: target, types: [], census: census,
            droppedRecords: 0, tornRecords: 0, warnings: warnings)
        report.largestRetained = Array(largest)
        report.unreachable = unreachable
        return report
    }
}
