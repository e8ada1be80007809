// A program whose malloc puts a 16-byte header before every block (CHeaderedMalloc, as
// ordo-one/malloc-interposer does), for the heap walk: its Swift objects lie 16 bytes into
// glibc's chunks, never at their start.
//
//   HeaderedMalloc [leaky|clean]      (default: leaky)
//
// Leaky: 3 ReportModels kept by a global cache (a tracked leak, budget 1) and 2 cycles
// Node.peer → Node.peer → Node that nothing reaches at exit. Clean: the cache keeps no model and
// the back references are weak. Prints one line when done and exits 0.

import CHeaderedMalloc
import LeakMonitor

#if canImport(Glibc)
    import Glibc
#endif

final class ReportModel: MemoryLeakMonitorable {
    var max: Int { 1 }
    let title: String
    init(title: String) {
        self.title = title
        MemoryLeakMonitor.validate(self)
    }
}

enum ReportCache {
    nonisolated(unsafe) static var models: [ReportModel] = []
}

final class Node {
    var peer: Node?
    weak var weakPeer: Node?
}

/// Two nodes holding each other (strongly when `leaky`), dropped on return.
func makePair(leaky: Bool) {
    let first = Node()
    let second = Node()
    first.peer = second
    if leaky { second.peer = first } else { second.weakPeer = first }
}

let leaky = CommandLine.arguments.dropFirst().first != "clean"
for screen in 1...3 {
    let model = ReportModel(title: "Report \(screen)")
    if leaky { ReportCache.models.append(model) }
}
for _ in 0..<2 { makePair(leaky: leaky) }
guard headered_malloc_blocks() > 0 else {
    print("HeaderedMalloc: the headered malloc was not used")
    exit(70)
}
print("HeaderedMalloc: made 3 report models and 2 node pairs")
