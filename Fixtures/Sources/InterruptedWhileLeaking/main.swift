// Leaks, says "ready" on stdout, then waits to be stopped by a signal (at most 60 seconds): the
// report must still be written when SIGINT or SIGTERM reaches leak-audit. The clean twin does not
// leak before waiting.
import Foundation
import LeakMonitor

final class UploadTask: MemoryLeakMonitorable {
    var max: Int { 1 }
    init() { MemoryLeakMonitor.validate(self) }
}

let leaky = CommandLine.arguments.dropFirst().first != "clean"
let pending = (0..<(leaky ? 2 : 1)).map { _ in UploadTask() }
print("ready: \(pending.count) uploads pending")
fflush(stdout)
sleep(60)
