import LeakAuditModel

#if canImport(Glibc)
    import Glibc
#endif

/// What `leak-audit inspect` is asked: which process, and how its census is shown.
public struct InspectRequest: Sendable {
    /// The process, as given on the command line.
    public var pid: String
    /// The census lists the toolchain's types instead of folding them.
    public var censusShowsInternals: Bool
    /// How many of the objects that retain the most the report shows.
    public var largestRetained: Int

    /// Creates the request from its parts.
    public init(pid: String, censusShowsInternals: Bool = false, largestRetained: Int = 10) {
        self.pid = pid
        self.censusShowsInternals = censusShowsInternals
        self.largestRetained = largestRetained
    }
}

/// Inspects a running process that leak-audit did not start (`leak-audit inspect PID`): checks
/// that it may be stopped (the same user's, traced by no one, a Swift program), stops every
/// thread with ptrace just long enough to copy its memory, lets it run on, then walks the copy:
/// the census of its live Swift objects, the unreachable ones grouped by structure, the objects
/// that retain the most with their paths from their roots, and how long it was stopped. Nothing is preloaded, nothing restarted; the process's
/// output is never touched. Judging (suppressions, the baseline) and the exit code are the caller's.
///
/// - Throws: `LeakAuditError` with one line when the pid names no process leak-audit may inspect.
public func inspect(_ request: InspectRequest, toolVersion: String) throws(LeakAuditError) -> AuditReport {
    try inspect(request, toolVersion: toolVersion, on: currentPlatform())
}

/// `inspect(_:toolVersion:)` on a given platform.
func inspect(_ request: InspectRequest, toolVersion: String, on platform: some AuditPlatform) throws(LeakAuditError)
    -> AuditReport
{
    let pid = try inspectablePID(request.pid)
    let process = try platform.describeProcess(pid)
    let snapshot = try platform.copyInspectedProcess(pid)
    // The process runs on from here; everything below reads the copy.
    let modules = platform.loadedModules(of: snapshot)
    let heap = HeapInspection.inspect(
        snapshot, modules: modules, largestCount: request.largestRetained * InspectionReport.objectsPerLargestEntry)
    return InspectionReport(process: process, modules: modules, symbolizer: platform.makeSymbolizer(modules: modules))
        .build(
            heap, stoppedNanoseconds: snapshot.stoppedNanoseconds, showsInternals: request.censusShowsInternals,
            largestEntries: request.largestRetained, toolVersion: toolVersion)
}

/// The pid `text` names, if leak-audit may stop it: a process number other than init's (1, whose
/// stop would stall the system) and leak-audit's own.
func inspectablePID(_ text: String) throws(LeakAuditError) -> Int32 {
    guard let pid = Int32(text), pid > 0 else {
        throw .processNotInspectable(pid: text, reason: "not a process id: give the number ps or pgrep shows")
    }
    if pid == 1 {
        throw .processNotInspectable(pid: text, reason: "pid 1 is init; stopping it would stall the whole system")
    }
    if pid == getpid() { throw .processNotInspectable(pid: text, reason: "that is leak-audit itself") }
    return pid
}
