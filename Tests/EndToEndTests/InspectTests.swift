import Foundation
import LeakAuditModel
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// `leak-audit inspect PID` on a running service (Fixtures' LeakingService): two snapshots and
/// their diff, the service going on untouched, each process it refuses with its line and exit
/// code, and a leak-audit that dies while the service is stopped letting it go on.
final class InspectTests: XCTestCase {
    /// A service with a heap large enough to be found stopped (LeakingService's is copied in a few
    /// milliseconds), built once with swiftc: it serves a request a millisecond for the seconds
    /// given, leaking one cycle (a request and its handler) in ten and keeping a cache bounded at
    /// 50 entries, with `ballast` megabytes of memory touched (and with a third argument, threads
    /// that start and end all the time), then prints its last line.
    private static let ballastService: Result<String, Error> = Result {
        let folder = try Harness.scratchFolder("inspect-service")
        let source = folder + "/service.swift"
        try """
        import Foundation

        final class Request { var id: Int; var handler: Handler?; init(id: Int) { self.id = id } }
        final class Handler { var request: Request?; var body = [UInt8](repeating: 1, count: 200) }
        final class CacheEntry { let key: Int; let data: [Int]; init(key: Int) { self.key = key; data = Array(0..<32) } }
        final class Service { var cache: [Int: CacheEntry] = [:]; var served = 0; var ballast: [[UInt8]] = [] }

        let service = Service()
        let seconds = Double(CommandLine.arguments[1]) ?? 3
        for _ in 0..<(Int(CommandLine.arguments[2]) ?? 0) { service.ballast.append([UInt8](repeating: 7, count: 1 << 20)) }
        if CommandLine.arguments.count > 3 {
            // Threads that start and end all the time, at most 8 at once: some start while
            // leak-audit stops the others.
            let slots = DispatchSemaphore(value: 8)
            Thread {
                while true {
                    slots.wait()
                    Thread {
                        _ = Request(id: 0)
                        slots.signal()
                    }.start()
                    usleep(200)
                }
            }.start()
        }
        print("serving"); fflush(stdout)
        let start = Date()
        var number = 0
        while Date().timeIntervalSince(start) < seconds {
            number += 1
            let request = Request(id: number)
            if number % 10 == 0 {
                let handler = Handler()
                handler.request = request
                request.handler = handler
            }
            service.cache[number % 50] = CacheEntry(key: number)
            service.served += 1
            usleep(1_000)
        }
        print("served \\(service.served) requests, cache \\(service.cache.count)")
        """.write(toFile: source, atomically: true, encoding: .utf8)
        let result = Harness.run(["swiftc", "-g", "-Onone", source, "-o", folder + "/service"])
        guard result.status == 0 else { throw HarnessError.buildFailed(result.log) }
        return folder + "/service"
    }

    /// A service, started with its output to a file.
    private struct Running {
        var process: Process
        var output: String
        var pid: Int32 { process.processIdentifier }

