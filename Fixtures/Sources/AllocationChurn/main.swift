// An allocation-heavy program for scripts/benchmark.sh: what tracking costs a program per
// `validate`, per tracked instance kept alive, and over a whole run of view-model churn. Every
// mode prints `name value` lines on standard output for the script to read, and works the same
// standalone and under `leak-audit run` (it prints `attached true` there).
//
//   AllocationChurn churn N          creates and drops N tracked view models, with untracked work
//   AllocationChurn validate-cost N  ns per validate (and per tracked deallocation), net of allocation
//   AllocationChurn retain N         bytes of RSS per tracked live instance, net of the instance
//   AllocationChurn heap N           N live objects, 20,000 of them view models leaked in a global
//                                    registry (budget them with --budget), for what --retainers costs
//   AllocationChurn over-budget N    N tracked instances alive at exit, over their budget, allocated
//                                    from 1,024 distinct stacks: what writing the report costs
//   AllocationChurn threads T N      T threads at once, each validating N instances (all over
//                                    budget) and dropping them: validate under contention
//   AllocationChurn chain N          N objects each holding the next, the last holding them all,
//                                    and the 20,000 leaked view models: the dominator tree's worst
//   AllocationChurn reservation G    an untouched read-only reservation of G GiB, and the 20,000
//                                    leaked view models among 40,000 objects
//   AllocationChurn list N           a list of N nodes from a global, the last holding one leaked
//                                    view model: a retaining path of N + 1 steps
//   AllocationChurn unreachable N    N live objects as `heap` makes them, of which 5,000 cycles of two
//                                    objects (one holding an array) that nothing reaches, and 2,000
//                                    over-retained objects: for what --unreachable costs
//   AllocationChurn service N        N requests of a service: each allocates one tracked context,
//                                    one untracked response and two arrays, and looks its key up in
//                                    a bounded cache whose evicted entries (tracked) are released
//
// AllocationChurnPlain is this file built without LeakMonitor (Sources/AllocationChurnPlain links
// to it and defines ALLOCATION_CHURN_PLAIN): the true plain baseline, a program that never calls
// LeakMonitor and does not link it. The few names it uses from LeakMonitor do nothing there.
#if ALLOCATION_CHURN_PLAIN
    protocol MemoryLeakMonitorable: AnyObject {
        var max: Int { get }
    }

    enum MemoryLeakMonitor {
        enum Handler { case ignore }
        static var violationHandler = Handler.ignore
        static let isAttachedToLeakAudit = false
        @inline(__always) static func validate(_: some MemoryLeakMonitorable) {}
        static func peakCount(of _: AnyObject.Type) -> Int { 0 }
        static func liveCount(of _: AnyObject.Type) -> Int { 0 }
    }
#else
    import LeakMonitor
#endif

#if canImport(Glibc)
    import Glibc
#endif

// MARK: - Process helpers

/// Writes `message` to standard error and exits with `status`.
func fail(_ message: String, status: Int32 = 1) -> Never {
    fputs("AllocationChurn: \(message)\n", stderr)
    exit(status)
}

/// Nanoseconds on the monotonic clock.
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    guard clock_gettime(CLOCK_MONOTONIC, &now) == 0 else { fail("clock_gettime failed: errno \(errno)") }
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}

/// The numeric fields of /proc/self/status (`VmRSS`, `VmHWM`, `RssAnon`, `RssShmem`, ...), in kB.
func processStatus() -> [String: Int] {
    let descriptor = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { fail("cannot open /proc/self/status: errno \(errno)") }
    defer { close(descriptor) }
    var contents: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        guard count >= 0 else { fail("cannot read /proc/self/status: errno \(errno)") }
        if count == 0 { break }
        contents.append(contentsOf: chunk[0..<count])
    }
    var fields: [String: Int] = [:]
    for line in String(decoding: contents, as: UTF8.self).split(separator: "\n") {
        let parts = line.split(separator: ":", maxSplits: 1)
        guard parts.count == 2 else { continue }
        // "VmRSS:\t  123456 kB": the first word after the colon is the number.
        if let number = parts[1].split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap({ Int($0) }) {
            fields[String(parts[0])] = number
        }
    }
    return fields
}

