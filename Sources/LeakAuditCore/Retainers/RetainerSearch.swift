/// Who holds each instance still alive in a process snapshot: a breadth-first search over strong
/// references from the process's roots, so that each object reached gets a shortest path from
/// the first kind of root that reaches it (globals and thread-locals, then XCTest's test case
/// objects, which the other roots never search through, then thread stacks and registers, then
/// async tasks, then untyped memory). An instance no root reaches is explained by a cycle through
/// it, or by the cycle or unreferenced object that holds it. What each instance alone keeps alive
/// comes from the dominator tree of the whole heap. See docs/retainers.md.
struct RetainerSearch {
    // The heap graph (HeapGraph.swift): a node per live object, its type and size.
    let layout: SwiftLayout
    let memory: SnapshotMemory
    var objects: [UInt64] = []
    /// Each node's type, as an index into the layout's type table.
    var nodeTypeIndexes: [Int32] = []
    /// The first `enumeratedCount` nodes are malloc's objects, in address order: found by binary
    /// search. Other addresses (objects outside walked heaps, and what is no object) by hash.
    var enumeratedCount = 0
    var walkedHeaps: [Range<UInt64>] = []
    /// How many bytes into malloc's blocks objects start: 0, or a malloc interposer's header
    /// (HeapLayoutCheck.swift).
    var objectOffset: UInt64 = 0
    /// The offset into its block of each address known alive that the heap walk sampled and
    /// found inside a block (HeapLayoutCheck.swift).
    var sampleOffsets: [UInt64: UInt64] = [:]
    /// What the heap walk found besides the objects, and the free blocks that read as in use.
    var heapWalk = MallocHeap.Walk()
    var freeBlocks = MallocHeap.FreeBlocks()
    /// The malloc blocks that start like a C library `FILE` (fopen's): their buffers are text.
    var streams: [UInt64] = []
    /// The first words of the C and C++ objects whose unused words untyped memory's search skips
    /// (an ICU `UnicodeString`'s text, a C block's tail past its size).
    var foreignClasses = ForeignClasses()
    /// How many more words the reads of objects' references (`forEachReference`) may cover, in
    /// all: `readLimit`'s multiple of the copy's writable memory. Each pass over the objects
    /// reads each word of writable memory about once, and a walk makes a handful of passes; only
    /// objects that overlap (extents read from damaged memory: a class instance of a size no
    /// class has, at every few hundred bytes of a mapping) read a word many times over. Once it
    /// is spent, no object's references are read any more and the walk says why
    /// (`readLimitReached`) rather than searching on for minutes.
    var wordsLeftToRead: Int
    /// Whether `wordsLeftToRead` ran out: the walk's paths and structures are then unknown.
    var ranOutOfWords = false
    /// Why the walk's paths and structures are unknown, once `wordsLeftToRead` ran out: a
    /// reference left unread would leave what it holds unreached (called unreachable, or given a
    /// longer path).
    var readLimitReached: String? {
        guard ranOutOfWords else { return nil }
        let megabytes = (memory.writableBytes + (1 << 20) - 1) >> 20
        return
            "the heap walk stopped once it had read \(Self.readLimit) times as many words as the process's writable memory holds (\(megabytes) MB), as objects that overlap make it (damaged memory?), so retaining paths and the unreachable check are not available for this process"
    }
    /// The enumerated nodes outside `walkedHeaps` (chunks mapped on their own), in address order.
    var enumeratedOutsideHeaps: [Int32] = []
    var otherNodes: [UInt64: Int32] = [:]
    /// Each node's size in bytes, 4 bytes a node: the few of 4 GiB or more are in `largeSizes`.
    var nodeSizes: [UInt32] = []
    var largeSizes: [Int32: Int] = [:]

