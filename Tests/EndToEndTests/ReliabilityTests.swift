import Foundation
import LeakAuditModel
import XCTest

/// What leak-audit does when the target misbehaves: it writes into leak-audit's channel what
/// LeakMonitor never would (docs/reliability.md lists every case and what was observed).
final class ReliabilityTests: XCTestCase {
    /// `timeout 120 leak-audit run --output-json TMP args…`: a hang fails the test instead of CI.
    /// Nothing else is given, as a user would run it: HostileWriter links no LeakMonitor, so its
    /// shim attaches at its exit, into the channel it wrote over, to have its unreachable objects
    /// checked.
    private func audit(_ arguments: [String]) throws -> (result: Harness.CommandResult, report: AuditReport) {
        let jsonPath = Harness.scratchPath("report.json")
        let result = Harness.run(["timeout", "120", Harness.leakAudit, "run", "--output-json", jsonPath] + arguments)
        XCTAssertNotEqual(result.status, 124, "leak-audit hung: \(result.log)")
        return (result, try Harness.readReport(jsonPath))
    }

    /// How a target ended, as the report says it: `code n` or `signal n`.
    private func ending(_ report: AuditReport) -> String {
        switch report.target.outcome {
        case .exited(let code): "code \(code)"
        case .signaled(let signal): "signal \(signal)"
        case .running: "running"
        }
    }

    private func sessions(_ report: AuditReport) throws -> AuditReport.TrackedType {
        try XCTUnwrap(report.types.first { $0.name == "FaultEndings.Session" }, "\(report.types.map(\.name))")
    }

    func testEveryEndingReportsEveryRecordWrittenBeforeItAndHowTheTargetEnded() throws {
        let fixture = try Harness.fixture("FaultEndings")
        // The ending, the sessions alive at the peak, and how the target ended ("signal" alone: any).
        let cases: [(String, Int, String)] = [
            ("return", 3, "code 0"), ("exit", 3, "code 7"), ("_exit", 3, "code 7"), ("trap", 3, "signal"),
            ("abort", 3, "signal 6"), ("segv", 3, "signal 11"), ("sigkill", 3, "signal 9"), ("stack-overflow", 3, "signal 11"),
            ("close-fds", 5, "code 0"), ("dup2-fds", 5, "code 0"), ("setrlimit", 5, "code 0"), ("chdir", 5, "code 0"),
            ("unsetenv", 5, "code 0"), ("clearenv", 5, "code 0"),
        ]
        for (name, peak, outcome) in cases {
            let (result, report) = try audit([fixture, name])
            XCTAssertEqual(result.status, 1, "\(name): the sessions over budget fail the run: \(result.log)")
            let session = try sessions(report)
            XCTAssertEqual(session.peakLive, peak, "\(name): \(result.log)")
            XCTAssertEqual(session.allocatedTotal, peak, "\(name)")
            XCTAssertTrue(ending(report).hasPrefix(outcome), "\(name): \(ending(report)), expected \(outcome)")
            XCTAssertEqual(report.isIncomplete, false, "\(name): \(result.log)")
        }
    }

    func testThreadsStillWritingWhenMainReturnsLoseNothingCommitted() throws {
        let (result, report) = try audit([try Harness.fixture("FaultEndings"), "threads-at-exit"])
        XCTAssertEqual(result.status, 1, result.log)
        XCTAssertEqual(ending(report), "code 0")
        let session = try sessions(report)
        XCTAssertGreaterThanOrEqual(session.peakLive, 3)
        XCTAssertGreaterThan(session.allocatedTotal, 3, "the threads' sessions are counted")
        XCTAssertEqual(report.verdict, .budgetExceeded)
    }

    func testOutOfMemoryUnderAnAddressSpaceLimitStillReports() throws {
        let fixture = try Harness.fixture("FaultEndings")
        let (result, report) = try audit(["sh", "-c", "ulimit -v 4000000 && exec \"$0\" oom", fixture])
        XCTAssertEqual(result.status, 1, result.log)
        XCTAssertEqual(try sessions(report).peakLive, 3, result.log)
        XCTAssertTrue(ending(report).hasPrefix("signal"), "\(ending(report)): \(result.log)")
    }