/// One `name value` line for the benchmark script.
func report(_ name: String, _ value: String) {
    print("\(name) \(value)")
}

/// `value` with one decimal, without Foundation.
func oneDecimal(_ value: Double) -> String {
    String((value * 10).rounded() / 10)
}

/// The middle value; the mean of the two middle values for an even count.
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// Keeps results observable so that the optimizer cannot drop the work that produced them.
var checksum = 0

// MARK: - churn: a view-model churn, for whole-run time and peak RSS

/// A row on a screen: untracked, like most of an app's small model objects.
final class RowModel {
    let label: String
    let priceInCents: Int
    var isSelected = false

    init(label: String, priceInCents: Int) {
        self.label = label
        self.priceInCents = priceInCents
    }
}

/// One screen's view model. A navigation push creates the next one while the current one is still
/// shown, so two are alive at once at most: its budget.
final class ScreenViewModel: MemoryLeakMonitorable {
    var max: Int { 2 }

    let title: String
    private(set) var rows: [RowModel]
    /// A callback the view would hold; captures the model weakly, as a view's action does.
    private(set) var onSelect: ((Int) -> Void)?

    init(screen: Int) {
        title = "Screen \(screen) of the product feed"
        rows = (0..<4).map { RowModel(label: "item \(screen &+ $0)", priceInCents: (screen &* 31 &+ $0) % 10_000) }
        MemoryLeakMonitor.validate(self)
        onSelect = { [weak self] row in self?.select(row: row) }
    }

    func select(row: Int) {
        for (index, model) in rows.enumerated() { model.isSelected = index == row }
    }

    /// What the view would show: a total and a summary line.
    func render() -> Int {
        let total = rows.reduce(0) { $0 &+ $1.priceInCents }
        let summary = "\(rows.count) items, \(total) cents: \(title)"
        return summary.utf8.count &+ total
    }
}

/// Pushes `count` screens one after another, each replacing the last: N tracked instances created
/// and deallocated, about seven untracked heap objects per screen, and always within budget.
func churn(count: Int) {
    let start = monotonicNanoseconds()
    var current: ScreenViewModel?
    for screen in 0..<count {
        let next = ScreenViewModel(screen: screen)
        next.onSelect?(screen % 4)
        checksum = checksum &+ next.render()
        current = next
    }
    checksum = checksum &+ (current?.rows.count ?? 0)
    current = nil
    let elapsed = monotonicNanoseconds() - start
    report("screens", String(count))
    report("churn-ms", oneDecimal(Double(elapsed) / 1e6))
    report("ns-per-screen", oneDecimal(Double(elapsed) / Double(max(count, 1))))
    report("tracked-peak", String(MemoryLeakMonitor.peakCount(of: ScreenViewModel.self)))
    report("tracked-live-at-end", String(MemoryLeakMonitor.liveCount(of: ScreenViewModel.self)))
    report("peak-rss-kb", String(processStatus()["VmHWM"] ?? 0))
}

// MARK: - validate-cost: ns per validate, net of allocation

/// Objects per timed batch; batches are created, then dropped, so the live set stays this small.
let probeBatchSize = 1_000

/// The two classes compared, identical but for `validate`.
protocol Probe: AnyObject {
    init(identifier: Int)
    var identifier: Int { get }
}

/// A small model object whose validations are timed; its budget holds a whole batch.
final class TrackedProbe: Probe, MemoryLeakMonitorable {
    var max: Int { probeBatchSize }
    let identifier: Int
    let weight: Double

    init(identifier: Int) {
        self.identifier = identifier
        weight = Double(identifier)
        MemoryLeakMonitor.validate(self)
    }
}

/// The baseline: ``TrackedProbe`` without `validate`.
final class UntrackedProbe: Probe {
    let identifier: Int
    let weight: Double

    init(identifier: Int) {
        self.identifier = identifier
        weight = Double(identifier)
    }
}

