// Server-side Swift: requests are handled in concurrent tasks, each with a request-scoped
// context (budget: 16 in flight). The leaky server's metrics actor keeps every context it was
// shown, so all 200 outlive their requests; the clean twin keeps only the counts.
import LeakMonitor

final class RequestContext: MemoryLeakMonitorable {
    var max: Int { 16 }
    let path: String
    init(path: String) {
        self.path = path
        MemoryLeakMonitor.validate(self)
    }
}

actor Metrics {
    private var seen: [RequestContext] = []
    private var counts: [String: Int] = [:]
    let keepsContexts: Bool
    init(keepsContexts: Bool) { self.keepsContexts = keepsContexts }

    func record(_ context: RequestContext) {
        counts[context.path, default: 0] += 1
        if keepsContexts { seen.append(context) }
    }

    var total: Int { counts.values.reduce(0, +) }
}

func handle(path: String, metrics: Metrics) async {
    let context = RequestContext(path: path)
    await metrics.record(context)
}

let leaky = CommandLine.arguments.dropFirst().first != "clean"
let metrics = Metrics(keepsContexts: leaky)
for batch in 0..<20 {
    await withTaskGroup(of: Void.self) { group in
        for request in 0..<10 {
            group.addTask { await handle(path: "/items/\(batch * 10 + request)", metrics: metrics) }
        }
    }
}
print("AsyncRequests: handled \(await metrics.total) requests")
