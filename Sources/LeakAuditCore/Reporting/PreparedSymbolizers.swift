import Dispatch
import Synchronization

/// The symbolizers of processes about to end, each made when its process first waits at its end
/// (for its last tests' grace periods, or its walk at exit: `Reception.receive`'s
/// `processEnding`) and given, on a thread of their own while leak-audit waits for the process and
/// searches its heap, the return addresses of the stacks that allocated its instances alive then
/// of the types its report shows allocations of (`ProcessReport.showsAllocations`) or judges per
/// test (their tests' leaks). The report's symbolizing, once the
/// run is over, then finds most of its frames known. The report takes each symbolizer
/// (`symbolizer(for:)`), which stops the work left: the frames not reached by then are symbolized
/// as before, when the report asks for them.
final class PreparedSymbolizers: @unchecked Sendable {
    private let make: ([ModuleImage]) -> any AddressSymbolizer
    private let watch: WatchOptions
    /// Made on the reader's thread, filled on `queue`, taken by the report once `queue` is done.
    private var prepared: [(modules: [ModuleImage], symbolizer: any AddressSymbolizer)] = []
    /// One process's addresses at a time: each symbolizer is used by one thread at a time.
    private let queue = DispatchQueue(label: "leak-audit.prepared-symbolizers")
    private let work = DispatchGroup()
    private let stopped = Atomic<Bool>(false)

    /// A symbolizer handed to `queue`, which alone uses it until `work` is done.
    private struct Handed: @unchecked Sendable {
        let symbolizer: any AddressSymbolizer
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
        let addresses = ledger.returnAddressesOfLiveInstances { wanted.contains($0) }
        guard !addresses.isEmpty else { return }
        let handed = Handed(symbolizer: make(ledger.modules))
        prepared.append((ledger.modules, handed.symbolizer))
        queue.async(group: work) { [self] in
            for address in addresses {
                if stopped.load(ordering: .acquiring) { break }
                _ = handed.symbolizer.symbolize(address)
            }
        }
    }

    /// The symbolizer of a process whose images are `modules`: the one prepared for them (given
    /// once), else a new one. What is left of the preparing stops; the address under way is
    /// finished first.
    func symbolizer(for modules: [ModuleImage]) -> any AddressSymbolizer {
        stopped.store(true, ordering: .releasing)
        work.wait()
        if let index = prepared.firstIndex(where: { $0.modules == modules }) { return prepared.remove(at: index).symbolizer }
        return make(modules)
    }
}
