import FoundationEssentials
import LeakAuditModel
import LeakAuditWire
import XCTest

@testable import LeakAuditCore

/// The unreachable check in a run: when it is on, what LEAK_AUDIT_WATCH tells the processes, and
/// how the report fills `unreachable` from the processes' walks at exit.
final class UnreachableRunTests: XCTestCase {
    private func settings(_ change: (inout AuditSettings) -> Void = { _ in }) -> AuditSettings {
        var settings = AuditSettings()
        settings.workingDirectory = FileManager.default.temporaryDirectory.path + "/no-such-directory-\(UUID())"
        change(&settings)
        return settings
    }

    func testTheCheckIsTheDefaultOnlyWhenNothingElseIsAskedFor() throws {
        let nothing = try AuditConfiguration(settings()).watch
        XCTAssertTrue(nothing.unreachableByDefault)
        XCTAssertFalse(nothing.unreachable)
        XCTAssertEqual(nothing.environmentValue(targetPath: "/app"), "unreachable-default")
        for given: (inout AuditSettings) -> Void in [
            { $0.budgets = ["App.*=1"] }, { $0.census = true }, { $0.leaksPerTest = true }, { $0.unreachable = true },
        ] {
            XCTAssertFalse(try AuditConfiguration(settings(given)).watch.unreachableByDefault)
        }
        var asked = try AuditConfiguration(
            settings {
                $0.unreachable = true
                $0.census = true
            }
        ).watch
        XCTAssertTrue(asked.unreachable)
        XCTAssertEqual(
            asked.environmentValue(targetPath: "/app"),
            (["census /app"] + TypeOrigin.internalTypePatterns.map { "no-stacks \($0)" } + ["unreachable"])
                .joined(separator: "\n"))
        asked.retainers = true
        XCTAssertTrue(asked.walksHeaps)
    }

