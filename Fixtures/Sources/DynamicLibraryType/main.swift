// A tracked type that lives in a shared library (libWidgetKit.so): the factory caches every
// widget it makes, so they outlive their screens. The clean twin does not cache.
import WidgetKit

let leaky = CommandLine.arguments.dropFirst().first != "clean"
let factory = WidgetFactory(cachesWidgets: leaky)
for index in 1...3 {
    let widget = factory.makeWidget(named: "widget \(index)")
    print("showing \(widget.name)")
}