    // The search from the roots (RootSearch.swift).
    /// For each node reached: the node it was reached from (or -1 - the root's index), and how.
    var parent: [Int32] = []
    /// How each node's parent holds it, as an index into `holds` (-1: not reached, or a word; an
    /// array element's index `i` as `-2 - i`): most holds repeat (a property's name), so a node
    /// costs 4 bytes, not a `Hold`.
    var parentHold: [Int32] = []
    var holds: [Hold] = []
    var holdIndexes: [Hold: Int32] = [:]
    /// The closure's code for the nodes reached as a closure's context.
    var parentClosure: [Int32: UInt64] = [:]
    var roots: [Root] = []
    /// The nodes each root phase started from, for the dominator tree.
    var seeds: [Int32] = []
    /// The nodes of the instances searched for, when nothing but their paths is read from the
    /// search (no retained sizes, no unreachable objects): it ends once it has reached them all.
    /// An object's path is fixed when the search reaches it, so searching on changes none of
    /// theirs (`reachedEveryInstance()`). Empty: the search reaches everything.
    var stopsOnceReached: [Int32] = []
    /// How many of `stopsOnceReached`, in order, are known reached.
    var reachedInstances = 0

    /// `parent` as it was before malloc blocks and unwalked memory were read
    /// (`reachFromUntypedMemory`): what only untyped memory reaches was unreached then. A path
    /// from untyped memory to an object a cycle holds names the cycle (`path(to:)`).
    var parentBeforeUntypedMemory: [Int32]? = nil
    /// `unreachedGraph` of the objects unreached before untyped memory was read, built on first
    /// need.
    var unreachedGraphBeforeUntypedMemory: UnreachedGraph? = nil
    /// The malloc blocks that are slabs of an async task's allocator, each with the part that
    /// holds its frames in use (`slabFrames(of:taskAllocatorImages:)`), by address: a task holds
    /// what its frames in them hold (`reachFromRoots`).
    var taskSlabs: [UInt64: Range<UInt64>] = [:]
    /// For each object a word of untyped memory reached first: how many strong references the
    /// objects hold to it, counted in one pass over the heap on first need.
    var typedHoldsOfUntypedSeeds: [Int32: Int]? = nil

    // The objects no root reaches (UnreachedCycles.swift).
    /// Strong references among the objects no root reaches, built on first need.
    var unreachedGraph: UnreachedGraph? = nil
    /// Whether the search for a cycle through an unreached instance reads the graph of unreached
    /// objects once it is complete (false: each object's layout again; a test compares the two).
    var cyclesFromUnreachedGraph = true
    /// The objects a search for a cycle (`cycle(through:)`) met, each marked with that search's
    /// number (`cycleSearches`), and the index of the reference it was met by in the search's
    /// own list: kept from search to search, so that none clears or hashes a table of its own.
    var cycleMarks: [UInt32] = []
    var cycleMetBy: [Int32] = []
    var cycleSearches: UInt32 = 0
    /// Whether an instance held from outside a cycle by one holder alone takes its holder's path
    /// and one step more (false: a search of its own; a test compares the two).
    var sharesHeldFromOutsidePaths = true

    /// The strong references among the objects no root reaches, both ways, and their cycles.
    struct UnreachedGraph {
        var forward: [Int32: [Edge]] = [:]
        var backward: [Int32: [Edge]] = [:]
        /// The nodes that lie on a cycle, each with how many objects its cycle has (its strongly
        /// connected component).
        var cycleSizes: [Int32: Int] = [:]
        /// Whether it holds every reference among the unreached objects: no object was first met
        /// while it was built, whose own references would be missing.
        var isComplete = false
        /// How many nodes the search had when it was built: a node met since (an object outside
        /// the walked heaps, first read by a later search) is in none of its tables, and the graph
        /// is built again before it is read (`unreachedEdges`).
        var nodeCount = 0
        /// The paths `heldFromOutside` found over this graph, by node.
        var heldFromOutsidePaths: [Int32: Path] = [:]
    }

    /// A strong reference: the other end, and how it holds.
    struct Edge {
        var node: Int32
        var hold: Hold
        var closure: UInt64?
    }

    /// The executable regions of the snapshot but the Swift runtime's own libraries, in address
    /// order: a code address a task's memory holds there names a function of the program
    /// (`taskFunctions`). Picked once, not for each word of each task (thousands of tasks, each
    /// read whole), where two substring searches of its region's path cost more than the search.
    let programCode: [Range<UInt64>]

    /// How many times over the reads of objects' references may cover the copy's writable memory
    /// (`wordsLeftToRead`), and how many words more (a small copy's walk is never cut short).
    static let readLimit = 16
    static let readAllowance = 1 << 20

