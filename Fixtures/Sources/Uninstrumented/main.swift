// A Swift program that does not link LeakMonitor: leak-audit must say it cannot audit it.
final class Thing {
    let value: Int
    init(value: Int) { self.value = value }
}

let things = (0..<3).map { Thing(value: $0) }
print("Uninstrumented: \(things.count) things")
