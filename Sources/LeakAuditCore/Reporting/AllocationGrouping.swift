import LeakAuditModel

/// One process's allocation stacks as a report shows them: each symbolized once, however many
/// groups (at the peak, at exit, per test) share it, without LeakMonitor's own frames on top, and
/// grouped by the line that constructed their instances.
final class AllocationGrouping {
    /// The ledger's stacks (return addresses by id), those cut short, and its tests' names.
    private let stacks: [UInt32: [UInt64]]
    private let truncatedStacks: Set<UInt32>
    private let testNames: [UInt32: String]
    private let symbolizer: any AddressSymbolizer
    /// Hears each stack symbolized.
    private let progress: ProgressReporter?
    /// Frames by return address, and by stack.
    private var resolved: [UInt64: [SymbolizedFrame]] = [:]
    private var stackFrames: [UInt32: [SymbolizedFrame]] = [:]

    /// A stack's constructing line for one type, found once.
    private struct ConstructingKey: Hashable {
        var stackID: UInt32
        var typeName: String
    }
    private var constructingSites: [ConstructingKey: String?] = [:]

    /// What sites are grouped by: their constructing line, or their stack when no line is found;
    /// and their test.
    private struct GroupKey: Hashable {
        var line: String?
        var stackID: UInt32?
        var test: UInt32?
    }

    /// A group being merged: its count, its commonest site and that site's count, and whether a
    /// stack of the group was cut short.
    private typealias Group = (count: Int, representative: LifetimeLedger.Site, representativeCount: Int, truncated: Bool)

    /// The grouping of `ledger`'s stacks. `prepared`, made by `symbolizer` too, from stacks of the
    /// same process read while it waited at its end (`PreparedSymbolizers`), gives the frames and
    /// constructing lines it found of each stack still made of the same return addresses.
    init(
        ledger: LifetimeLedger, symbolizer: any AddressSymbolizer, progress: ProgressReporter?,
        taking prepared: AllocationGrouping? = nil
    ) {
        stacks = ledger.stacks
        truncatedStacks = ledger.truncatedStacks
        testNames = ledger.tests.mapValues(\.name)
        self.symbolizer = symbolizer
        self.progress = progress
        guard let prepared else { return }
        resolved = prepared.resolved
        for (stackID, frames) in prepared.stackFrames where prepared.stacks[stackID] == stacks[stackID] {
            stackFrames[stackID] = frames
        }
        for (key, line) in prepared.constructingSites where stackFrames[key.stackID] != nil {
            constructingSites[key] = line
        }
    }

    /// A grouping that only finds the frames and constructing lines of `stacks`, ahead of the
    /// report (`PreparedSymbolizers`): it names no test and knows no stack cut short.
    init(preparing stacks: [UInt32: [UInt64]], symbolizer: any AddressSymbolizer) {
        self.stacks = stacks
        truncatedStacks = []
        testNames = [:]
        self.symbolizer = symbolizer
        progress = nil
    }

    /// The frames of stack `stackID`, LeakMonitor's own on top left out.
    func frames(ofStack stackID: UInt32) -> [SymbolizedFrame] {
        if let known = stackFrames[stackID] { return known }
        let symbolized = (stacks[stackID] ?? []).flatMap { address in
            if let known = resolved[address] { return known }
            let frames = symbolizer.symbolize(address)
            resolved[address] = frames
            return frames
        }
        let frames = Array(symbolized.drop(while: ReportBuilder.isMonitorFrame))
        stackFrames[stackID] = frames
        progress?.symbolizedStack()
        return frames
    }

    /// The sites grouped by the line that constructed their instances (and their test): stacks
    /// that differ only above or below that line are one group, shown with its commonest stack
    /// (an instance first seen by the allocation hook and one seen by validate, say).
    func groups(_ sites: [LifetimeLedger.Site], typeName: String) -> [AuditReport.AllocationGroup] {
        groups(SiteTally(sites), typeName: typeName)
    }

    /// `groups(_:typeName:)` of sites already counted.
    func groups(_ tally: SiteTally, typeName: String) -> [AuditReport.AllocationGroup] {
        var merged: [GroupKey: Group] = [:]
        // Stack order, so that the commonest stack wins ties the same way every time.
        for (site, count) in tally.counts.sorted(by: {
            ($0.site.stackID, $0.site.test ?? .max) < ($1.site.stackID, $1.site.test ?? .max)
        }) {
            let key =
                constructingLine(ofStack: site.stackID, typeName: typeName).map { GroupKey(line: $0, test: site.test) }
                ?? GroupKey(stackID: site.stackID, test: site.test)
            let truncated = truncatedStacks.contains(site.stackID)
            if var group = merged[key] {
                group.count += count
                group.truncated = group.truncated || truncated
                if count > group.representativeCount { (group.representative, group.representativeCount) = (site, count) }
                merged[key] = group
            } else {
                merged[key] = (count, site, count, truncated)
            }
        }
        // Most instances first; then by stack and test, so that the order is stable.
        let ordered = merged.values.sorted { left, right in
            if left.count != right.count { return left.count > right.count }
            if left.representative.stackID != right.representative.stackID {
                return left.representative.stackID < right.representative.stackID
            }
            return (left.representative.test ?? .max) < (right.representative.test ?? .max)
        }
        return ordered.map { group in
            AuditReport.AllocationGroup(
                count: group.count, frames: frames(ofStack: group.representative.stackID), truncated: group.truncated,
                test: group.representative.test.flatMap { testNames[$0] })
        }
    }

    /// The line of stack `stackID` that constructed an instance of `typeName`, nil when none is
    /// found; found once for the groups and for the report's global state.
    func constructingLine(ofStack stackID: UInt32, typeName: String) -> String? {
        let key = ConstructingKey(stackID: stackID, typeName: typeName)
        if let known = constructingSites[key] { return known }
        let line = AuditReport.AllocationGroup.constructingSite(in: frames(ofStack: stackID), typeName: typeName)
        constructingSites[key] = line
        return line
    }
}