    init(snapshot: ProcessSnapshot) {
        memory = SnapshotMemory(snapshot)
        layout = SwiftLayout(memory: memory)
        wordsLeftToRead = Self.readLimit * (memory.writableBytes / 8) + Self.readAllowance
        programCode = snapshot.regions.filter {
            $0.isExecutable && $0.start < $0.end && !$0.path.contains("libswift_Concurrency")
                && !$0.path.contains("libswiftCore")
        }.map { $0.start..<$0.end }
    }

    /// The nodes of `instances`, when each is an enumerated object or lies in a walked heap (where
    /// every object is enumerated: there is none there); nil when one lies elsewhere, where only
    /// the search adds objects (`node(at:)`), so that none can be told apart before it.
    func enumeratedNodes(of instances: [UInt64]) -> [Int32]? {
        var nodes: [Int32] = []
        for instance in instances {
            if let node = enumeratedNode(at: instance) {
                nodes.append(node)
            } else if !inWalkedHeap(instance) {
                return nil
            }
        }
        return nodes
    }

    /// The paths of `instances` (object addresses), searched in `snapshot`; `modules` say where
    /// each loaded image's data is. `retainedSizes` also finds what each instance alone keeps
    /// alive (the dominator tree of the whole heap, the costliest step), which only the report's
    /// paths show.
    static func paths(
        of instances: [UInt64], in snapshot: ProcessSnapshot, modules: [ModuleImage], retainedSizes: Bool = true,
        foreignClasses: ForeignClasses? = nil
    ) -> [UInt64: Path] {
        walk(
            of: instances, in: snapshot, modules: modules, retainedSizes: retainedSizes, unreachable: nil,
            foreignClasses: foreignClasses
        ).paths
    }

    /// `paths(of:in:modules:retainedSizes:)`, and, given `unreachable` (the addresses whose
    /// allocation the process's ledger watched), the structures that no root reaches, from the
    /// same search. The foreign classes are the platform's, found in `modules`, unless given.
    /// When the objects known alive (the instances and the watched addresses) lie at one offset
    /// into malloc's blocks, they are read there; when they are elsewhere, nothing is searched and
    /// `unavailable` says why (HeapLayoutCheck.swift), as it does when the walk ran out of words to
    /// read (`readLimitReached`): nothing it found is then kept. Without retained sizes and
    /// unreachable objects, the search ends once it has reached every instance, unless
    /// `searchesEverything` (which finds the same paths: the heap walk's fuzz target compares, as
    /// it does for `cyclesFromUnreachedGraph` and `sharesHeldFromOutsidePaths`).
    static func walk(
        of instances: [UInt64], in snapshot: ProcessSnapshot, modules: [ModuleImage], retainedSizes: Bool,
        unreachable tracked: Set<UInt64>?, foreignClasses: ForeignClasses? = nil, searchesEverything: Bool = false,
        cyclesFromUnreachedGraph: Bool = true, sharesHeldFromOutsidePaths: Bool = true
    ) -> (paths: [UInt64: Path], unreachable: UnreachableStructures?, unavailable: String?) {
        let knownLive = instances + (tracked.map { Array($0.prefix(4 * layoutCheckSample)) } ?? [])
        var (search, layoutNotUnderstood) = enumerated(
            snapshot, modules: modules, foreignClasses: foreignClasses, knownLive: knownLive)
        if let layoutNotUnderstood { return ([:], nil, layoutNotUnderstood) }
        search.cyclesFromUnreachedGraph = cyclesFromUnreachedGraph
        search.sharesHeldFromOutsidePaths = sharesHeldFromOutsidePaths
        if !retainedSizes && tracked == nil && !searchesEverything {
            search.stopsOnceReached = search.enumeratedNodes(of: instances) ?? []
        }
        search.reachFromRoots(modules: modules)
        let unreachable = tracked.map { search.unreachableStructures(tracked: $0) }
        let paths = search.paths(of: instances, retainedSizes: retainedSizes)
        if let reason = search.readLimitReached { return ([:], nil, reason) }
        return (paths, unreachable, nil)
    }

