/// What `leak-audit inspect` finds in the copy of a running process: every live Swift object by
/// type (count and bytes), the objects no root reaches grouped into structures, and the objects
/// that alone keep the most memory alive (their dominator subtrees), each with its path from its
/// root, as `--retainers` finds paths (docs/retainers.md).
struct HeapInspection {
    /// The live objects of one type.
    struct TypeTally: Equatable {
        /// The type's name, module-qualified (`closure context`, `captured variable`, `async task`
        /// for the runtime's objects that have no class).
        var name: String
        var count: Int
        /// Their bytes: malloc's usable sizes.
        var bytes: Int
        /// A class instance (collection storage among them), not a closure context, box or task.
        var isClassInstance: Bool
        /// An instance of a subclass of XCTest's `XCTestCase`.
        var isTestCase: Bool
    }

    /// An object that keeps much memory alive.
    struct Heavy {
        var address: UInt64
        /// Its type's name.
        var typeName: String
        /// The path to it from its root; `retainedBytes` is what it alone keeps alive.
        var path: RetainerSearch.Path
    }

    /// Every type with live objects, most bytes first.
    var census: [TypeTally]
    /// The objects that retain the most, largest first, none inside another's dominator subtree.
    var largest: [Heavy]
    /// The objects no root reaches, grouped into the structures they form (cycles, over-retained
    /// objects), as `--unreachable` groups them at a run's exit.
    var unreachable: UnreachableStructures
    /// Live Swift objects in all.
    var objects: Int
    /// Why the largest objects and the unreachable ones are not known: the walk ran out of words
    /// to read (`RetainerSearch.readLimitReached`). The census then counts the objects found.
    var unavailable: String? = nil

    /// Walks the heap of `snapshot` (whose loaded images are `modules`): every Swift object among
    /// malloc's blocks and those the roots reach, the search from the roots, the structures of
    /// what it did not reach, and the dominator
    /// tree of the whole heap, from which the `largestCount` objects that retain the most are
    /// taken (at most 250).
    static func inspect(_ snapshot: ProcessSnapshot, modules: [ModuleImage], largestCount: Int = 10) -> HeapInspection {
        var search = RetainerSearch(snapshot: snapshot)
        search.foreignClasses = currentPlatform().foreignClasses(in: modules)
        // Nothing known alive: objects at one offset into malloc's blocks, and none at their start,
        // are read there (a malloc interposer's header); a heap not understood shows what was found.
        _ = search.enumerateCheckingLayout(knownLive: [])
        search.reachFromRoots(modules: modules)
        // Nothing recorded allocations: no object is one a ledger watched.
        let unreachable = search.unreachableStructures(tracked: [])
        // The dominator tree reads every object's references, meeting the objects outside malloc's
        // heaps that no root reached: the nodes are kept, so that the census counts them and
        // the paths to the largest can still be found.
        let (retained, dominators, _) = search.retainedSizes(extraEntries: [], releasingNodes: false)
        var tallies: [Int32: TypeTally] = [:]
        for node in search.objects.indices {
            let typeIndex = search.nodeTypeIndexes[node]
            let size = search.size(of: Int32(node))
            if tallies[typeIndex] != nil {
                tallies[typeIndex]?.count += 1
                tallies[typeIndex]?.bytes += size
                continue
            }
            let type = search.layout.typeTable[Int(typeIndex)]
            tallies[typeIndex] = TypeTally(
                name: type.name, count: 1, bytes: size, isClassInstance: type.kind == .classInstance,
                isTestCase: type.isTestCase)
        }
        // Instantiations of one generic type with the same name (from two images) are one entry.
        var census: [String: TypeTally] = [:]
        for tally in tallies.values {
            if let known = census[tally.name] {
                census[tally.name]?.count = known.count + tally.count
                census[tally.name]?.bytes = known.bytes + tally.bytes
            } else {
                census[tally.name] = tally
            }
        }
        // A walk that ran out of words to read knows neither the largest nor the unreachable.
        let unavailable = search.readLimitReached
        var largest: [Heavy] = []
        let picked = unavailable == nil ? largestNodes(retained: retained, dominators: dominators, count: largestCount) : []
        for node in picked {
            let address = search.objects[Int(node)]
            guard var path = search.path(to: address) else { continue }
            path.retainedBytes = retained[Int(node)]
            largest.append(Heavy(address: address, typeName: search.nodeType(node).name, path: path))
        }
        return HeapInspection(
            census: census.values.sorted { ($1.bytes, $0.name) < ($0.bytes, $1.name) }, largest: largest,
            unreachable: unavailable == nil ? unreachable : UnreachableStructures(groups: [], types: [], objects: 0, bytes: 0),
            objects: search.objects.count, unavailable: unavailable)
    }

    /// The `count` nodes that retain the most, largest first, each outside the dominator subtrees
    /// of those taken before it: an object a larger one dominates is in that one's bytes already,
    /// and would repeat it (a chain of a million objects is one entry, not ten links of it). An
    /// object's dominators retain more than it does, so they come first: whether one of them was
    /// taken is found by walking up the dominator tree, each node's answer kept until the next
    /// pick (no node is walked twice between two picks).
    static func largestNodes(retained: [Int], dominators: [Int32], count: Int) -> [Int32] {
        let limit = Swift.min(count, 250)
        guard limit > 0 else { return [] }
        let order = (0..<Int32(retained.count)).sorted { (retained[Int($0)], $1) > (retained[Int($1)], $0) }
        // 0: not known; 1: taken, or inside one taken; 2 + n: outside every one of the first n taken.
        var state = [UInt8](repeating: 0, count: retained.count)
        var picked: [Int32] = []
        var chain: [Int32] = []
        for node in order {
            guard picked.count < limit else { break }
            let outside = UInt8(picked.count + 2)
            var current = node
            var inside = false
            chain.removeAll(keepingCapacity: true)
            while current >= 0 {
                if state[Int(current)] == 1 {
                    inside = true
                    break
                }
                if state[Int(current)] == outside { break }
                chain.append(current)
                current = dominators[Int(current)]
            }
            for member in chain { state[Int(member)] = inside ? 1 : outside }
            guard !inside else { continue }
            picked.append(node)
            state[Int(node)] = 1
        }
        return picked
    }
}
