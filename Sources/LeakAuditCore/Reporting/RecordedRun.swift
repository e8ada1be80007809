import LeakAuditModel

/// Everything one run of the target left, before symbolization: what was asked, what was decided,
/// how it ended, and what was received.
struct RecordedRun {
    /// What was asked.
    var request: AuditRequest
    /// What was decided before the target started.
    var plan: RunPlan
    /// How the target ended.
    var outcome: TargetOutcome
    /// What its processes wrote.
    var received: Reception
    /// With `--retainers`: the heap walks, at each process's exit and after tests.
    var heapWalks = HeapWalks()
}
