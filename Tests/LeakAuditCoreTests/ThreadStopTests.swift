import CLeakAuditHost
import Foundation
import XCTest

@testable import LeakAuditCore

/// The threads a heap walk stops with ptrace, and a process that ends while they are stopped.
final class ThreadStopTests: XCTestCase {
    /// A process killed while a walk holds its threads stopped (as when the thread let go first
    /// calls exit) ends for its parent too: its other threads died traced, and they are reaped
    /// once all are let go, or the kernel reports the process's end to no one.
    func testAProcessKilledWhileItsThreadsAreStoppedIsSeenToEnd() throws {
        let script = """
            import threading, time
            for _ in range(3): threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
            time.sleep(60)
            """
        let pid = try spawn(["python3", "-c", script])
        var ended = false
        defer {
            // Whatever failed, the child does not outlive the test (nor hang it).
            if !ended {
                kill(pid, SIGKILL)
                for thread in Self.threads(of: pid) where thread != pid { leakaudit_host_reap_thread(thread, 1_000) }
                _ = Self.end(of: pid)
            }
        }
        var threads: [Int32] = []
        for _ in 0..<500 {
            threads = Self.threads(of: pid)
            if threads.count == 4 { break }
            usleep(10_000)
        }
        XCTAssertEqual(threads.count, 4, "python3 did not start its three threads")
        var results = [Int32](repeating: -1, count: threads.count)
        leakaudit_host_stop_threads(threads, Int32(threads.count), &results, 2_000)
        XCTAssertEqual(results, [Int32](repeating: 0, count: threads.count))

        kill(pid, SIGKILL)
        // The threads other than the leader die traced: zombies until their tracer reaps them.
        for _ in 0..<500 {
            if threads.filter({ $0 != pid }).allSatisfy({ Self.state(of: $0, in: pid) == UInt8(ascii: "Z") }) { break }
            usleep(10_000)
        }
        let killedThreads = threads.filter { leakaudit_host_resume_thread($0) == ESRCH && $0 != pid }
        XCTAssertEqual(killedThreads.count, 3, "the threads other than the leader were not killed while stopped")
        for thread in killedThreads { leakaudit_host_reap_thread(thread, 1_000) }
        let status = Self.end(of: pid)
        ended = status != nil
        XCTAssertNotNil(status, "the process's end was never reported: threads that died traced were not reaped")
        XCTAssertEqual(status.map { $0 & 0x7F }, SIGKILL)
    }

    /// The wait status of `pid`'s end, reaped, if it is reported within five seconds.
    private static func end(of pid: Int32) -> Int32? {
        var status: Int32 = 0
        for _ in 0..<500 {
            if waitpid(pid, &status, WNOHANG) == pid { return status }
            usleep(10_000)
        }
        return nil
    }

    /// Starts `arguments` (found on PATH) with no input and its output discarded; skips the test
    /// when it cannot start.
    private func spawn(_ arguments: [String]) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for descriptor in Int32(0)...2 {
            posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        var argv = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid: Int32 = 0
        let result = posix_spawnp(&pid, arguments[0], &actions, nil, &argv, environ)
        guard result == 0 else { throw XCTSkip("cannot start \(arguments[0]): \(String(cString: strerror(result)))") }
        return pid
    }

    private static func threads(of pid: Int32) -> [Int32] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return names.compactMap { Int32($0) }.sorted()
    }

    /// A thread's state letter from /proc (R, S, t, Z …), or nil once it is gone.
    private static func state(of thread: Int32, in pid: Int32) -> UInt8? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/stat", encoding: .utf8),
            let nameEnd = stat.utf8.lastIndex(of: UInt8(ascii: ")"))
        else { return nil }
        return stat.utf8[stat.utf8.index(nameEnd, offsetBy: 2)...].first
    }
}