/// Nanoseconds spent creating and dropping objects in one timed round.
struct RoundTimes {
    var create: UInt64 = 0
    var drop: UInt64 = 0
}

/// Creates `batches` batches of `Kind` into `storage`, then drops each batch, timing both phases.
/// `storage` keeps its capacity, so neither phase allocates anything but the probes.
func timeRound<Kind: Probe>(_ kind: Kind.Type, batches: Int, storage: inout ContiguousArray<Kind>) -> RoundTimes {
    var times = RoundTimes()
    for batch in 0..<batches {
        let base = batch &* probeBatchSize
        let start = monotonicNanoseconds()
        for index in 0..<probeBatchSize {
            storage.append(Kind(identifier: base &+ index))
        }
        let created = monotonicNanoseconds()
        checksum = checksum &+ storage[probeBatchSize / 2].identifier
        storage.removeAll(keepingCapacity: true)
        let dropped = monotonicNanoseconds()
        times.create &+= created - start
        times.drop &+= dropped - created
    }
    return times
}

/// Times `count` tracked and `count` untracked probes in interleaved rounds and reports the median
/// per-round difference: `validate` itself (creation), and the deallocation bookkeeping of a
/// tracked instance (dropping). Also reports what registering a type adds to the deallocation of
/// every untracked class instance: nothing is hooked for them, so it measures the noise.
func validateCost(count: Int) {
    MemoryLeakMonitor.violationHandler = .ignore
    let rounds = 9
    let batches = Swift.max(1, count / (rounds * probeBatchSize))
    let perRound = Double(batches * probeBatchSize)
    var untrackedStorage = ContiguousArray<UntrackedProbe>()
    var trackedStorage = ContiguousArray<TrackedProbe>()
    untrackedStorage.reserveCapacity(probeBatchSize)
    trackedStorage.reserveCapacity(probeBatchSize)

    // Before any type is registered the hook does nothing (standalone it is not even installed).
    _ = timeRound(UntrackedProbe.self, batches: batches, storage: &untrackedStorage)
    var dropBeforeRegistration: [Double] = []
    for _ in 0..<3 {
        dropBeforeRegistration.append(
            Double(timeRound(UntrackedProbe.self, batches: batches, storage: &untrackedStorage).drop) / perRound)
    }

    // The first validation registers the type and installs the hook: a one-off, kept out of the timing.
    _ = timeRound(TrackedProbe.self, batches: batches, storage: &trackedStorage)
    _ = timeRound(UntrackedProbe.self, batches: batches, storage: &untrackedStorage)

    var validateCosts: [Double] = []
    var trackedDropCosts: [Double] = []
    var untrackedObjectCosts: [Double] = []
    var untrackedDrops: [Double] = []
    for _ in 0..<rounds {
        let untracked = timeRound(UntrackedProbe.self, batches: batches, storage: &untrackedStorage)
        let tracked = timeRound(TrackedProbe.self, batches: batches, storage: &trackedStorage)
        validateCosts.append((Double(tracked.create) - Double(untracked.create)) / perRound)
        trackedDropCosts.append((Double(tracked.drop) - Double(untracked.drop)) / perRound)
        untrackedObjectCosts.append(Double(untracked.create + untracked.drop) / perRound)
        untrackedDrops.append(Double(untracked.drop) / perRound)
    }
    #if !ALLOCATION_CHURN_PLAIN
        guard MemoryLeakMonitor.peakCount(of: TrackedProbe.self) <= probeBatchSize else {
            fail("TrackedProbe went over its budget: the batches overlap")
        }
    #endif
    report("validations", String(Int(perRound) * (rounds + 1)))
    report("ns-per-validate", oneDecimal(median(validateCosts)))
    report("ns-per-tracked-dealloc", oneDecimal(median(trackedDropCosts)))
    report("ns-per-untracked-object", oneDecimal(median(untrackedObjectCosts)))
    report("ns-hook-per-untracked-dealloc", oneDecimal(median(untrackedDrops) - median(dropBeforeRegistration)))
}

// MARK: - retain: bytes of memory per tracked live instance

