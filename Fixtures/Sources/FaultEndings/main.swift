// Ends in the way its first argument names, after leaving three sessions alive (budget 1): every
// way a process under leak-audit can end or turn on its own environment (docs/reliability.md,
// "Fault matrix"). Whatever the ending, the report must hold the three sessions and say how the
// target ended. Endings marked "then" leave two more alive after their act: peak 5.
import Foundation
import LeakMonitor

final class Session: MemoryLeakMonitorable {
    var max: Int { 1 }
    init() { MemoryLeakMonitor.validate(self) }
}

var sessions = (0..<3).map { _ in Session() }
let ending = CommandLine.arguments.dropFirst().first ?? "return"
print("FaultEndings: 3 sessions alive, ending by \(ending)")
fflush(stdout)

/// Two more sessions, after an act that must not stop the records.
func thenTwoMore() {
    sessions += [Session(), Session()]
    print("FaultEndings: 5 sessions alive")
}

/// Calls itself until the stack runs out; the array keeps each frame from being optimised away.
func recurse(_ depth: Int) -> Int {
    var frame = [depth, depth]
    frame[1] = recurse(depth + 1)
    return frame[0] + frame[1]
}

switch ending {
case "return":
    break
case "exit":
    exit(7)
case "_exit":
    _exit(7)
case "trap":
    fatalError("FaultEndings: a trap")
case "abort":
    abort()
case "sigkill":
    // As a SIGKILL from outside: nothing of the process runs after it.
    kill(getpid(), SIGKILL)
case "segv":
    UnsafeMutablePointer<Int>(bitPattern: 8)!.pointee = 1
case "stack-overflow":
    print(recurse(0))
case "oom":
    // Under `ulimit -v`: allocate until the allocator fails.
    var hoard: [[UInt8]] = []
    while true { hoard.append([UInt8](repeating: 1, count: 64 << 20)) }
case "threads-at-exit":
    // Eight threads still allocating (and freeing) when main returns.
    for _ in 0..<8 {
        Thread.detachNewThread {
            while true { _ = Session() }
        }
    }
    usleep(50_000)
case "close-fds":
    for descriptor in Int32(3)..<1024 { close(descriptor) }
    thenTwoMore()
case "dup2-fds":
    let null = open("/dev/null", O_RDWR)
    for descriptor in Int32(3)..<1024 where descriptor != null { dup2(null, descriptor) }
    thenTwoMore()
case "setrlimit":
    var none = rlimit(rlim_cur: 3, rlim_max: 3)
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &none)
    var noCore = rlimit(rlim_cur: 0, rlim_max: 0)
    setrlimit(Int32(RLIMIT_CORE.rawValue), &noCore)
    thenTwoMore()
case "chdir":
    chdir("/")
    thenTwoMore()
case "unsetenv", "clearenv":
    if ending == "clearenv" {
        clearenv()
    } else {
        for name in ["LEAK_AUDIT_CHANNEL", "LEAK_AUDIT_WATCH", "LD_PRELOAD"] { unsetenv(name) }
    }
    thenTwoMore()
    // A child started now has no channel: it runs unaudited, and writes into no report.
    let child = Process()
    child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    child.arguments = ["return"]
    try child.run()
    child.waitUntilExit()
    print("FaultEndings: the child exited with \(child.terminationStatus)")
case "fork-exec":
    // The child runs this program again: a process of its own, with its own three sessions.
    let pid = fork()
    if pid == 0 {
        execv(CommandLine.arguments[0], [strdup(CommandLine.arguments[0]), strdup("return"), nil])
        _exit(127)
    }
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    print("FaultEndings: the exec'd child ended with status \(status)")
case "fork-killed":
    // The child allocates and frees sessions without end and is killed mid-stream; the parent
    // then writes more than a ring of records, which must not wait on the dead child's.
    let pid = fork()
    if pid == 0 {
        while true { _ = Session() }
    }
    usleep(200_000)
    kill(pid, SIGKILL)
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    for _ in 0..<600_000 { _ = Session() }
    thenTwoMore()
case "hold":
    // Runs on until SIGUSR1 (then returns from main, so that --retainers asks for a walk at exit)
    // or 60 s: a process of a run whose leak-audit dies (ReliabilityTests, "When leak-audit dies").
    var usr1 = sigset_t()
    sigemptyset(&usr1)
    sigaddset(&usr1, SIGUSR1)
    pthread_sigmask(SIG_BLOCK, &usr1, nil)
    print("FaultEndings: holding, pid \(getpid())")
    fflush(stdout)
    var timeout = timespec(tv_sec: 60, tv_nsec: 0)
    sigtimedwait(&usr1, nil, &timeout)
case "churn":
    // Allocates and frees sessions without end: with leak-audit stopped, it soon waits for room
    // in the ring.
    print("FaultEndings: churning, pid \(getpid())")
    fflush(stdout)
    while true { _ = Session() }
default:
    print("FaultEndings: unknown ending '\(ending)'")
    exit(64)
}