    /// A search over `snapshot`'s objects, enumerated, and why their layout was not understood
    /// (`enumerateCheckingLayout`, nil when it was): where `walk` and `testCasesHold` start.
    private static func enumerated(
        _ snapshot: ProcessSnapshot, modules: [ModuleImage], foreignClasses: ForeignClasses?, knownLive: [UInt64]
    ) -> (search: RetainerSearch, layoutNotUnderstood: String?) {
        var search = RetainerSearch(snapshot: snapshot)
        search.foreignClasses = foreignClasses ?? currentPlatform().foreignClasses(in: modules)
        let layoutNotUnderstood = search.enumerateCheckingLayout(knownLive: knownLive)
        return (search, layoutNotUnderstood)
    }

    /// The paths of `instances` once the search from the roots is done, with their retained sizes
    /// if asked; the path tables are released for the dominator tree's.
    private mutating func paths(of instances: [UInt64], retainedSizes: Bool) -> [UInt64: Path] {
        var result: [UInt64: Path] = [:]
        for instance in instances {
            if let path = path(to: instance) { result[instance] = path }
        }
        guard retainedSizes else { return result }
        // What is left to do needs of the instances only their nodes, addresses and types.
        let targets = instances.compactMap { address in
            node(at: address).map { (node: $0, address: address, type: nodeTypeIndexes[Int($0)]) }
        }
        // The paths are found: their tables (8 bytes a node, and the holds) make room for the
        // dominator tree's.
        parent = []
        parentHold = []
        parentClosure = [:]
        holds = []
        holdIndexes = [:]
        let (retained, dominators, _) = self.retainedSizes(extraEntries: targets.map(\.node))
        for target in targets { result[target.address]?.retainedBytes = retained[Int(target.node)] }
        // Nested inside another searched instance of its type (a list of leaked models): counted
        // there, so that a group's bytes are not counted twice.
        let addresses = Dictionary(targets.map { ($0.node, $0.address) }, uniquingKeysWith: { first, _ in first })
        let named = targets.map { ($0.node, layout.typeTable[Int($0.type)].name) }
        for node in Self.instancesInsideAnother(named, dominators: dominators) {
            if let address = addresses[node] { result[address]?.insideAnotherInstance = true }
        }
        return result
    }
}

extension RetainerSearch {
    /// Whether XCTest's test case objects hold every one of `instances` in `snapshot` in a stored
    /// property of their own (strong, the value stored in the object: an optional, a `lazy var`,
    /// a struct's field; not an array's element), or through `let` properties of the objects
    /// those hold, and of theirs: XCTest keeps its test case objects until the run ends, so only
    /// work a test left in flight that sets such a property again could release those instances
    /// before then, and a `let` is never set again. What another object holds otherwise (in a
    /// `var`, an array, a closure), work in flight may still let go of (a view model's
    /// asynchronous load replacing its items). False when one of them is no object the heap walk
    /// finds, or the heap's layout is not understood. The foreign classes are the platform's,
    /// found in `modules`, unless given.
    static func testCasesHold(
        _ instances: [UInt64], in snapshot: ProcessSnapshot, modules: [ModuleImage], foreignClasses: ForeignClasses? = nil
    ) -> Bool {
        var (search, layoutNotUnderstood) = enumerated(
            snapshot, modules: modules, foreignClasses: foreignClasses, knownLive: instances)
        guard layoutNotUnderstood == nil, let targets = search.enumeratedNodes(of: instances), targets.count == instances.count
        else { return false }
        var remaining = Set(targets)
        var held: Set<Int32> = []
        var pending: [Int32] = []
        for node in 0..<Int32(search.objects.count) where search.nodeType(node).isTestCase {
            search.forEachReference(of: node) { search, target, _, _ in
                if !search.nodeType(target).isTestCase, held.insert(target).inserted { pending.append(target) }
            }
        }
        while let node = pending.popLast(), !remaining.isEmpty {
            remaining.remove(node)
            search.forEachReference(of: node, letsOnly: true) { _, target, _, _ in
                if held.insert(target).inserted { pending.append(target) }
            }
        }
        return remaining.isEmpty && !search.ranOutOfWords
    }
}
