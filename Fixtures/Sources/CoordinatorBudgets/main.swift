// Subclass budgets: a base Coordinator may have one live instance, an ArchiveCoordinator two
// (`override var max`). The leaky version keeps three archive coordinators alive at once; the
// clean twin keeps two. Base coordinators stay within budget in both.
import LeakMonitor

class Coordinator: MemoryLeakMonitorable {
    var max: Int { 1 }
    var children: [Coordinator] = []
    init() { MemoryLeakMonitor.validate(self) }
}

final class ArchiveCoordinator: Coordinator {
    override var max: Int { 2 }
}

let leaky = CommandLine.arguments.dropFirst().first != "clean"
let root = Coordinator()
for _ in 0..<(leaky ? 3 : 2) {
    root.children.append(ArchiveCoordinator())
}
print("CoordinatorBudgets: root has \(root.children.count) archive coordinators")
