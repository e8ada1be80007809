import Foundation
import XCTest

@testable import LeakAuditCore

/// The copy of a real process for a heap walk (ProcessCopier): a thread that does not stop within
/// the copy's time fails the copy and is no longer traced once the copy returns: its process runs on.
final class ProcessCopierTests: XCTestCase {
    /// Fixtures/Sources/SpawnBlocked: a thread waits in posix_spawn's vfork until this test opens a
    /// FIFO, so that it cannot stop within the copy's 100 ms: the copy fails, and when it returns no
    /// thread of the process is traced, that one included, though it never stopped: left seized
    /// with its interrupt pending, it would stop once the FIFO is opened and wait in that stop for
    /// as long as its tracer's thread lives, and the process would never end.
    func testAThreadThatDoesNotStopInTheCopysTimeIsNoLongerTracedOnceTheCopyReturns() throws {
        let folder = try Harness.scratchFolder("straggler")
        let fifo = folder + "/fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0, String(cString: strerror(errno)))
        let output = folder + "/output"
        let pid = try spawn([try Harness.fixture("SpawnBlocked"), fifo], output: output)
        var ended = false
        defer {
            if !ended {
                kill(pid, SIGKILL)
                var status: Int32 = 0
                waitpid(pid, &status, 0)
            }
        }
        // The spawning thread: the one with a child (blocked in opening the FIFO).
        let spawner = try XCTUnwrap(
            poll { self.threads(of: pid).first { !self.children(of: pid, thread: $0).isEmpty } },
            "no thread of the process is spawning: \((try? String(contentsOfFile: output, encoding: .utf8)) ?? "")")
        XCTAssertNotEqual(spawner, pid)

        // The copy is asked for on a thread that lives until the process has ended: a thread left
        // seized by a ptrace call made on it would stay so.
        let copier = Copier(pid: pid)
        let thread = Thread { copier.run() }
        thread.start()
        defer { copier.finish.signal() }
        // Without that thread's stack and registers (roots) the walk is not made, and says why.
        let copied = try XCTUnwrap(poll { copier.result }, "the copy did not return")
        if case .failure(let failure) = copied {
            XCTAssertEqual(failure, .threadDidNotStop(thread: spawner, milliseconds: 100))
        } else {
            XCTFail("the copy succeeded without the spawning thread's roots")
        }
        // No thread is traced any more, the spawner included, still in its vfork (its child has
        // not opened the FIFO). (A tracer is named by its thread's id; 0 is none.)
        let released = poll { self.threads(of: pid).allSatisfy { self.tracer(of: pid, thread: $0) == 0 } ? true : nil }
        XCTAssertEqual(released, true, "a thread of the process is still traced after the copy returned")
        XCTAssertFalse(children(of: pid, thread: spawner).isEmpty, "the spawner left its vfork before the FIFO was opened")

        // The spawn goes on: the spawner returns from the vfork, and must not stop.
        // Not blocking: with no reader (the spawn's child gone), the test fails rather than waits.
        let writer = open(fifo, O_WRONLY | O_NONBLOCK)
        XCTAssertGreaterThanOrEqual(writer, 0, String(cString: strerror(errno)))
        if writer >= 0 { close(writer) }
        let status = try XCTUnwrap(
            poll { () -> Int32? in
                var status: Int32 = 0
                return waitpid(pid, &status, WNOHANG) == pid ? status : nil
            }, "the process never ended: its spawning thread was left stopped")
        ended = true
        XCTAssertEqual(status, 0)
        let text = try String(contentsOfFile: output, encoding: .utf8)
        XCTAssertTrue(text.contains("SpawnBlocked: the spawn returned 0, its child ended with status 0"), text)
    }