/// A retained object that is counted; its budget is never the point here.
final class RetainedTracked: MemoryLeakMonitorable {
    var max: Int { 1 << 40 }
    let identifier: Int
    let weight: Double

    init(identifier: Int) {
        self.identifier = identifier
        weight = Double(identifier)
        MemoryLeakMonitor.validate(self)
    }
}

/// ``RetainedTracked`` without `validate`: what the instances themselves cost.
final class RetainedUntracked {
    let identifier: Int
    let weight: Double

    init(identifier: Int) {
        self.identifier = identifier
        weight = Double(identifier)
    }
}

/// Keeps `count` untracked, then `count` tracked instances alive, reading the process's memory
/// before and after each, and reports the difference per instance: what tracking adds to each live
/// instance (the registry's set entry, and when attached the record written to the channel).
func retain(count: Int) {
    MemoryLeakMonitor.violationHandler = .ignore
    // Register the type first: its one-off costs (type table entry, hook installation, module
    // records) are not per instance.
    let registration = RetainedTracked(identifier: -1)
    var untracked = ContiguousArray<RetainedUntracked>()
    var tracked = ContiguousArray<RetainedTracked>()
    untracked.reserveCapacity(count)
    tracked.reserveCapacity(count)

    let before = processStatus()
    for index in 0..<count { untracked.append(RetainedUntracked(identifier: index)) }
    let afterUntracked = processStatus()
    for index in 0..<count { tracked.append(RetainedTracked(identifier: index)) }
    let afterTracked = processStatus()

    let live = MemoryLeakMonitor.liveCount(of: RetainedTracked.self)
    #if !ALLOCATION_CHURN_PLAIN
        guard live == count + 1 else { fail("expected \(count + 1) live RetainedTracked, counted \(live)") }
    #endif
    checksum = checksum &+ untracked.count &+ tracked.count &+ registration.identifier
    report("instances", String(count))
    let perInstance = Double(Swift.max(count, 1))
    for field in ["VmRSS", "RssAnon", "RssShmem"] {
        let untrackedGrowth = Double((afterUntracked[field] ?? 0) - (before[field] ?? 0)) * 1024
        let trackedGrowth = Double((afterTracked[field] ?? 0) - (afterUntracked[field] ?? 0)) * 1024
        report("\(field)-bytes-per-untracked", oneDecimal(untrackedGrowth / perInstance))
        report("\(field)-bytes-per-tracked", oneDecimal(trackedGrowth / perInstance))
        report("\(field)-bytes-per-tracking", oneDecimal((trackedGrowth - untrackedGrowth) / perInstance))
    }
    withExtendedLifetime((untracked, tracked)) {}
}

// MARK: - Entry point

let usage =
    "usage: AllocationChurn churn|validate-cost|retain|heap|over-budget|chain|reservation|list|unreachable|service COUNT, or threads THREADS [PER_THREAD]"
// MARK: - heap: a large live heap with leaked tracked instances, for --retainers

/// A background object: most of a heap is objects like it, alive and unrelated to the leak.
final class CacheEntry {
    var next: CacheEntry?
    var value = 0
}

/// Leaked: 20,000 alive at exit. Budgeted by the benchmark (`--budget`), not in code, so that the
/// mode also runs standalone.
final class DetailViewModel {
    let entry = CacheEntry()
}

final class Registry {
    var models: [DetailViewModel] = []
    var cache: [CacheEntry] = []
    var chain: ChainLink?
    var list: ListNode?
}

let registry = Registry()

/// Keeps `count` objects alive: chains of untracked entries, and 20,000 leaked view models (each
/// with its entry) in a global registry.
func heap(count: Int) {
    let leaked = 20_000
    let background = Swift.max(0, count - 2 * leaked)
    for index in 0..<background {
        let entry = CacheEntry()
        entry.value = index
        if index % 100 != 0, let last = registry.cache.last {
            entry.next = last
            registry.cache[registry.cache.count - 1] = entry
        } else {
            registry.cache.append(entry)
        }
    }
    for _ in 0..<leaked { registry.models.append(DetailViewModel()) }
    print("objects \(background + 2 * leaked)")
}

