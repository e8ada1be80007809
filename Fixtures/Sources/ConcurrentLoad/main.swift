// Load for docs/reliability.md: THREADS threads each create PER_THREAD instances at once, all of
// them kept until every thread is done (so all are alive together: the peak is exact), then each
// thread frees all but its first, concurrently. It prints the counts it made itself, for the
// report's to be compared with:
//
//   ConcurrentLoad THREADS PER_THREAD            Session, which opts in through LeakMonitor
//   ConcurrentLoad THREADS PER_THREAD plain      Plain, which does not (audit it with --budget)
import Dispatch
import LeakMonitor

#if canImport(Glibc)
    import Glibc
#endif

final class Session: MemoryLeakMonitorable {
    var max: Int { 1 }
    init() { MemoryLeakMonitor.validate(self) }
}

final class Plain {}

/// One thread's instances, owned by that thread alone until every thread has finished creating.
final class Kept: @unchecked Sendable {
    var objects: [AnyObject] = []
}

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count >= 2, let threads = Int(arguments[arguments.startIndex]),
    let perThread = Int(arguments[arguments.startIndex + 1]), threads > 0, perThread > 0
else {
    print("usage: ConcurrentLoad THREADS PER_THREAD [plain]")
    exit(64)
}
let plain = arguments.count > 2 && arguments[arguments.startIndex + 2] == "plain"
let kept = (0..<threads).map { _ in Kept() }
DispatchQueue.concurrentPerform(iterations: threads) { thread in
    kept[thread].objects.reserveCapacity(perThread)
    for _ in 0..<perThread { kept[thread].objects.append(plain ? Plain() : Session()) }
}
DispatchQueue.concurrentPerform(iterations: threads) { thread in
    kept[thread].objects.removeLast(perThread - 1)
}
print("ConcurrentLoad: \(plain ? "Plain" : "Session") peak \(threads * perThread) total \(threads * perThread) alive \(threads)")
