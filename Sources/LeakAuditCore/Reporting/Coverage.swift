import LeakAuditModel

// Whether a run audited anything at all, and if not, why: a report of a target that could not be
// audited must say so (exit 3) rather than look clean.

extension ReportBuilder {
    /// Why `run` could not be audited, or nil when it was. `target` is the report's target, whose
    /// processes say how many tests ran.
    static func notAuditedReason(_ run: RecordedRun, target: AuditReport.Target) -> AuditReport.NotAuditedReason? {
        let channel = run.received.channel
        let watch = run.plan.watch
        if channel.flags.contains(.recordFormatMismatch) && !channel.attached {
            return .recordFormatMismatch
        }
        if !channel.attached, watch.watchesAllocations {
            // Watched without LeakMonitor: if a Swift process ran under the preloaded library,
            // nothing attaching only means nothing matched; if none did, say why.
            if channel.watchedProcesses > 0 { return nil }
            return run.plan.targetKind == .staticSwift ? .staticRuntime : .notSwift
        }
        // A process asked for the objects nothing reaches at its exit: that check is an audit.
        let checkedUnreachable = !run.heapWalks.unreachable.isEmpty || !run.heapWalks.unreachableUnavailable.isEmpty
        if !channel.attached || (!channel.flags.contains(.instrumented) && !watch.watchesAllocations && !checkedUnreachable) {
            // The preloaded library attaches to name tests even where nothing links LeakMonitor and
            // no budget was given: without the unreachable check, that audits nothing.
            return .neverAttached
        }
        if channel.flags.contains(.staticRuntime) { return .staticRuntime }
        // Test bundles ran and reported every test, and there were none: a filter that matched
        // nothing, or a bundle run for the testing library its tests do not use.
        if target.testsRun == 0 { return .noTestsRan }
        return nil
    }
}