// MARK: - unreachable: cycles and over-retained objects nothing reaches, for --unreachable

/// One side of a cycle nothing reaches.
final class OrphanedRequest {
    var handler: OrphanedHandler?
    var log: [Int] = [1, 2, 3]
}

/// The other side: holds its request back.
final class OrphanedHandler {
    var request: OrphanedRequest?
}

/// Retained with no reference left.
final class OrphanedToken {
    var value = 0
}

/// Holds the cycles while they are made, so that the optimizer keeps them on the heap.
var orphans: [AnyObject] = []

/// `heap` of `count` objects less those below, then 5,000 cycles of a request (with its array)
/// and its handler, and 2,000 tokens retained and never released, none reachable at exit.
func unreachable(count: Int) {
    let cycles = 5_000
    let tokens = 2_000
    heap(count: Swift.max(40_000, count - 3 * cycles - tokens))
    for _ in 0..<cycles {
        let request = OrphanedRequest()
        let handler = OrphanedHandler()
        request.handler = handler
        handler.request = request
        orphans.append(request)
    }
    for index in 0..<tokens {
        let token = OrphanedToken()
        token.value = index
        orphans.append(token)
        _ = Unmanaged.passRetained(token)
    }
    orphans = []
    print("unreachable \(3 * cycles + tokens)")
}

// MARK: - chain, reservation, list: hostile heaps for --retainers

/// A link of `chain`: holds the next, and the last holds every link.
final class ChainLink {
    var next: ChainLink?
    var all: [ChainLink] = []
}

/// `count` links, each holding the next, the last holding them all, and 20,000 leaked view models.
func chain(count: Int) {
    let first = ChainLink()
    var links = [first]
    links.reserveCapacity(count)
    for _ in 1..<count {
        let link = ChainLink()
        links[links.count - 1].next = link
        links.append(link)
    }
    links[links.count - 1].all = links
    registry.chain = first
    for _ in 0..<20_000 { registry.models.append(DetailViewModel()) }
    print("objects \(count + 40_000)")
}

/// An untouched read-only reservation of `gigabytes` GiB, kept until exit, beside a small heap.
func reservation(gigabytes: Int) {
    let length = gigabytes << 30
    guard let mapping = mmap(nil, length, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0),
        mapping != MAP_FAILED
    else { fail("mmap of \(gigabytes) GiB failed: errno \(errno)") }
    report("reserved-bytes", String(length))
    heap(count: 40_000)
}

/// A node of `list`.
final class ListNode {
    var next: ListNode?
    var model: DetailViewModel?
}

/// A list of `count` nodes from a global; the last holds one leaked view model.
func list(count: Int) {
    let head = ListNode()
    var last = head
    for _ in 1..<count {
        let node = ListNode()
        last.next = node
        last = node
    }
    last.model = DetailViewModel()
    registry.list = head
    print("objects \(count + 2)")
}

// MARK: - over-budget: many instances alive at exit, from many stacks, for the report's cost

/// Over its budget from the second instance on; every instance stays alive until exit.
final class OverBudgetModel: MemoryLeakMonitorable {
    var max: Int { 1 }
    init() { MemoryLeakMonitor.validate(self) }
}

/// Stack depth that tells sites apart: 2^10 = 1,024 distinct stacks.
let siteLevels = 10

/// Allocates through `siteLevels` frames, each `leftBranch` or `rightBranch` as the bits of
/// `pattern` say: one distinct stack per pattern.
@inline(never) func allocate(pattern: Int, level: Int) -> OverBudgetModel {
    if level == siteLevels { return OverBudgetModel() }
    return (pattern >> level) & 1 == 0 ? leftBranch(pattern: pattern, level: level) : rightBranch(pattern: pattern, level: level)
}

/// One frame of a stack; its work after the call keeps the frame (no tail call).
@inline(never) func leftBranch(pattern: Int, level: Int) -> OverBudgetModel {
    let model = allocate(pattern: pattern, level: level + 1)
    checksum = checksum &+ 1
    return model
}

