// An image cache that never evicts: 100,000 entries stay alive against a budget of 64. Counting
// must stay exact and the run linear (validate costs the same however many are alive). The clean
// twin evicts the oldest entry beyond 64.
import LeakMonitor

final class CacheEntry: MemoryLeakMonitorable {
    var max: Int { 64 }
    let key: Int
    init(key: Int) {
        self.key = key
        MemoryLeakMonitor.validate(self)
    }
}

final class ImageCache {
    private var entries: [Int: CacheEntry] = [:]
    private let evicts: Bool
    init(evicts: Bool) { self.evicts = evicts }

    func insert(_ key: Int) {
        if evicts { entries[key - 64] = nil }
        entries[key] = CacheEntry(key: key)
    }

    var count: Int { entries.count }
}

let leaky = CommandLine.arguments.dropFirst().first != "clean"
let cache = ImageCache(evicts: !leaky)
for key in 0..<100_000 { cache.insert(key) }
print("LargeLeak: \(cache.count) entries cached")