    func testForkedChildrenNeitherCorruptNorBlockTheParentsRecords() throws {
        let fixture = try Harness.fixture("FaultEndings")
        // fork and exec: the child is a process of its own, with its own three sessions.
        let (execd, execReport) = try audit([fixture, "fork-exec"])
        XCTAssertEqual(execd.status, 1, execd.log)
        XCTAssertEqual(execReport.target.attachedProcesses, 2, execd.log)
        XCTAssertEqual(try sessions(execReport).peakLive, 3)
        XCTAssertEqual(try sessions(execReport).liveAtExit, 6)

        // fork without exec, the child killed while it allocates: the parent's counts are exact,
        // the child (a copy of the parent) writes nothing, and more than a ring of the parent's
        // records after the kill are all read.
        let (forked, forkReport) = try audit([fixture, "fork-killed"])
        XCTAssertEqual(forked.status, 1, forked.log)
        XCTAssertEqual(ending(forkReport), "code 0")
        let session = try sessions(forkReport)
        XCTAssertEqual(session.peakLive, 5, forked.log)
        XCTAssertEqual(session.liveAtExit, 5)
        XCTAssertEqual(session.allocatedTotal, 600_005)
        XCTAssertEqual(forkReport.isIncomplete, false, forked.log)
        XCTAssertTrue(
            forkReport.warnings.contains { $0.hasPrefix("1 child forked without exec was not audited") },
            forked.log)
    }

    /// The counts ConcurrentLoad printed for itself: `peak N total N alive N`.
    private func selfCounted(_ stdout: String) throws -> [String: Int] {
        let line = try XCTUnwrap(stdout.split(separator: "\n").first { $0.hasPrefix("ConcurrentLoad:") }, stdout)
        let words = line.split(separator: " ").map(String.init)
        var counts: [String: Int] = [:]
        for (index, word) in words.enumerated() where ["peak", "total", "alive"].contains(word) {
            counts[word] = Int(words[index + 1])
        }
        return counts
    }

    func testSixtyFourThreadsCreatingAndFreeingAtOnceAreCountedExactly() throws {
        let fixture = try Harness.fixture("ConcurrentLoad")
        // Opted in through LeakMonitor, then watched through --budget without it.
        for (arguments, options, name) in [
            (["64", "10000"], [String](), "ConcurrentLoad.Session"),
            (["64", "10000", "plain"], ["--budget", "ConcurrentLoad.Plain=1"], "ConcurrentLoad.Plain"),
        ] {
            let (result, report) = try audit(options + [fixture] + arguments)
            XCTAssertEqual(result.status, 1, result.log)
            let counted = try selfCounted(result.stdout)
            let type = try XCTUnwrap(report.types.first { $0.name == name }, "\(report.types.map(\.name))")
            XCTAssertEqual(type.peakLive, counted["peak"], name)
            XCTAssertEqual(type.allocatedTotal, counted["total"], name)
            XCTAssertEqual(type.liveAtExit, counted["alive"], name)
            XCTAssertEqual(report.droppedRecords, 0, name)
            XCTAssertEqual(report.isIncomplete, false, name)
        }
    }