/// The other frame of a stack, different from ``leftBranch(pattern:level:)`` so that the two
/// are not merged.
@inline(never) func rightBranch(pattern: Int, level: Int) -> OverBudgetModel {
    let model = allocate(pattern: pattern, level: level + 1)
    checksum = checksum &+ 2
    return model
}

var overBudget: [OverBudgetModel] = []

/// Keeps `count` instances alive at exit, allocated round-robin from 1,024 stacks, and prints
/// when it ends (CLOCK_REALTIME, as `date +%s%N` reads it) so that the script can time what comes
/// after: leak-audit reading the rest and writing its report.
func overBudget(count: Int) {
    MemoryLeakMonitor.violationHandler = .ignore
    overBudget.reserveCapacity(count)
    for index in 0..<count { overBudget.append(allocate(pattern: index & ((1 << siteLevels) - 1), level: 0)) }
    report("alive", String(overBudget.count))
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    report("ended-realtime-ns", String(Int(now.tv_sec) &* 1_000_000_000 &+ now.tv_nsec))
}

// MARK: - threads: validate from more threads than cores

/// Validated by every thread at once; over budget, as a leaking test suite's types would be.
final class ThreadSession: MemoryLeakMonitorable {
    var max: Int { 1 }
    init() { MemoryLeakMonitor.validate(self) }
}

/// Instances each thread creates, set before the threads start.
nonisolated(unsafe) var perThread = 0

/// Starts `threadCount` threads that each create PER_THREAD instances (the mode's second argument,
/// 10,000 by default), keep them, then drop them, and reports the wall time from the first start
/// to the last join.
func threads(count threadCount: Int) {
    MemoryLeakMonitor.violationHandler = .ignore
    perThread = Int(CommandLine.arguments.count > 3 ? CommandLine.arguments[3] : "10000") ?? 10_000
    let start = monotonicNanoseconds()
    var handles: [pthread_t] = []
    for _ in 0..<threadCount {
        var handle = pthread_t()
        let created = pthread_create(
            &handle, nil,
            { _ in
                var kept: [ThreadSession] = []
                kept.reserveCapacity(perThread)
                for _ in 0..<perThread { kept.append(ThreadSession()) }
                kept.removeAll()
                return nil
            }, nil)
        guard created == 0 else { fail("pthread_create failed: \(created)") }
        handles.append(handle)
    }
    for handle in handles { pthread_join(handle, nil) }
    report("threads", String(threadCount))
    report("per-thread", String(perThread))
    report("threads-ms", oneDecimal(Double(monotonicNanoseconds() - start) / 1e6))
}

// MARK: - service: requests against a bounded cache, for the per-allocation cost of a service

/// One request's state, tracked: alive until the next request's response replaces its own, so two
/// at a time at most.
final class RequestContext: MemoryLeakMonitorable {
    var max: Int { 2 }
    let identifier: Int
    let key: Int
    let deadline: UInt64

    init(identifier: Int, key: Int) {
        self.identifier = identifier
        self.key = key
        deadline = UInt64(truncatingIfNeeded: identifier) &+ 30_000
        MemoryLeakMonitor.validate(self)
    }
}

/// A response as it is built: untracked, like most of a service's objects. It holds its request's
/// context and two arrays, and the last one is kept in a global, so that none of them can live on
/// the stack (in the plain twin too, where nothing else makes the context escape).
final class Response {
    var status = 200
    let context: RequestContext
    let headers: [Int]
    let body: [UInt8]

    init(context: RequestContext, headers: [Int], body: [UInt8]) {
        self.context = context
        self.headers = headers
        self.body = body
    }
}

/// What the cache keeps for a key, tracked: at most ``serviceCacheCapacity`` alive, each released
/// when the cache evicts it.
final class CachedResponse: MemoryLeakMonitorable {
    var max: Int { serviceCacheCapacity }
    let key: Int
    let bodyLength: Int
    /// Set on each hit, cleared when the eviction hand passes: a second chance, so that hot keys stay.
    var referenced = false