        /// Its output so far.
        var printed: String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }
    }

    /// LeakingService for `seconds`, or with `ballastMegabytes` the service with a large heap;
    /// returned once it prints its first line.
    private func start(seconds: Double, ballastMegabytes: Int? = nil, threadChurn: Bool = false) throws -> Running {
        let process = Process()
        if let ballastMegabytes {
            process.executableURL = URL(fileURLWithPath: try Self.ballastService.get())
            process.arguments = [String(seconds), String(ballastMegabytes)] + (threadChurn ? ["threads"] : [])
        } else {
            process.executableURL = URL(fileURLWithPath: try Harness.fixture("LeakingService"))
            process.arguments = [String(seconds)]
        }
        let output = Harness.scratchPath("service.out")
        FileManager.default.createFile(atPath: output, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        process.standardError = FileHandle.nullDevice
        try process.run()
        let running = Running(process: process, output: output)
        let deadline = Date().addingTimeInterval(30)
        while running.printed.isEmpty && process.isRunning && Date() < deadline { usleep(10_000) }
        XCTAssertFalse(running.printed.isEmpty, "the service did not start")
        return running
    }

    /// Waits for the service to end: it ends by itself, exit 0, with its last line, within 60
    /// seconds (one left stopped is killed, and fails the test, rather than hang it).
    private func finish(_ running: Running, file: StaticString = #filePath, line: UInt = #line) {
        let deadline = Date().addingTimeInterval(60)
        while running.process.isRunning && Date() < deadline { usleep(20_000) }
        if running.process.isRunning {
            XCTFail("the service did not end (state \(Self.state(of: running.pid) ?? "?"))", file: file, line: line)
            kill(running.pid, SIGKILL)
        }
        running.process.waitUntilExit()
        XCTAssertEqual(running.process.terminationReason, .exit, file: file, line: line)
        XCTAssertEqual(running.process.terminationStatus, 0, file: file, line: line)
        XCTAssertTrue(
            running.printed.contains("served ") && running.printed.contains("cache"),
            "the service did not print its last line: \(running.printed)", file: file, line: line)
    }

    private func census(_ report: AuditReport, _ type: String) throws -> AuditReport.CensusEntry {
        try XCTUnwrap(
            report.census?.entries.first { $0.name == "LeakingService.\(type)" }, "\(report.census?.entries.map(\.name) ?? [])")
    }

    func testTwoSnapshotsASecondApartShowTheCyclesGrowAndTheCacheNot() throws {
        // Long enough for two inspections a second apart on a busy machine.
        let running = try start(seconds: 8)
        // Over 64 requests cached: the cache is full.
        usleep(500_000)
        let first = Harness.scratchPath("first.json")
        let second = Harness.scratchPath("second.json")
        // Exit 1: unreachable objects of the program's types (the leaked cycles).
        let text = Harness.run([Harness.leakAudit, "inspect", String(running.pid), "--output-json", first])
        XCTAssertEqual(text.status, 1, text.log)
        sleep(1)
        let json = Harness.run([Harness.leakAudit, "inspect", "--format", "json", "-o", second, String(running.pid)])
        XCTAssertEqual(json.status, 1, json.log)
        finish(running)

        // The text: the process, how long it was stopped, the census with bytes, the largest.
        let prose = Harness.prose(text.stdout)
        XCTAssertTrue(prose.contains("inspected pid \(running.pid) (LeakingService), stopped "), text.stdout)
        XCTAssertTrue(prose.contains("alive when inspected"), text.stdout)
        XCTAssertTrue(prose.contains("held by global LeakingService.service: Service"), text.stdout)
        XCTAssertTrue(prose.contains("UNREACHABLE"), text.stdout)
        // That no stack was recorded is said once.
        XCTAssertEqual(prose.components(separatedBy: "no allocation").count, 2, text.stdout)
        XCTAssertEqual(text.stderr, "", "nothing on standard error")

        for path in [first, second] { try Harness.validateAgainstSchema(path) }
        let (before, after) = (try Harness.readReport(first), try Harness.readReport(second))
        XCTAssertEqual(before.target.kind, .inspectedProcess)
        XCTAssertEqual(before.target.outcome, .running)
        XCTAssertEqual(before.target.processes.map(\.pid), [running.pid])
        let stopped = try XCTUnwrap(before.target.stoppedMicroseconds)
        XCTAssertGreaterThan(stopped, 0)
        // One service, 64 cache entries, a cycle in ten requests (25 a second): counted, with
        // their bytes.
        XCTAssertEqual(try census(before, "Service").liveAtExit, 1)
        XCTAssertEqual(try census(before, "ResponseCache").liveAtExit, 1)
        XCTAssertEqual(try census(before, "CacheEntry").liveAtExit, 64)
        XCTAssertEqual(try census(after, "CacheEntry").liveAtExit, 64)
        let (cyclesBefore, cyclesAfter) = (try census(before, "Request").liveAtExit, try census(after, "Request").liveAtExit)
        XCTAssertGreaterThan(cyclesBefore, 5)
        XCTAssertGreaterThan(cyclesAfter, cyclesBefore + 10, "a second later, about 25 more cycles")
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(try census(before, "Request").bytes), 16 * cyclesBefore)
        // The service's global holds the cache: among the largest, by its name.
        let largest = try XCTUnwrap(before.largestRetained)
        XCTAssertTrue(
            largest.contains {
                $0.root == .init(kind: .global, name: "LeakingService.service") && $0.path.last?.type == "LeakingService.Service"
            }, "\(largest)")
        XCTAssertTrue(largest.contains { $0.root.kind == .cycle }, "the leaked cycles are among the largest: \(largest)")
        // The leaked cycles, unreachable: one group, a cycle of a Request and its Response, one
        // structure per leaked request, more a second later.
        func cycles(_ report: AuditReport) throws -> UnreachableObjects.Group {
            let unreachable = try XCTUnwrap(report.unreachable)
            XCTAssertEqual(unreachable.processesChecked, 1)
            XCTAssertEqual(unreachable.groups.filter { !$0.isInternal }.count, 1, "\(unreachable.groups)")
            return try XCTUnwrap(unreachable.groups.first { !$0.isInternal })
        }
        let (leakedBefore, leakedAfter) = (try cycles(before), try cycles(after))
        XCTAssertEqual(leakedBefore.shape, .cycle)
        XCTAssertEqual(
            Set(leakedBefore.path.map(\.type)), ["LeakingService.Request", "LeakingService.Response"], "\(leakedBefore.path)")
        XCTAssertEqual(leakedBefore.objects, 2 * leakedBefore.count)
        XCTAssertGreaterThan(leakedAfter.count, leakedBefore.count + 10)
        XCTAssertEqual(leakedBefore.allocations, [], "nothing recorded allocations")

        // The diff: the cycles grew (exit 1: unreachable objects of the program's types grew), the
        // cache did not; the census fails nothing.
        let diff = Harness.run([Harness.leakAudit, "report", "--diff", first, second])
        XCTAssertEqual(diff.status, 1, diff.log)
        let lines = diff.stdout.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.contains { $0.hasPrefix("  GREW cycle ") && $0.contains("Request") }, diff.stdout)
        XCTAssertTrue(lines.contains { $0.hasPrefix("  GREW LeakingService.Request: ") }, diff.stdout)
        XCTAssertTrue(lines.contains { $0.hasPrefix("  GREW LeakingService.Response: ") }, diff.stdout)
        XCTAssertTrue(lines.contains { $0.hasPrefix("  UNCHANGED LeakingService.CacheEntry: 64, ") }, diff.stdout)
        XCTAssertTrue(lines.contains { $0.hasPrefix("  UNCHANGED LeakingService.Service: 1, ") }, diff.stdout)
        // And `report` renders a saved one as inspect wrote it.
        let rendered = Harness.run([Harness.leakAudit, "report", first])
        XCTAssertEqual(rendered.status, 1, rendered.log)
        XCTAssertEqual(rendered.stdout, text.stdout)
    }

    func testAProcessThatCannotBeInspectedIsOneLineWithItsExitCode() throws {
        func refused(_ arguments: [String], status: Int32, _ message: String, file: StaticString = #filePath, line: UInt = #line)
        {
            let result = Harness.run(arguments)
            XCTAssertEqual(result.status, status, result.log, file: file, line: line)
            XCTAssertEqual(result.stdout, "", file: file, line: line)
            XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.log, file: file, line: line)
            XCTAssertTrue(result.stderr.hasPrefix("leak-audit: error: \(message)"), result.log, file: file, line: line)
        }
        refused([Harness.leakAudit, "inspect", "nonsense"], status: 64, "cannot inspect pid 'nonsense': not a process id")
        refused([Harness.leakAudit, "inspect", "0"], status: 64, "cannot inspect pid '0': not a process id")
        refused([Harness.leakAudit, "inspect", "--", "-5"], status: 64, "cannot inspect pid '-5': not a process id")
        refused([Harness.leakAudit, "inspect", "1"], status: 64, "cannot inspect pid '1': pid 1 is init")
        // The shell becomes leak-audit: $$ is leak-audit's own pid.
        refused(["sh", "-c", "exec \"$0\" inspect $$", Harness.leakAudit], status: 64, "cannot inspect pid")
        // A process that has ended.
        let ended = Process()
        ended.executableURL = URL(fileURLWithPath: "/bin/true")
        try ended.run()
        ended.waitUntilExit()
        refused(
            [Harness.leakAudit, "inspect", String(ended.processIdentifier)], status: 4, "no process \(ended.processIdentifier)")
        // A program that is not Swift: never stopped.
        let sleeper = Process()
        sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleeper.arguments = ["30"]
        try sleeper.run()
        defer {
            sleeper.terminate()
            sleeper.waitUntilExit()
        }
        refused(
            [Harness.leakAudit, "inspect", String(sleeper.processIdentifier)], status: 3,
            "process \(sleeper.processIdentifier) ('sleep') is not a Swift program")
        // Another user's: leak-audit as nobody, the service as this user (root, where the test runs
        // as root; otherwise the kernel refuses a process of root's the same way).
        let running = try start(seconds: 2)
        if getuid() == 0 {
            refused(
                [
                    "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", Harness.leakAudit, "inspect",
                    String(running.pid),
                ],
                status: 4, "leak-audit may not inspect process \(running.pid): it runs as another user")
        }
        finish(running)
    }

    /// leak-audit killed (SIGKILL), interrupted (SIGINT) or crashing (SIGSEGV: its guard kills the
    /// processes it started, which the inspected one is not) while it holds the service stopped:
    /// the kernel lets the service go, and it finishes as it would have.
    func testTheProcessRunsOnWhenLeakAuditDiesWhileItIsStopped() throws {
        for signal in [SIGKILL, SIGINT, SIGSEGV] {
            // 300 MB to copy: long enough to find the service stopped.
            let running = try start(seconds: 3, ballastMegabytes: 300)
            let leakAudit = Process()
            leakAudit.executableURL = URL(fileURLWithPath: Harness.leakAudit)
            leakAudit.arguments = ["inspect", String(running.pid), "-o", "/dev/null"]
            leakAudit.standardError = FileHandle.nullDevice
            try leakAudit.run()
            // The service stopped for leak-audit ("t (tracing stop)"); leak-audit then stopped
            // too, so that the signal comes while it holds the service.
            var caught = false
            let deadline = Date().addingTimeInterval(20)
            while leakAudit.isRunning && Date() < deadline {
                if Self.state(of: running.pid) == "t" {
                    kill(leakAudit.processIdentifier, SIGSTOP)
                    caught = Self.state(of: running.pid) == "t"
                    break
                }
            }
            XCTAssertTrue(caught, "signal \(signal): leak-audit was never seen holding the service stopped")
            kill(leakAudit.processIdentifier, signal)
            kill(leakAudit.processIdentifier, SIGCONT)
            leakAudit.waitUntilExit()
            XCTAssertEqual(leakAudit.terminationReason, .uncaughtSignal, "signal \(signal)")
            XCTAssertEqual(leakAudit.terminationStatus, signal)
            finish(running)
        }
    }

    /// A process whose threads start and end all the time: each thread seized and interrupted,
    /// the list read again until no new thread appears, those that ended meanwhile let be; it is
    /// inspected each time and goes on.
    func testAProcessStartingThreadsAllTheTimeIsInspectedAndGoesOn() throws {
        // Long enough to outlast three inspections on a busy machine; ended once they are done.
        let running = try start(seconds: 60, ballastMegabytes: 0, threadChurn: true)
        for _ in 0..<3 {
            let path = Harness.scratchPath("threads.json")
            let result = Harness.run([Harness.leakAudit, "inspect", "--format", "json", "-o", path, String(running.pid)])
            let report = try Harness.readReport(path)
            // Exit 1 once its leaked cycles (one request in ten) are there, unreachable.
            XCTAssertEqual(result.status, report.unreachable?.failingGroups.isEmpty == false ? 1 : 0, result.log)
            XCTAssertEqual(report.census?.entries.first { $0.name == "service.Service" }?.liveAtExit, 1)
            usleep(300_000)
        }
        // It went on: running, not stopped, and it still serves (its threads too).
        XCTAssertTrue(running.process.isRunning)
        XCTAssertNotEqual(Self.state(of: running.pid), "t")
        running.process.terminate()
        running.process.waitUntilExit()
        XCTAssertEqual(running.process.terminationReason, .uncaughtSignal, "ended by the test's SIGTERM, not by itself")
    }

    /// The state letter of /proc/<pid>/stat: `t` while a tracer holds it stopped.
    private static func state(of pid: Int32) -> String? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ").first.map(String.init)
    }
}
