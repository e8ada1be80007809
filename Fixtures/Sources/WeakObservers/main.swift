// Observers register with a long-lived broadcaster. The leaky broadcaster keeps them in a plain
// array, so every observer outlives its screen; the clean twin uses LeakMonitor's @WeakArray.
import LeakMonitor

protocol PriceObserver: AnyObject {
    func priceChanged(to price: Int)
}

final class PriceLabel: PriceObserver, MemoryLeakMonitorable {
    var max: Int { 2 }
    private(set) var shown = 0
    init() { MemoryLeakMonitor.validate(self) }
    func priceChanged(to price: Int) { shown = price }
}

final class StrongBroadcaster {
    private var observers: [PriceObserver] = []
    func add(_ observer: PriceObserver) { observers.append(observer) }
    func publish(_ price: Int) { observers.forEach { $0.priceChanged(to: price) } }
}

final class WeakBroadcaster {
    @WeakArray private var observers: [PriceObserver] = []
    func add(_ observer: PriceObserver) { observers.append(observer) }
    func publish(_ price: Int) { observers.forEach { $0.priceChanged(to: price) } }
}

let leaky = CommandLine.arguments.dropFirst().first != "clean"
let strong = StrongBroadcaster()
let weak = WeakBroadcaster()
for price in 1...5 {
    let label = PriceLabel()  // one screen's label, gone when the screen closes
    if leaky { strong.add(label) } else { weak.add(label) }
    strong.publish(price)
    weak.publish(price)
}
print("WeakObservers: published 5 prices")
