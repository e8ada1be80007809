import LeakMonitor

/// A widget with a budget of one live instance, defined in a shared library.
public final class Widget: MemoryLeakMonitorable {
    public var max: Int { 1 }
    public let name: String

    public init(name: String) {
        self.name = name
        MemoryLeakMonitor.validate(self)
    }
}

/// Makes widgets; keeps every one it made when `cachesWidgets` is set (the bug).
public final class WidgetFactory {
    private var made: [Widget] = []
    private let cachesWidgets: Bool

    public init(cachesWidgets: Bool) { self.cachesWidgets = cachesWidgets }

    public func makeWidget(named name: String) -> Widget {
        let widget = Widget(name: name)
        if cachesWidgets { made.append(widget) }
        return widget
    }
}
