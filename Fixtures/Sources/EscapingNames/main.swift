// Report names that need escaping, via an overridden leakReportName: quotes, backslashes, non-ASCII
// and control characters, markup, GitHub's command characters (% : ,), a newline and a CR, an ANSI
// colour and a right-to-left override. The leaky version goes over budget so the name appears with
// its stack in every format.
import LeakMonitor

final class Tricky: MemoryLeakMonitorable {
    var max: Int { 1 }
    var leakReportName: String {
        "Tricky \"quoted\" \\ ünïcödé 🦊 tab\there bell\u{7} <b>&amp; 100% a::b, c:d\nline\rcr \u{1B}[31mred\u{1B}[0m \u{202E}txt.exe"
    }
    init() { MemoryLeakMonitor.validate(self) }
}

let leaky = CommandLine.arguments.dropFirst().first != "clean"
let kept = (0..<(leaky ? 2 : 1)).map { _ in Tricky() }
print("EscapingNames: \(kept.count) kept")