    func testOnlyTheSameUsersProcessesCanOpenTheChannelAndNoneInheritsIt() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else {
            throw XCTSkip("needs root and setpriv, to try the channel as another user")
        }
        // A shell under leak-audit: does it hold the memfd, and can user nobody open it?
        let script = #"""
            pid=${LEAK_AUDIT_CHANNEL%%:*}; rest=${LEAK_AUDIT_CHANNEL#*:}; fd=${rest%%:*}
            echo "inherited: $(ls -l /proc/$$/fd | grep -c 'memfd:leak-audit-records')"
            exec 3<>"/proc/$pid/fd/$fd" && echo "same user: opened" && exec 3>&-
            setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "exec 3<>/proc/$pid/fd/$fd" 2>/dev/null \
                && echo "other user: opened" || echo "other user: denied"
            """#
        let result = Harness.run([Harness.leakAudit, "run", "sh", "-c", script])
        XCTAssertTrue(result.stdout.contains("inherited: 0"), result.log)
        XCTAssertTrue(result.stdout.contains("same user: opened"), result.log)
        XCTAssertTrue(result.stdout.contains("other user: denied"), result.log)
    }

    func testAVariableLeftFromAnotherRunWritesIntoNoReport() throws {
        // The same channel named with another run's token, as a daemon started by an earlier run
        // (whose leak-audit pid and descriptor were reused since) would hold it.
        let fixture = try Harness.fixture("FaultEndings")
        let (stale, report) = try audit([
            "sh", "-c", #"LEAK_AUDIT_CHANNEL="${LEAK_AUDIT_CHANNEL%:*}:1234" exec "$0" return"#, fixture,
        ])
        XCTAssertTrue(stale.stdout.contains("FaultEndings: 3 sessions alive"), stale.log)
        XCTAssertEqual(stale.status, 3, "nothing attached: \(stale.log)")
        XCTAssertEqual(report.target.attached, false)
        // The run's own variable, passed on unchanged, attaches as usual.
        let (own, _) = try audit(["sh", "-c", #"exec "$0" return"#, fixture])
        XCTAssertEqual(own.status, 1, own.log)
    }

    func testASetUserIDTargetOfAnotherUserIsRefusedWithExit4() throws {
        guard getuid() == 0 else { throw XCTSkip("needs root, to give a copy of a fixture to another user") }
        let copy = Harness.scratchPath("FaultEndings")
        try FileManager.default.copyItem(atPath: try Harness.fixture("FaultEndings"), toPath: copy)
        XCTAssertEqual(chown(copy, 65534, 65534), 0)
        XCTAssertEqual(chmod(copy, 0o4755), 0)
        let result = Harness.run([Harness.leakAudit, "run", copy])
        XCTAssertEqual(result.status, 4, result.log)
        XCTAssertEqual(
            result.stderr,
            "leak-audit: error: target '\(copy)' is set-user-ID or set-group-ID, so it would run as another user, whose process cannot write into leak-audit's channel: audit a copy without that bit (cp, then chmod u-s,g-s)\n"
        )
        XCTAssertFalse(result.stdout.contains("FaultEndings:"), "it was not started")
    }

    func testAModuleThatIsAFIFOIsNotOpenedAndItsNameIsEscaped() throws {
        let directory = try Harness.scratchFolder("hostile")
        let (result, report) = try audit([try Harness.fixture("HostileWriter"), "module-fifo", directory])
        XCTAssertEqual(result.status, 1, "well-formed records: the type is over budget: \(result.log)")
        XCTAssertEqual(report.types.first?.name, "Hostile.Thing", "\(report.types.map(\.name))")
        let warnings = report.warnings
        XCTAssertTrue(
            warnings.contains { $0.contains("/lib\n\u{1B}[31mfifo.so' is not a regular file, so it was not read") }, "\(warnings)"
        )
        // The text report on stderr: the name escaped, no raw escape character or line break in it.
        XCTAssertTrue(result.stderr.contains("lib\\u{a}\\u{1b}[31mfifo.so"), result.log)
        XCTAssertFalse(result.stderr.unicodeScalars.contains { $0.value == 0x1B }, result.log)
    }

    func testAStackDeeperThanAnyCaptureAndANameOfAMegabyteAreCutAndSaidSo() throws {
        // Issue 29: 1,500,000 addresses took 3.75 GB for the JSON and crashed the HTML; a 1 MB name
        // made 195 MB of HTML. Here 200,000 addresses and a 1 MB name, in the default ring.
        let html = Harness.scratchPath("report.html")
        let (result, report) = try audit([
            "--output-html", html, try Harness.fixture("HostileWriter"), "deep-stacks", "1", "200000", "1048576",
        ])
        XCTAssertEqual(result.status, 1, "the type is over budget, damage or not: \(result.log)")
        let type = try XCTUnwrap(report.types.first)
        XCTAssertEqual(type.name, "Hostile.Type0" + String(repeating: "N", count: 4096 - 13) + "…")
        let group = try XCTUnwrap(type.allocations.first)
        XCTAssertEqual(group.frames.count, 48, "the innermost 48 frames")
        XCTAssertEqual(group.truncated, true)
        XCTAssertEqual(report.isIncomplete, true, "a stack no capture writes is damage")
        let warnings = report.warnings
        XCTAssertTrue(
            warnings.contains(
                "1 allocation stack held more than the 48 frames LeakMonitor records (199952 more): each was cut to its innermost 48, and counted as damage"
            ), "\(warnings)")
        XCTAssertTrue(
            warnings.contains("1 type or test name was longer than 4096 bytes: cut there, ending in '…'"), "\(warnings)")
        let page = try String(contentsOfFile: html, encoding: .utf8)
        XCTAssertLessThan(page.utf8.count, 200_000, "a page of kilobytes")
        XCTAssertTrue(page.contains("</html>"))
    }

    func testAProcessWritingIntoTheChannelNeverGetsACleanReport() throws {
        let hostile = try Harness.fixture("HostileWriter")
        for mode in ["unknown-types", "huge-type-id", "huge-next-slot", "dropped-max", "garbage"] {
            let (result, report) = try audit([hostile, mode])
            XCTAssertEqual(result.status, 5, "\(mode): \(result.log)")
            XCTAssertTrue(result.stdout.contains("HostileWriter: wrote \(mode)"), "\(mode): \(result.log)")
            XCTAssertEqual(report.verdict, .incomplete, mode)
            XCTAssertEqual(report.isIncomplete, true, mode)
            XCTAssertGreaterThan(report.damagedRecords + (report.droppedRecords > 0 ? 1 : 0), 0, mode)
            // No type the target never defined is reported as if it were one.
            let names = report.types.map(\.name)
            XCTAssertFalse(names.contains { $0.hasPrefix("<type") }, "\(mode): \(names)")
            // The text report's verdict, its lines unwrapped.
            let text = result.stderr.replacingOccurrences(of: "\n  ", with: " ")
            XCTAssertTrue(text.contains("but the report is incomplete ("), "\(mode): \(result.log)")
            XCTAssertFalse(result.stderr.contains("Fatal error"), "\(mode): \(result.log)")
        }
        // Its shim, attaching at exit to have its unreachable objects checked, finds the channel's
        // `next_slot` written over: it drops its records at once instead of waiting for room that
        // never comes, and the report says that the process asking was not checked.
        let (_, garbage) = try audit([hostile, "garbage"])
        XCTAssertGreaterThan(garbage.droppedRecords, 0)
        XCTAssertEqual(
            garbage.unreachable?.unavailable,
            [
                "a process that never said who it was: it asked before leak-audit had read who it was (its records lost, damaged or held up behind damaged ones), so its heap was not checked"
            ])
        // Every record of a type never defined counts, not only the first.
        let (_, unknown) = try audit([hostile, "unknown-types"])
        XCTAssertEqual(unknown.damagedRecords, 100)
    }

    // MARK: - Hostile target, second round (issue 29)

    /// The tracked types of a report as "name max N peak P".
    private func types(_ report: AuditReport) -> [String] {
        report.types.map { "\($0.name) max \($0.max) peak \($0.peakLive)" }
    }

    /// The channel truncated to 0 bytes, and to one page with a record after: leak-audit's memfd
    /// is sealed against shrinking, so it is refused, and the report is whole (it was a SIGBUS).
    func testTruncatingTheChannelIsRefusedAndTheReportIsWhole() throws {
        let (result, report) = try audit([try Harness.fixture("HostileWriter"), "truncate"])
        XCTAssertTrue(
            result.stdout.contains("truncation to 0 bytes: Operation not permitted; to one page: Operation not permitted"),
            result.log)
        XCTAssertEqual(result.status, 1, "the type over budget: \(result.log)")
        XCTAssertEqual(types(report), ["Hostile.Thing max 1 peak 3"])
    }

    /// Once the type over budget was read, the header page covered with random words, or its
    /// flags and attached fields zeroed: the finding stays (exit 1, not 3 "not audited"), the
    /// report is incomplete with a line for each contradiction, and no absurd figure is printed.
    func testAHeaderWrittenOverKeepsTheFindingAndIsDamage() throws {
        for mode in ["header-random", "header-zeroed"] {
            let (result, report) = try audit([try Harness.fixture("HostileWriter"), mode])
            XCTAssertEqual(result.status, 1, "\(mode): \(result.log)")
            XCTAssertEqual(types(report), ["Hostile.Thing max 1 peak 3"], mode)
            XCTAssertEqual(report.isIncomplete, true, "\(mode): \(result.log)")
            XCTAssertTrue(
                report.warnings.contains { $0.hasPrefix("the header of leak-audit's channel was written over: ") },
                "\(mode): \(report.warnings)")
            XCTAssertNil(result.stderr.range(of: "[0-9]{10,}", options: .regularExpression), "\(mode): \(result.log)")
        }
        // Its shim attaches at exit (to have the unreachable objects checked), so the header counts
        // an attached process again; the zeroed flags still contradict the records.
        let (_, zeroed) = try audit([try Harness.fixture("HostileWriter"), "header-zeroed"])
        XCTAssertTrue(
            zeroed.warnings.contains(
                "the header of leak-audit's channel was written over: its flags say that no process linked LeakMonitor, but types whose budget is declared in code arrived"
            ), "\(zeroed.warnings)")
    }

    /// A second definition of a type (another name, max 1,000): damage, and the first stands.
    func testATypeDefinedAgainIsDamageAndTheFirstDefinitionStands() throws {
        let (result, report) = try audit([try Harness.fixture("HostileWriter"), "redefine"])
        XCTAssertEqual(result.status, 1, result.log)
        XCTAssertEqual(types(report), ["Hostile.Thing max 1 peak 3"])
        XCTAssertEqual(report.damagedRecords, 1)
        XCTAssertTrue(report.warnings.contains { $0.contains("or defined a type again (the first definition stands)") })
    }

    /// Records for process indexes 1–255 that never announced themselves: damage, and none of
    /// their 255 types is reported.
    func testRecordsOfProcessesThatNeverAnnouncedThemselvesAreDamageAndNotCounted() throws {
        let (result, report) = try audit([try Harness.fixture("HostileWriter"), "unannounced"])
        XCTAssertEqual(result.status, 5, result.log)
        XCTAssertEqual(types(report), [])
        XCTAssertEqual(report.damagedRecords, 255 * 2)
        XCTAssertTrue(
            report.warnings.contains {
                $0.hasPrefix("510 records in leak-audit's channel came from process indexes that never announced themselves")
            }, "\(report.warnings)")
    }

    /// 524,298 slots reserved and never written by a target that exits 0, more than writers can
    /// leave cut short when they end: damage, no clean run (it was exit 0 with a note).
    func testMoreRecordsCutShortThanWritersCanLeaveAreNoCleanRun() throws {
        let (result, report) = try audit([try Harness.fixture("HostileWriter"), "cut-short"])
        XCTAssertEqual(result.status, 5, result.log)
        XCTAssertEqual(report.verdict, .incomplete)
        XCTAssertEqual(report.tornRecords, 524_298)
        // The cut-short slots, and the reservation that made the shim wait when it attached at exit
        // (to have the unreachable objects checked): leak-audit skipped it after ten seconds.
        XCTAssertEqual(report.damagedRecords, 2)
        XCTAssertTrue(
            report.warnings.contains {
                $0.hasPrefix("524298 records were cut short, more than the 65536 that writers can leave unwritten")
            }, "\(report.warnings)")
    }

    /// A whole ring reserved and left empty, then 1,000 records from a writer that waits for room:
    /// leak-audit abandons the empty reservation after ten seconds, the writer goes on, and every
    /// record after it is counted (it waited for ever; the reader skipped one slot every 30 s).
    func testAnEmptyReservationIsAbandonedAndTheWriterAfterItGoesOn() throws {
        let (result, report) = try audit(["--timeout", "90", try Harness.fixture("HostileWriter"), "empty-reservation"])
        XCTAssertTrue(result.stdout.contains("HostileWriter: wrote empty-reservation"), result.log)
        XCTAssertEqual(result.status, 5, result.log)
        let type = try XCTUnwrap(report.types.first)
        XCTAssertEqual(type.allocatedTotal, 1_000)
        XCTAssertEqual(report.tornRecords, 524_288)
        XCTAssertEqual(report.verdict, .incomplete)
        XCTAssertTrue(
            report.warnings.contains {
                $0.hasPrefix("1 reservation in leak-audit's channel stayed empty for more than ten seconds while the processes")
            }, "\(report.warnings)")
    }

    /// A writer held 3 s between reserving a slot and committing it (as a loaded machine or a stop
    /// holds one), while another attached process has ended: its process lives, so its slot is
    /// waited for, not torn, and its record is counted.
    func testAWriterHeldBetweenReservingAndCommittingWhileAnotherProcessEndedLosesNothing() throws {
        let (result, report) = try audit([
            try Harness.fixture("HostileWriter"), "slow-writer", try Harness.fixture("ExitNonZero"),
        ])
        XCTAssertTrue(result.stdout.contains("HostileWriter: wrote slow-writer"), result.log)
        XCTAssertGreaterThanOrEqual(report.target.attachedProcesses, 2, result.log)
        let type = try XCTUnwrap(report.types.first { $0.name == "Hostile.Thing" }, "\(report.types.map(\.name))")
        XCTAssertEqual(type.allocatedTotal, 3, result.log)
        XCTAssertEqual(report.tornRecords, 0)
        XCTAssertEqual(report.damagedRecords, 0)
        XCTAssertEqual(report.isIncomplete, false, result.log)
        XCTAssertEqual(result.status, 1, "the type is over budget: \(result.log)")
    }

    /// A process record naming an unrelated process, then a heap-walk request, with --retainers:
    /// leak-audit neither stops nor reads it, and says why.
    func testAWalkRequestNamingAnUnrelatedProcessIsRefused() throws {
        let sleeper = Process()
        sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleeper.arguments = ["60"]
        try sleeper.run()
        defer { sleeper.terminate() }
        let pid = sleeper.processIdentifier
        let (result, report) = try audit(["--retainers", try Harness.fixture("HostileWriter"), "walk-unrelated", String(pid)])
        XCTAssertTrue(result.stdout.contains("HostileWriter: walk answered"), result.log)
        let type = try XCTUnwrap(report.types.first)
        XCTAssertEqual(
            type.retainersUnavailable,
            ["the pid its process record names is not the target's nor a descendant's, so leak-audit did not stop or read it"])
        XCTAssertTrue(sleeper.isRunning)
    }

    /// A configuration of 10,000 budgets (439 KB of watch lines, over the 128 KiB the kernel lets
    /// one environment string hold): the lines go through the channel's file, and the last budget
    /// is the one that matches (it was "could not be started: argument list too long", exit 4).
    func testBudgetsTooLargeForTheEnvironmentReachTheTargetThroughTheChannel() throws {
        let config = Harness.scratchPath("huge.json")
        let budgets =
            (0..<9_999).map { #"{"type": "App.Type\#($0)WithAFairlyLongNameToo", "max": 1}"# }
            + [#"{"type": "UninstrumentedGallery.GalleryViewModel", "max": 2}"#]
        try #"{"version": 1, "budgets": [\#(budgets.joined(separator: ","))]}"#.write(
            toFile: config, atomically: true, encoding: .utf8)
        let audit = try Harness.audit("UninstrumentedGallery", extraOptions: ["--config", config])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let model = try audit.trackedType(".GalleryViewModel")
        XCTAssertEqual(model.max, 2)
        XCTAssertEqual(
            model.budget, .pattern(BudgetPattern(pattern: "UninstrumentedGallery.GalleryViewModel", max: 2, origin: config)))
    }
}
