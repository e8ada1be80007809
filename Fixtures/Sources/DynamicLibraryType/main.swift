// A tracked type that lives in a shared library (libWidgetKit.so): the factory caches every
// widget it makes, so they outlive their screens. The clean twin does not cache.
// The executable links LeakMonitor too and tracks a type of its own, so the process holds two
// copies of the library, which must share one registry: both types must be counted.
import LeakMonitor
import WidgetKit

final class Dashboard: MemoryLeakMonitorable {
    var max: Int { 1 }
    init() { MemoryLeakMonitor.validate(self) }
}

let leaky = CommandLine.arguments.dropFirst().first != "clean"
let factory = WidgetFactory(cachesWidgets: leaky)
for index in 1...3 {
    let dashboard = Dashboard()
    let widget = factory.makeWidget(named: "widget \(index)")
    print("showing \(widget.name) on \(ObjectIdentifier(dashboard))")
}
