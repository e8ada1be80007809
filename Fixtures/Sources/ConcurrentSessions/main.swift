// Eight threads open and close sessions concurrently, 20,000 each; the budget allows one per
// thread. The leaky version parks every 500th session in a shared cache that is never emptied:
// exactly 8 × 40 = 320 leaked sessions, which leak-audit must count exactly.
import Dispatch
import Foundation
import LeakMonitor

final class Session: MemoryLeakMonitorable {
    var max: Int { 8 }
    let id: Int
    init(id: Int) {
        self.id = id
        MemoryLeakMonitor.validate(self)
    }
}

final class SessionCache: @unchecked Sendable {
    private let lock = NSLock()
    private var parked: [Session] = []
    func park(_ session: Session) { lock.withLock { parked.append(session) } }
    var count: Int { lock.withLock { parked.count } }
}

let leaky = CommandLine.arguments.dropFirst().first != "clean"
let cache = SessionCache()
DispatchQueue.concurrentPerform(iterations: 8) { thread in
    for index in 0..<20_000 {
        let session = Session(id: thread * 100_000 + index)
        if leaky && index % 500 == 499 { cache.park(session) }
    }
}
print("ConcurrentSessions: \(cache.count) sessions parked")
