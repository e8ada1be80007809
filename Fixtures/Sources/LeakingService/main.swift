// A small service for `leak-audit inspect PID`: it serves requests in a loop for a few seconds,
// and every tenth request leaks a cycle (a Request and its Response holding each other: the
// retry handler keeps the request, and the request keeps its response); the other nine go
// through a bounded cache of 64 entries that evicts the oldest. Two snapshots a second apart show
// the cycles grow (25 a second) and the cache stay at 64. It never links LeakMonitor.
//
//   LeakingService [SECONDS]      (default 4)
//
// Requests are served on a fixed schedule, one every 4 ms from the start (a slow machine catches
// up), so a run serves SECONDS × 250 requests and leaks a tenth of them. Prints its pid first
// (flushed, so that a test can read it while the service runs) and one last line when it
// finishes normally.
import Foundation

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("LeakingService: \(message)\n".utf8))
    exit(64)
}

let arguments = Array(CommandLine.arguments.dropFirst())
let usage = "usage: LeakingService [SECONDS]"
guard arguments.count <= 1, let seconds = arguments.first.map({ Double($0) }) ?? 4, seconds > 0 else { fail(usage) }

final class Request {
    let id: Int
    let path: String
    var response: Response?
    init(id: Int, path: String) {
        self.id = id
        self.path = path
    }
}

final class Response {
    let status: Int
    let body: Data
    /// Kept for a retry: the bug is that it is strong.
    var request: Request?
    init(status: Int, body: Data) {
        self.status = status
        self.body = body
    }
}

final class CacheEntry {
    let key: String
    let response: Response
    let storedAt: Date
    init(key: String, response: Response) {
        self.key = key
        self.response = response
        storedAt = Date()
    }
}

/// Keeps the `capacity` most recent responses; inserting past it evicts the oldest.
final class ResponseCache {
    let capacity: Int
    private var entries: [String: CacheEntry] = [:]
    private var order: [String] = []
    init(capacity: Int) { self.capacity = capacity }

    var count: Int { entries.count }

    func insert(_ response: Response, for key: String) {
        if entries.updateValue(CacheEntry(key: key, response: response), forKey: key) == nil {
            order.append(key)
        }
        while order.count > capacity {
            entries[order.removeFirst()] = nil
        }
    }
}

final class Service {
    let cache = ResponseCache(capacity: 64)
    private(set) var served = 0
    private(set) var leaked = 0

    func handle(id: Int) {
        let request = Request(id: id, path: "/items/\(id % 500)")
        let response = Response(status: 200, body: Data(request.path.utf8))
        if id % 10 == 0 {
            // The bug: a retry keeps the request, which keeps its response.
            response.request = request
            request.response = response
            leaked += 1
        } else {
            cache.insert(response, for: request.path)
        }
        served += 1
    }
}

print("LeakingService: pid \(getpid()), serving for \(seconds) s")
fflush(stdout)

let interval = 0.004
let total = Int((seconds / interval).rounded())
let service = Service()
let start = Date()
for id in 0..<total {
    let due = start.addingTimeInterval(Double(id) * interval)
    let wait = due.timeIntervalSinceNow
    if wait > 0 { usleep(useconds_t(wait * 1_000_000)) }
    service.handle(id: id)
}
print(
    "LeakingService: served \(service.served) requests, leaked \(service.leaked) cycles, cache holds \(service.cache.count) entries"
)
fflush(stdout)