    /// Memory made ahead for a copy (`ProcessCopier.prepare`, what `PreparedCopies` makes while a
    /// process waits at its end) is what the copy of each mapping still there is made in, and the
    /// copy reads as one made without it: the same regions, the same bytes.
    func testACopyIsMadeInTheMemoryPreparedForItAndReadsAsOneMadeWithout() throws {
        let output = try Harness.scratchFolder("prepared") + "/output"
        // Without restartable sequences: the kernel writes the CPU a thread returns to user space
        // on into its rseq area, so a process that sleeps changes there when it is let go after
        // the first copy on another CPU than it slept on.
        let pid = try spawn(["/bin/sleep", "60"], output: output, environment: ["GLIBC_TUNABLES": "glibc.pthread.rseq=0"])
        defer {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        // Once it sleeps: its mappings are then those it keeps.
        _ = poll {
            (try? String(contentsOfFile: "/proc/\(pid)/wchan", encoding: .utf8)).flatMap { $0.contains("sleep") ? true : nil }
        }
        let prepared = ProcessCopier.prepare(pid) { false }
        XCTAssertFalse(prepared.isEmpty)
        guard case .success(let copy) = ProcessCopier.copy(pid, prepared: prepared),
            case .success(let plain) = ProcessCopier.copy(pid)
        else { return XCTFail("a copy of the sleeping process failed") }
        let used = copy.regions.filter { region in
            prepared[region.start..<region.end].map { $0.bytes === region.bytes } ?? false
        }
        XCTAssertFalse(used.isEmpty, "no region was copied into the memory prepared for it")
        XCTAssertTrue(used.contains { $0.isWritable && !$0.path.hasPrefix("/") }, "no anonymous region used its")
        XCTAssertEqual(copy.regions.map { $0.start..<$0.end }, plain.regions.map { $0.start..<$0.end })
        XCTAssertTrue(ProcessCopier.prepare(pid) { true }.isEmpty, "a preparation told to stop made memory")
        // The store gives a process's preparation once, and none once discarded.
        let store = PreparedCopies()
        store.prepare(pid)
        XCTAssertFalse(store.take(pid).isEmpty)
        XCTAssertTrue(store.take(pid).isEmpty, "a preparation was given twice")
        store.prepare(pid)
        store.discard()
        XCTAssertTrue(store.take(pid).isEmpty, "a discarded preparation was given")
        for (mine, theirs) in zip(copy.regions, plain.regions) where !mine.path.hasPrefix("[stack") {
            XCTAssertEqual(mine.copiedStart, theirs.copiedStart, mine.path)
            XCTAssertTrue(mine.bytes.buffer.elementsEqual(theirs.bytes.buffer), "\(mine.path) at \(mine.start)")
        }
    }

    /// Runs `arguments` with its output into the file `output`, in this process's environment with
    /// `environment`'s variables set; returns its pid.
    private func spawn(_ arguments: [String], output: String, environment: [String: String] = [:]) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let variables = ProcessInfo.processInfo.environment.merging(environment) { _, given in given }
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EIO) }
        return pid
    }

    /// `body`'s first answer that is not nil, asked every 10 ms for at most 60 s (a loaded machine).
    private func poll<T>(_ body: () -> T?) -> T? {
        for _ in 0..<6_000 {
            if let answer = body() { return answer }
            usleep(10_000)
        }
        return nil
    }

    private func threads(of pid: pid_t) -> [pid_t] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []).compactMap { pid_t($0) }
    }

    private func children(of pid: pid_t, thread: pid_t) -> String {
        ((try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/children", encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The thread's tracer (0 for none), from /proc; nil when it cannot be read.
    private func tracer(of pid: pid_t, thread: pid_t) -> pid_t? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/status", encoding: .utf8) else {
            return nil
        }
        let line = status.split(separator: "\n").first { $0.hasPrefix("TracerPid:") }
        return line.flatMap { pid_t($0.dropFirst("TracerPid:".count).trimmingCharacters(in: .whitespaces)) }
    }
}

/// A copy taken on a thread of its own, which stays alive until told.
private final class Copier: @unchecked Sendable {
    let pid: pid_t
    let finish = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var copied: Result<ProcessSnapshot, SnapshotFailure>? = nil

    init(pid: pid_t) { self.pid = pid }

    var result: Result<ProcessSnapshot, SnapshotFailure>? { lock.withLock { copied } }

    func run() {
        let copy = ProcessCopier.copy(pid, stopTimeoutMilliseconds: 100)
        lock.withLock { copied = copy }
        finish.wait()
    }
}
