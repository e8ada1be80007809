import FoundationEssentials
import LeakAuditModel

/// Runs `request` under leak-audit and returns its report, findings judged by the request's
/// policy; throws when the target cannot be started. The flow, stage by stage (docs/design.md),
/// each stage a folder that uses only the folders of earlier stages (and Configuration/ and
/// Platform/ beneath them all; `StageLayeringTests` checks it):
///
/// 1. plan: find the target, see what it is, decide how to watch it (Planning/);
/// 2. record: start it with the record channel and decode what its processes write, as they
///    write it, into one ledger per process until it ends (Recording/);
/// 3. walk: with `--retainers`, copy each process that asks and search its heap for who holds
///    the instances the report will show (Retainers/), called by the record stage through
///    `walkHeaps`;
/// 4. report: exact counts from the ledgers, symbolized stacks for what the report shows
///    (Reporting/ReportBuilder.swift);
/// 5. judge: suppressions, then the baseline (Judging/FindingPolicy.swift).
///
/// Rendering the report and mapping its verdict to an exit code are the caller's.
public func audit(_ request: AuditRequest, toolVersion: String) throws(LeakAuditError) -> AuditReport {
    try audit(request, toolVersion: toolVersion, on: currentPlatform())
}

/// `audit(_:toolVersion:)` on a given platform.
func audit(_ request: AuditRequest, toolVersion: String, on platform: some AuditPlatform) throws(LeakAuditError)
    -> AuditReport
{
    let inherited = request.environment ?? ProcessInfo.processInfo.environment
    // 1. Plan.
    var plan = try RunPlan(request, on: platform, inherited: inherited)

    // 2. Record, and 3. walk the heaps of the processes that ask.
    let slots = RecordChannel.roundedSlotCapacity(RecordChannel.requestedSlotCapacity(inherited: inherited))
    let watchLines = plan.channelWatchLines ?? []
    let region = try platform.makeSharedRegion(
        byteCount: RecordChannel.byteCount(slotCapacity: slots) + watchLines.count)
    let channel = RecordChannel(region: region, slotCapacity: slots, watchLines: watchLines)
    plan.environment[RecordChannel.environmentVariable] = channel.environmentValue
    let progress = request.progress.map(ProgressReporter.init)
    progress?.begin(.launching)
    let target = try platform.launch(
        executablePath: plan.executablePath, displayName: request.target,
        arguments: request.argumentBytes ?? request.arguments.map { Array($0.utf8) }, environment: plan.environment)
    var heapWalks = HeapWalks()
    // The stacks a process's report will show are symbolized while it waits at its end, on
    // another thread, rather than after the run (Reporting/PreparedSymbolizers.swift).
    let symbolizers = PreparedSymbolizers(watch: plan.watch, make: platform.makeSymbolizer)
    let (outcome, received) = Reception.receive(
        from: channel, while: target, watch: plan.watch, timeoutSeconds: request.timeoutSeconds,
        walkHeaps: { [watch = plan.watch] channel, ledgers in
            heapWalks.answerRequests(
                on: channel, ledgers: ledgers, watch: watch,
                copyProcess: { pid in
                    progress?.begin(.walkingHeap(pid: pid))
                    return platform.copyProcess(pid, takingPreparedMemory: true)
                })
        },
        // A test process whose last tests left only what its `let` globals hold (read while it
        // runs) or what XCTest's test case objects hold in their properties, or through `let`s,
        // waits for no grace period: for the test case objects, a copy of it, the test case
        // objects read in it, tells (at the cost of the walk at exit's copy).
        immutableGlobalsHold: plan.watch.attributesTests
            ? { pid, modules in platform.immutableGlobalReferences(of: pid, modules: modules) } : nil,
        testCasesHold: plan.watch.walksHeaps
            ? { pid, instances, modules in
                progress?.begin(.walkingHeap(pid: pid))
                guard case .success(let snapshot) = platform.copyProcess(pid, takingPreparedMemory: false) else { return false }
                return RetainerSearch.testCasesHold(instances, in: snapshot, modules: modules)
            } : nil,
        // A test process's report names the lines that made what its tests left (a test run
        // almost always shows some): the images its stacks pass through are indexed while it runs.
        imageInUse: plan.watch.attributesTests ? { platform.prepareImage($0) } : nil,
        processEnding: { [watch = plan.watch] index, ledger in
            symbolizers.prepare(ledger)
            // So is the memory its walk at exit will copy it into, when it will have one.
            if let pid = ledger.process?.pid, heapWalks.copiesAtExit(ofProcess: index, ledger: ledger, watch: watch) {
                platform.prepareCopy(of: pid)
            }
        }, progress: progress)
    platform.discardPreparedCopies()
    let run = RecordedRun(request: request, plan: plan, outcome: outcome, received: received, heapWalks: heapWalks)

    // 4. Report.
    progress?.begin(.symbolizing(stacks: 0))
    var report = ReportBuilder(
        toolVersion: toolVersion, takePrepared: symbolizers.symbolizer(for:),
        inspectExecutable: platform.inspectExecutable(at:),
        progress: progress
    ).build(from: run)

    // 5. Judge.
    request.configuration.policy.apply(to: &report)
    return report
}
