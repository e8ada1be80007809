// The target exits with status 3 through exit(). Leaky: a cache keeps two of its one allowed
// parsers alive first (budget exceeded wins: leak-audit exits 1). Clean: no leak, so leak-audit
// reports the failing target (exit 2).
import Foundation
import LeakMonitor

final class Parser: MemoryLeakMonitorable {
    var max: Int { 1 }
    init() { MemoryLeakMonitor.validate(self) }
}

let leaky = CommandLine.arguments.dropFirst().first != "clean"
var cache: [Parser] = [Parser()]
if leaky { cache.append(Parser()) }
print("ExitNonZero: \(cache.count) parsers cached, exiting with 3")
exit(3)