    func testTheConfigurationFileTurnsItOn() throws {
        let directory = FileManager.default.temporaryDirectory.path + "/unreachable-config-\(UUID())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/config.json"
        try Data(#"{"version": 1, "unreachable": true}"#.utf8).write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(try ConfigurationFile.load(path: path).unreachable, true)
        let watch = try AuditConfiguration(settings { $0.configurationFile = path }).watch
        XCTAssertTrue(watch.unreachable)
        XCTAssertFalse(watch.unreachableByDefault)
    }

    /// Two processes, each leaving a pair of nodes that hold each other; the first watched the
    /// allocation of one of them.
    func testTheReportMergesTheProcessesGroupsAndNamesWhatItCouldNotCheck() throws {
        var encoder = HeapSnapshotReplay.Encoder()
        encoder.classType(
            name: HeapSnapshotReplay.Name.node, words: 1,
            fields: [(2, HeapSnapshotReplay.Encoder.symbolic(0), HeapSnapshotReplay.Name.next)])
        encoder.chunks(
            .heap,
            [
                (2, [HeapSnapshotReplay.Encoder.meta(0), HeapSnapshotReplay.Code.live] + HeapSnapshotReplay.Encoder.object(1)),
                (2, [HeapSnapshotReplay.Encoder.meta(0), HeapSnapshotReplay.Code.live] + HeapSnapshotReplay.Encoder.object(0)),
            ])
        encoder.instances(HeapSnapshotReplay.Encoder.object(0))
        let decoded = encoder.bytes.withUnsafeBytes(HeapSnapshotReplay.decode)
        let node = try XCTUnwrap(decoded.instances.first)

        var ledgers: [LifetimeLedger] = []
        for pid: Int32 in [100, 101, 102] {
            var ledger = LifetimeLedger()
            ledger.apply(.processAttached(AttachedProcess(pid: pid, commandLine: ["/app/App"], flags: 0)))
            if pid == 100 {
                ledger.apply(.typeDefined(id: 1, name: "App.Node", max: 10))
                ledger.apply(.allocated(typeID: 1, object: node, stackID: 0, sequence: 1, test: nil))
            }
            ledgers.append(ledger)
        }
        let channel = try RecordChannel(slotCapacity: 64)
        let writer = try ChannelWriter(channel)
        for index in 0..<3 { writer.requestWalk(of: index, number: 1, atExit: true, unreachable: true) }
        var walks = HeapWalks()
        walks.answerRequests(
            on: channel, ledgers: ledgers, watch: WatchOptions(),
            copyProcess: { pid in
                pid == 102 ? .failure(.processGone) : .success(ProcessSnapshot(pid: pid, regions: [], threads: []))
            },
            search: { _, instances, _, retainedSizes, tracked in
                RetainerSearch.walk(
                    of: instances, in: decoded.snapshot, modules: decoded.modules, retainedSizes: retainedSizes,
                    unreachable: tracked)
            })

        var watch = WatchOptions()
        watch.unreachableByDefault = true
        var run = RecordedRun(
            request: AuditRequest(target: "./App", arguments: []),
            plan: RunPlan(executablePath: "/app/App", watch: watch), outcome: .exited(code: 0),
            received: Reception(
                ledgers: [0: ledgers[0], 1: ledgers[1], 2: ledgers[2]],
                channel: ChannelSummary(attached: true, attachedProcesses: 3, droppedRecords: 0, flags: [])))
        run.heapWalks = walks
        let builder = ReportBuilder(
            toolVersion: "1", makeSymbolizer: { _ in HeapSnapshotReplay.FixedSymbolizer() },
            inspectExecutable: { _ in .dynamicSwift })
        let report = builder.build(from: run)
        XCTAssertNil(report.notAudited, "the check is an audit")
        let unreachable = try XCTUnwrap(report.unreachable)
        XCTAssertEqual(unreachable.processesChecked, 2)
        XCTAssertEqual(unreachable.objects, 4)
        XCTAssertEqual(unreachable.bytes, 96)
        XCTAssertEqual(unreachable.types.map { "\($0.name) \($0.count) \($0.bytes)" }, ["App.Node 4 96"])
        XCTAssertEqual(unreachable.groups.count, 1)
        let group = try XCTUnwrap(unreachable.groups.first)
        XCTAssertEqual(group.shape, .cycle)
        XCTAssertEqual([group.count, group.objects, group.bytes], [2, 4, 96])
        XCTAssertEqual(group.path.map { "\($0.via) \($0.type)" }, [" App.Node", "next App.Node", "next App.Node"])
        XCTAssertEqual(group.allocations.map(\.count), [1])
        XCTAssertFalse(group.isInternal)
        XCTAssertEqual(unreachable.unavailable, ["process 102 (App): \(SnapshotFailure.processGone.message)"])

        // Without the check, the report has no `unreachable` at all.
        run.heapWalks = HeapWalks()
        run.plan.watch = WatchOptions()
        XCTAssertNil(builder.build(from: run).unreachable)
    }
    /// By default the check is for the processes that link no LeakMonitor: one that never asked
    /// at its exit (a test bundle that crashed) is named as not checked, and why; one that links
    /// LeakMonitor (its process record says so, or it registered a type in code) was never to be
    /// checked, and is not named.
    func testByDefaultAProcessThatEndedBeforeItsCheckIsNamedAsNotChecked() throws {
        let flags: [Int32: UInt32] = [100: 0, 101: 0, 102: UInt32(LA_PROCESS_LINKS_MONITOR), 103: 0]
        var ledgers: [LifetimeLedger] = []
        for pid: Int32 in [100, 101, 102, 103] {
            var ledger = LifetimeLedger()
            let commandLine = ["/app/AppPackageTests.xctest"]
            ledger.apply(.processAttached(AttachedProcess(pid: pid, commandLine: commandLine, flags: flags[pid] ?? 0)))
            if pid == 103 { ledger.apply(.typeDefined(id: 1, name: "App.Model", max: 10)) }
            ledgers.append(ledger)
        }
        let channel = try RecordChannel(slotCapacity: 64)
        let writer = try ChannelWriter(channel)
        // Only process 100 reached its exit: 101 crashed; 102 and 103 link LeakMonitor and ask nothing.
        writer.requestWalk(of: 0, number: 1, atExit: true, unreachable: true)
        for index in 1..<4 { writer.requestWalk(of: index, number: 0, atExit: false) }
        var walks = HeapWalks()
        walks.answerRequests(
            on: channel, ledgers: ledgers, watch: WatchOptions(),
            copyProcess: { pid in .success(ProcessSnapshot(pid: pid, regions: [], threads: [])) },
            search: { snapshot, instances, modules, retainedSizes, tracked in
                RetainerSearch.walk(
                    of: instances, in: snapshot, modules: modules, retainedSizes: retainedSizes, unreachable: tracked,
                    foreignClasses: ForeignClasses())
            })
        var watch = WatchOptions()
        watch.unreachableByDefault = true
        let run = RecordedRun(
            request: AuditRequest(target: "swift", arguments: ["test"]),
            plan: RunPlan(executablePath: "/usr/bin/swift", watch: watch), outcome: .exited(code: 1),
            received: Reception(
                ledgers: Dictionary(uniqueKeysWithValues: ledgers.indices.map { (UInt8($0), ledgers[$0]) }),
                channel: ChannelSummary(attached: true, attachedProcesses: 4, droppedRecords: 0, flags: [])))
        var recorded = run
        recorded.heapWalks = walks
        let report = ReportBuilder(
            toolVersion: "1", makeSymbolizer: { _ in HeapSnapshotReplay.FixedSymbolizer() },
            inspectExecutable: { _ in .other }
        ).build(from: recorded)
        let unreachable = try XCTUnwrap(report.unreachable)
        XCTAssertEqual(unreachable.processesChecked, 1)
        XCTAssertEqual(
            unreachable.unavailable,
            [
                "process 101 (AppPackageTests.xctest) did not exit normally (it crashed, was killed or called _exit): its heap was not checked"
            ])
    }
}
