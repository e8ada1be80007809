import Foundation
import Synchronization
import XCTest

/// When leak-audit itself dies (a trap, a SIGKILL): the target's processes do not outlive it
/// unsupervised, none waits for it forever, and no report file is left half written
/// (docs/reliability.md, "When leak-audit itself dies").
final class LeakAuditDeathTests: XCTestCase {
    /// A fatal signal (here SIGSEGV sent with kill, as a Swift trap's SIGILL would come): the
    /// target and its child are killed before leak-audit goes, which still dies of the signal; an
    /// existing report file keeps its contents and a new one is never created.
    func testAFatalSignalKillsTheTargetsProcessesAndLeavesTheReportFilesAsTheyWere() throws {
        let directory = try Harness.scratchFolder("death")
        let old = directory + "/old.json"
        try "{\"old\": 1}".write(toFile: old, atomically: true, encoding: .utf8)
        let run = try Self.holdingPair(writingInto: directory)
        defer { run.end() }
        let processes = try run.holdingProcesses(2)

        kill(run.leakAudit, SIGSEGV)
        let died = OrphanedRun.waitUntilGone(processes, within: 1)
        XCTAssertNotNil(died, "the target and its child outlived leak-audit: \(processes), \(run.log)")
        print("LeakAuditDeathTests: the target's 2 processes were gone \(Self.milliseconds(died)) after SIGSEGV")
        // leak-audit still dies of the signal, after the Swift runtime's backtrace.
        XCTAssertNotNil(OrphanedRun.waitUntilGone([run.leakAudit], within: 30), run.log)
        XCTAssertEqual(run.leakAuditStatus.map { $0 & 0x7F }, SIGSEGV, run.log)

        XCTAssertEqual(try String(contentsOfFile: old, encoding: .utf8), "{\"old\": 1}")
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: directory), ["old.json"], "no partial file, no new one")
    }

    /// SIGKILL: nothing of leak-audit runs. Its child dies with it (a parent-death signal), and an
    /// attached grandchild ends itself when it finds leak-audit gone, saying so.
    func testASIGKILLedLeakAuditTakesItsChildAndAnAttachedGrandchildWithIt() throws {
        let directory = try Harness.scratchFolder("death")
        let old = directory + "/old.json"
        try "{\"old\": 1}".write(toFile: old, atomically: true, encoding: .utf8)
        let run = try Self.holdingPair(writingInto: directory)
        defer { run.end() }
        let processes = try run.holdingProcesses(2)

        kill(run.leakAudit, SIGKILL)
        let died = OrphanedRun.waitUntilGone(processes, within: 3)
        XCTAssertNotNil(died, "the target or its child outlived leak-audit: \(processes), \(run.log)")
        print("LeakAuditDeathTests: the target's 2 processes were gone \(Self.milliseconds(died)) after SIGKILL")
        let said = "is gone; ending process "
        XCTAssertTrue(
            run.standardError.contains("leak-audit: the leak-audit (pid \(run.leakAudit)) auditing this process \(said)"), run.log
        )

        // The old report as it was; what was being written has a name that says it is partial.
        XCTAssertEqual(try String(contentsOfFile: old, encoding: .utf8), "{\"old\": 1}")
        let others = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0 != "old.json" }
        XCTAssertEqual(others.count, 2, "\(others)")
        XCTAssertTrue(others.allSatisfy { $0.hasSuffix(".leak-audit-\(run.leakAudit).partial") }, "\(others)")
    }

    /// SIGTERM or SIGHUP sent to leak-audit reaches its child only (as CI's timeout sends it; these
    /// runs, a shell's background jobs, ignore SIGINT), and so does --timeout's SIGTERM: a
    /// grandchild the child does not pass it to (swift test's test bundle, in a process group of
    /// its own; here a shell's background job) is killed once the child has ended, and the report,
    /// saying how the child ended, is written.
    func testAStoppedLeakAuditLeavesNoGrandchildRunningAndStillReports() throws {
        let fixture = try Harness.fixture("FaultEndings")
        let script = #""$0" hold & wait"#
        for (stop, options) in [("SIGTERM", []), ("SIGHUP", []), ("--timeout 1", ["--timeout", "1"])] {
            let run = try OrphanedRun(["run"] + options + ["--", "sh", "-c", script, fixture])
            defer { run.end() }
            let grandchild = try run.holdingProcesses(1)
            if stop == "SIGTERM" { kill(run.leakAudit, SIGTERM) }
            if stop == "SIGHUP" { kill(run.leakAudit, SIGHUP) }
            let leakAuditEnded = OrphanedRun.waitUntilGone([run.leakAudit], within: 30)
            XCTAssertNotNil(leakAuditEnded, "\(stop): \(run.log)")
            XCTAssertNotNil(
                OrphanedRun.waitUntilGone(grandchild, within: 3),
                "\(stop): the grandchild outlived leak-audit: \(grandchild), \(run.log)")
            let signalNumber = stop == "SIGHUP" ? SIGHUP : SIGTERM
            XCTAssertTrue(run.standardError.contains("'sh' killed by signal \(signalNumber)"), "\(stop): \(run.log)")
            print(
                "LeakAuditDeathTests: \(stop): leak-audit ended \(Self.milliseconds(leakAuditEnded)) after the signal or the holder's start, its grandchild with it"
            )
        }
    }

    /// A process waiting on leak-audit (for a heap walk, for room in a full ring) when leak-audit
    /// dies stops waiting at once, though the dead leak-audit is a zombie (its parent has not
    /// waited for it), which kill(pid, 0) still finds.
    func testAProcessWaitingOnALeakAuditThatDiedStopsWaiting() throws {
        let fixture = try Harness.fixture("FaultEndings")
        // Asking for a heap walk at exit (--retainers), while leak-audit is stopped.
        let walk = try OrphanedRun(["run", "--retainers", "--", "sh", "-c", #""$0" hold & wait"#, fixture])
        defer { walk.end() }
        let waiting = try walk.holdingProcesses(1)
        kill(walk.leakAudit, SIGSTOP)
        kill(waiting[0], SIGUSR1)
        usleep(500_000)
        XCTAssertNil(OrphanedRun.waitUntilGone(waiting, within: 0), "it waits for the walk while leak-audit is stopped")
        kill(walk.leakAudit, SIGKILL)
        let walkEnded = OrphanedRun.waitUntilGone(waiting, within: 3)
        XCTAssertNotNil(walkEnded, "it still waits for a heap walk: \(walk.log)")
        XCTAssertTrue(walk.standardError.contains("auditing this process is gone; ending process \(waiting[0])"), walk.log)
        XCTAssertTrue(OrphanedRun.isZombie(walk.leakAudit), "the test is of a zombie leak-audit")

        // Waiting for room in a ring of 64 slots that a stopped leak-audit no longer empties.
        let ring = try OrphanedRun(
            ["run", "--", "sh", "-c", #""$0" churn & wait"#, fixture], environment: ["LEAK_AUDIT_CHANNEL_SLOTS": "64"])
        defer { ring.end() }
        let churning = try ring.holdingProcesses(1, saying: "churning")
        kill(ring.leakAudit, SIGSTOP)
        usleep(300_000)
        kill(ring.leakAudit, SIGKILL)
        let ringEnded = OrphanedRun.waitUntilGone(churning, within: 3)
        XCTAssertNotNil(ringEnded, "it still waits for room in the ring: \(ring.log)")
        print(
            "LeakAuditDeathTests: a heap walk's wait ended \(Self.milliseconds(walkEnded)), a full ring's \(Self.milliseconds(ringEnded)) after SIGKILL"
        )
    }

    /// A run that ends well replaces a report file whole (a new file renamed over it: another
    /// inode), with the old file's mode, and leaves no partial file; a file with another hard link
    /// is written in place, so that both names still show it.
    func testAReportFileIsReplacedWholeWithItsModeAndAHardLinkedOneInPlace() throws {
        let directory = try Harness.scratchFolder("death")
        let report = directory + "/report.json"
        let linked = directory + "/linked.sarif"
        for path in [report, linked] { try "{\"old\": 1}".write(toFile: path, atomically: true, encoding: .utf8) }
        XCTAssertEqual(chmod(report, 0o640), 0)
        XCTAssertEqual(link(linked, directory + "/other-name.sarif"), 0)
        let before = try Self.inode(report)
        let result = Harness.run([
            Harness.leakAudit, "run", "--output-json", report, "--output-sarif", linked, try Harness.fixture("GenericBoxes"),
        ])
        XCTAssertEqual(result.status, 1, result.log)
        XCTAssertTrue(try String(contentsOfFile: report, encoding: .utf8).contains("\"schemaVersion\""))
        XCTAssertNotEqual(try Self.inode(report), before, "renamed over, not written in place")
        let mode = try FileManager.default.attributesOfItem(atPath: report)[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o640)
        XCTAssertTrue(try String(contentsOfFile: directory + "/other-name.sarif", encoding: .utf8).contains("\"$schema\""))
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: directory).sorted(),
            ["linked.sarif", "other-name.sarif", "report.json"])
    }

    private static func inode(_ path: String) throws -> UInt64 {
        var info = stat()
        guard stat(path, &info) == 0 else { throw HarnessError.missingText(path) }
        return UInt64(info.st_ino)
    }

    /// leak-audit writing the JSON report over `directory`/old.json and a new HTML report, its
    /// target a FaultEndings process that holds, with a child of its own that holds too.
    private static func holdingPair(writingInto directory: String) throws -> OrphanedRun {
        let script = #""$0" hold & exec "$0" hold"#
        let reports = ["--output-json", directory + "/old.json", "--output-html", directory + "/new.html"]
        return try OrphanedRun(["run"] + reports + ["--", "sh", "-c", script, try Harness.fixture("FaultEndings")])
    }

    private static func milliseconds(_ seconds: Double?) -> String {
        seconds.map { "in \(Int($0 * 1000)) ms" } ?? "never"
    }
}

/// `leak-audit …` started by a shell that then becomes `sleep` and never waits for it: when
/// leak-audit dies it stays a zombie, as under a parent that has not yet waited, and its status
/// stays readable in /proc. The target's lines come through a pipe; standard error goes to a file.
final class OrphanedRun: @unchecked Sendable {
    private(set) var leakAudit: pid_t = 0
    private let wrapper: Process
    private let errorPath: String
    private let output = Mutex("")
    private var started: [pid_t] = []

    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        errorPath = Harness.scratchPath("stderr")
        guard FileManager.default.createFile(atPath: errorPath, contents: nil) else {
            throw HarnessError.missingText("a file at \(errorPath)")
        }
        wrapper = Process()
        wrapper.executableURL = URL(fileURLWithPath: "/bin/sh")
        wrapper.arguments = ["-c", #""$0" "$@" & echo "leak-audit pid $!"; exec sleep 120"#, Harness.leakAudit] + arguments
        wrapper.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let pipe = Pipe()
        wrapper.standardOutput = pipe
        wrapper.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
        wrapper.standardInput = FileHandle.nullDevice
        try wrapper.run()
        let reading = pipe.fileHandleForReading
        Thread.detachNewThread { [self] in
            while true {
                let chunk = reading.availableData
                if chunk.isEmpty { return }
                output.withLock { $0 += String(decoding: chunk, as: UTF8.self) }
            }
        }
        let line = try waitForLines(prefix: "leak-audit pid ", count: 1)[0]
        leakAudit = try XCTUnwrap(pid_t(line.dropFirst("leak-audit pid ".count)))
    }

    /// The pids of `count` processes of the FaultEndings fixture that said "holding" (or `saying`).
    func holdingProcesses(_ count: Int, saying word: String = "holding") throws -> [pid_t] {
        let prefix = "FaultEndings: \(word), pid "
        let pids = try waitForLines(prefix: prefix, count: count).compactMap { pid_t($0.dropFirst(prefix.count)) }
        started += pids
        return pids
    }

    private func waitForLines(prefix: String, count: Int) throws -> [String] {
        for _ in 0..<3000 {
            let lines = output.withLock { $0 }.split(separator: "\n").filter { $0.hasPrefix(prefix) }.map(String.init)
            if lines.count >= count { return lines }
            usleep(10_000)
        }
        throw HarnessError.missingText("\(count) × \(prefix) in \(log)")
    }

    var standardError: String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }

    var log: String { "--- stdout\n\(output.withLock { $0 })\n--- stderr\n\(standardError)" }

    /// leak-audit's wait status, while it is a zombie (the 52nd field of /proc/<pid>/stat).
    var leakAuditStatus: Int32? {
        Self.statFields(leakAudit).flatMap { $0.count > 49 ? Int32($0[49]) : nil }
    }

    /// Kills whatever is left (by pid): the processes seen, leak-audit, and the sleep under which
    /// it is a zombie.
    func end() {
        for pid in started + [leakAudit] { kill(pid, SIGKILL) }
        wrapper.terminate()
        wrapper.waitUntilExit()
    }

    /// The fields of /proc/<pid>/stat from the state on (the name may hold spaces), nil when the
    /// process is gone.
    private static func statFields(_ pid: pid_t) -> [Substring]? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let nameEnd = stat.lastIndex(of: ")")
        else { return nil }
        return stat[stat.index(after: nameEnd)...].split { $0 == " " || $0 == "\n" }
    }

    static func isZombie(_ pid: pid_t) -> Bool { statFields(pid)?.first == "Z" }

    /// True when `pid` no longer runs: no such process, or a zombie.
    static func isGone(_ pid: pid_t) -> Bool {
        guard let state = statFields(pid)?.first else { return true }
        return state == "Z" || state == "X"
    }

    /// Seconds until every process of `pids` was gone, polling every 10 ms; nil when one still ran
    /// after `seconds`.
    static func waitUntilGone(_ pids: [pid_t], within seconds: Double) -> Double? {
        let start = ContinuousClock.now
        while true {
            let elapsed = ContinuousClock.now - start
            let elapsedSeconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            if pids.allSatisfy(isGone) { return elapsedSeconds }
            if elapsedSeconds >= seconds { return nil }
            usleep(10_000)
        }
    }
}
