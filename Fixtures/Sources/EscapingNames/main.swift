// Report names that need escaping: quotes, backslashes, non-ASCII and control characters, via an
// overridden leakReportName. The leaky version goes over budget so the name appears with its
// stack in both the text and the JSON report.
import LeakMonitor

final class Tricky: MemoryLeakMonitorable {
    var max: Int { 1 }
    var leakReportName: String { "Tricky \"quoted\" \\ ünïcödé 🦊 tab\there bell\u{7}" }
    init() { MemoryLeakMonitor.validate(self) }
}

let leaky = CommandLine.arguments.dropFirst().first != "clean"
let kept = (0..<(leaky ? 2 : 1)).map { _ in Tricky() }
print("EscapingNames: \(kept.count) kept")
