// The target leaks and then crashes (a Swift trap): everything recorded before the crash must
// still be reported. The clean twin crashes without leaking: exit status "target failed".
import LeakMonitor

final class DocumentViewModel: MemoryLeakMonitorable {
    var max: Int { 1 }
    init() { MemoryLeakMonitor.validate(self) }
}

var openDocuments: [DocumentViewModel] = []
let leaky = CommandLine.arguments.dropFirst().first != "clean"
for _ in 0..<(leaky ? 4 : 1) {
    openDocuments.append(DocumentViewModel())
}
print("CrashAfterLeak: \(openDocuments.count) documents open, now crashing")
let index = openDocuments.count + Int(CommandLine.arguments.count > 100 ? 1 : 0)
_ = openDocuments[index]  // out of range: traps