    init(key: Int) {
        self.key = key
        bodyLength = 32 &+ (key & 63)
        MemoryLeakMonitor.validate(self)
    }
}

/// Entries the cache holds at most.
let serviceCacheCapacity = 1_024

/// An LRU-ish cache of a fixed size: a dictionary, and a ring of its keys that a clock hand walks
/// to evict, sparing each entry hit since the hand last passed it once.
struct ResponseCache {
    private(set) var entries: [Int: CachedResponse] = [:]
    private var ring: [Int] = []
    private var hand = 0
    private(set) var hits = 0
    private(set) var evictions = 0

    init() {
        entries.reserveCapacity(serviceCacheCapacity)
        ring.reserveCapacity(serviceCacheCapacity)
    }

    /// The entry for `key`, created (evicting one when full) on a miss.
    mutating func entry(for key: Int) -> CachedResponse {
        if let hit = entries[key] {
            hit.referenced = true
            hits &+= 1
            return hit
        }
        // Evicted before the new entry exists, so that never more than the capacity is alive.
        if ring.count < serviceCacheCapacity {
            ring.append(key)
        } else {
            while let candidate = entries[ring[hand]], candidate.referenced {
                candidate.referenced = false
                hand = (hand &+ 1) % serviceCacheCapacity
            }
            // The evicted entry's last reference goes here: a tracked deallocation.
            entries.removeValue(forKey: ring[hand])
            evictions &+= 1
            ring[hand] = key
            hand = (hand &+ 1) % serviceCacheCapacity
        }
        let fresh = CachedResponse(key: key)
        entries[key] = fresh
        return fresh
    }
}

/// The last response, kept so that every response and its arrays live on the heap.
var lastResponse: Response?

/// Serves `count` requests: seven in eight ask for one of 512 hot keys, the rest for one of 65,536,
/// so that the cache mostly hits and evicts on the misses. Within every budget.
func service(count: Int) {
    MemoryLeakMonitor.violationHandler = .ignore
    var cache = ResponseCache()
    var random: UInt64 = 0x9E37_79B9_7F4A_7C15
    for request in 0..<count {
        random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let draw = Int(truncatingIfNeeded: random >> 33)
        let key = draw & 7 != 0 ? (draw >> 3) & 511 : 512 &+ ((draw >> 3) & 65_535)
        let context = RequestContext(identifier: request, key: key)
        let cached = cache.entry(for: key)
        let headers = [context.identifier & 0xFFFF, context.key, cached.bodyLength, Int(context.deadline & 0xFF)]
        let body = [UInt8](repeating: UInt8(truncatingIfNeeded: key), count: cached.bodyLength)
        let response = Response(context: context, headers: headers, body: body)
        response.status = cached.referenced ? 200 : 201
        checksum = checksum &+ response.status &+ response.headers.reduce(0, &+) &+ Int(response.body[0])
        lastResponse = response
    }
    lastResponse = nil
    report("requests", String(count))
    report("cache-hits", String(cache.hits))
    report("cache-evictions", String(cache.evictions))
    report("cache-entries", String(cache.entries.count))
    report("context-peak", String(MemoryLeakMonitor.peakCount(of: RequestContext.self)))
    report("cached-peak", String(MemoryLeakMonitor.peakCount(of: CachedResponse.self)))
}

let modes: [String: (Int) -> Void] = [
    "churn": churn(count:), "validate-cost": validateCost(count:), "retain": retain(count:), "heap": heap(count:),
    "over-budget": overBudget(count:), "threads": threads(count:), "chain": chain(count:),
    "reservation": reservation(gigabytes:), "list": list(count:), "unreachable": unreachable(count:),
    "service": service(count:),
]
let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 2 || (arguments.count == 3 && arguments[0] == "threads"), let mode = modes[arguments[0]],
    let count = Int(arguments[1]), count > 0
else {
    fail(usage, status: 64)
}
report("attached", String(MemoryLeakMonitor.isAttachedToLeakAudit))
mode(count)
// Printed last so that the work above stays observable.
report("checksum", String(checksum))
