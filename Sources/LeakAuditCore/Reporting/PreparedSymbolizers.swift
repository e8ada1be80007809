import Dispatch
import Synchronization

/// The symbolizers of processes about to end, each made when its process first waits at its end
/// (for its last tests' grace periods, or its walk at exit: `Reception.receive`'s
/// `processEnding`) and given, on a thread of their own while leak-audit waits for the process and
/// searches its heap, the stacks that allocated its instances alive then of the types its report
/// shows allocations of (`ProcessReport.showsAllocations`) or judges per test (their tests'
/// leaks), and with `--leaks-per-test` those of what its tests left and released later (the
/// report's global-state step reads them): each stack's frames and the line that constructed each type's instances are found
/// there (an `AllocationGrouping` of those stacks). The report, once the run is over, then finds
/// most of its stacks grouped. The report takes each symbolizer and its grouping
/// (`symbolizer(for:)`), which stops the work left: the stacks not reached by then are symbolized
/// as before, when the report asks for them.
final class PreparedSymbolizers: @unchecked Sendable {
    private let make: ([ModuleImage]) -> any AddressSymbolizer
    private let watch: WatchOptions
    /// Made on the reader's thread, filled on `queue`, taken by the report once `queue` is done.
    private var prepared: [(modules: [ModuleImage], symbolizer: any AddressSymbolizer, grouping: AllocationGrouping)] = []
    /// One process's addresses at a time: each symbolizer is used by one thread at a time.
    private let queue = DispatchQueue(label: "leak-audit.prepared-symbolizers")
    private let work = DispatchGroup()
    private let stopped = Atomic<Bool>(false)

    /// A grouping (and its symbolizer) handed to `queue`, which alone uses it until `work` is done.
    private struct Handed: @unchecked Sendable {
        let grouping: AllocationGrouping
    }

    init(watch: WatchOptions, make: @escaping ([ModuleImage]) -> any AddressSymbolizer) {
        self.watch = watch
        self.make = make
    }

    /// Starts symbolizing the stacks of `ledger`'s instances alive now, on `queue`.
    func prepare(_ ledger: LifetimeLedger) {
        guard !stopped.load(ordering: .acquiring) else { return }
        let types = ledger.typeCounts
        var judged = JudgedTypes(types, watch: watch)
        var wanted: Set<UInt32> = []
        for (id, type) in types where ProcessReport.showsAllocations(of: type, watch: watch) || judged.contains(id) {
            wanted.insert(id)
        }
        var pairs = ledger.stacksOfLiveInstances { wanted.contains($0) }
        // Then what tests left and released later (global state later tests replaced): the
        // report's global-state step reads their constructing lines too.
        if watch.leaksPerTest {
            var seen = Set(pairs)
            for id in ledger.tests.keys.sorted() {
                for leak in ledger.tests[id]?.outlived ?? [] where judged.contains(leak.typeID) {
                    let pair = LifetimeLedger.StackAndType(stackID: leak.site.stackID, typeID: leak.typeID)
                    if seen.insert(pair).inserted { pairs.append(pair) }
                }
            }
        }
        guard !pairs.isEmpty else { return }
        // Only those stacks, read now (the ledger itself is not kept: the reader goes on changing
        // it, and would copy what a copy kept here shares).
        var stacks: [UInt32: [UInt64]] = [:]
        for pair in pairs { stacks[pair.stackID] = ledger.stacks[pair.stackID] }
        let stacksAndTypes = pairs.map { (stackID: $0.stackID, typeName: types[$0.typeID]?.name ?? "") }
        let symbolizer = make(ledger.modules)
        let handed = Handed(grouping: AllocationGrouping(preparing: stacks, symbolizer: symbolizer))
        prepared.append((ledger.modules, symbolizer, handed.grouping))
        queue.async(group: work) { [self] in
            for (stackID, typeName) in stacksAndTypes {
                if stopped.load(ordering: .acquiring) { break }
                _ = handed.grouping.constructingLine(ofStack: stackID, typeName: typeName)
            }
        }
    }

    /// The symbolizer of a process whose images are `modules`, and the grouping of its stacks
    /// made with it: those prepared for them (given once), else a new symbolizer and none. What
    /// is left of the preparing stops; the stack under way is finished first.
    func symbolizer(for modules: [ModuleImage]) -> (symbolizer: any AddressSymbolizer, grouping: AllocationGrouping?) {
        stopped.store(true, ordering: .releasing)
        work.wait()
        if let index = prepared.firstIndex(where: { $0.modules == modules }) {
            let taken = prepared.remove(at: index)
            return (taken.symbolizer, taken.grouping)
        }
        return (make(modules), nil)
    }
}
