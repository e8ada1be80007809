/// Who holds each instance still alive in a process snapshot: a breadth-first search over strong
/// references from the process's roots, so that each object reached gets a shortest path from
/// the first kind of root that reaches it (globals and thread-locals, then thread stacks and
/// registers, then async tasks, then XCTest's test case objects, which the other roots never
/// search through); an instance no root reaches is explained by a cycle through it, or by the
/// cycle or unreferenced object that holds it. What each instance alone keeps alive comes from
/// the dominator tree of the whole heap. See docs/retainers.md.
struct RetainerSearch {
    /// How one object holds the next.
    enum Hold: Hashable {
        /// A stored property (of a struct inside it too: the outermost property is named), and the
        /// enum case whose payload the reference is, when the property is an enum.
        case property(String, enumCase: EnumCase? = nil)
        /// An array element, and the enum case whose payload it is, for an array of enums.
        case element(Int, enumCase: EnumCase? = nil)
        /// A dictionary value, by its key when it reads as text.
        case value(key: String?)
        /// A dictionary key or a set member.
        case member
        /// A closure's captured value.
        case capture
        /// A captured `var`'s box.
        case boxedValue
        /// A word of a runtime object (an async task's frames, an error box).
        case word
    }

    /// An enum's case on the way: `LoadState` `.loading`.
    struct EnumCase: Hashable {
        var type: String
        var name: String
    }

    /// Where a path starts.
    enum Root: Hashable {
        /// A word of a loaded image's data: a global or static variable.
        case global(slot: UInt64)
        /// A word of thread-local storage.
        case threadLocal(thread: Int32, threadName: String)
        /// A slot of a thread's stack, in the frame of the function at `function` (a return
        /// address, or the stopped instruction for the innermost frame).
        case stack(thread: Int32, threadName: String, function: UInt64, innermost: Bool)
        /// A register of a stopped thread.
        case register(thread: Int32, threadName: String, function: UInt64)
        /// An async task (running or suspended), with the code addresses in its header (the
        /// function it runs, where it resumes), the program's first.
        case task(functions: [UInt64])
        /// An XCTest test case object, which XCTest keeps until the run ends: the path's first step
        /// is the test case, and no root reaches the object but through a test case. The object
        /// goes when the test case lets it go (no cycle without a test case holds it).
        case testCase
        /// A cycle of strong references that nothing else reaches: the path goes round it.
        case cycle
        /// A cycle of `members` objects that nothing else reaches holds the path's first object.
        case heldByCycle(members: Int)
        /// No root, object or cycle found: held from memory the walk does not read, or
        /// over-retained.
        case unknown
    }

    struct Step: Hashable {
        var hold: Hold
        /// The type of the object this step reaches.
        var type: String
        /// For a closure context reached through a function value: the closure's code address.
        var closure: UInt64? = nil
        /// The object is a collection's storage (an array's, a dictionary's, a set's).
        var isCollectionStorage = false
    }

    struct Path {
        /// The steps a path keeps at each end: a longer one keeps its first and last this many,
        /// and counts the objects between (`omittedSteps`), so that a list of millions of nodes
        /// costs a report a thousand steps.
        static let keptAtEachEnd = 500

        var root: Root
        /// From the root's object to the instance; when `omittedSteps` is not 0, the first
        /// `keptAtEachEnd` steps, then (after the omitted ones) the last `keptAtEachEnd`.
        var steps: [Step]
        /// The steps left out between `steps[keptAtEachEnd - 1]` and `steps[keptAtEachEnd]`.
        var omittedSteps = 0
        /// The bytes the instance alone keeps alive, itself included (its dominator subtree).
        var retainedBytes = 0
        /// Another of the instances searched dominates this one: its bytes are in that one's.
        var insideAnotherInstance = false

        init(root: Root, steps: [Step], omittedSteps: Int = 0) {
            self.root = root
            self.steps = steps
            self.omittedSteps = omittedSteps
            shorten()
        }

        /// Keeps the first and last `keptAtEachEnd` steps of a longer path.
        private mutating func shorten() {
            let kept = Self.keptAtEachEnd
            guard steps.count > 2 * kept else { return }
            omittedSteps += steps.count - 2 * kept
            steps = Array(steps[..<kept] + steps[(steps.count - kept)...])
        }

        /// The steps of a path of `count` steps, by index from the root's object: only those a
        /// path keeps are made.
        static func kept(count: Int, _ step: (Int) -> Step) -> Path {
            let kept = keptAtEachEnd
            guard count > 2 * kept else { return Path(root: .unknown, steps: (0..<count).map(step)) }
            return Path(
                root: .unknown, steps: (0..<kept).map(step) + (count - kept..<count).map(step),
                omittedSteps: count - 2 * kept)
        }
    }

    private let layout: SwiftLayout
    private let memory: SnapshotMemory
    private var objects: [UInt64] = []
    /// Each node's type, as an index into the layout's type table.
    private var nodeTypeIndexes: [Int32] = []
    /// The first `enumeratedCount` nodes are malloc's objects, in address order: found by binary
    /// search. Other addresses (objects outside walked heaps, and what is no object) by hash.
    private var enumeratedCount = 0
    private var walkedHeaps: [Range<UInt64>] = []
    private var otherNodes: [UInt64: Int32] = [:]
    /// For each node reached: the node it was reached from (or -1 - the root's index), and how.
    private var parent: [Int32] = []
    /// How each node's parent holds it, as an index into `holds` (-1: not reached): most holds
    /// repeat (a property's name), so a node costs 4 bytes, not a `Hold`.
    private var parentHold: [Int32] = []
    private var holds: [Hold] = []
    private var holdIndexes: [Hold: Int32] = [:]
    /// The closure's code for the nodes reached as a closure's context.
    private var parentClosure: [Int32: UInt64] = [:]
    /// Each node's size in bytes, 4 bytes a node: the few of 4 GiB or more are in `largeSizes`.
    private var nodeSizes: [UInt32] = []
    private var largeSizes: [Int32: Int] = [:]
    private var roots: [Root] = []
    /// The nodes each root phase started from, for the dominator tree.
    private var seeds: [Int32] = []
    /// Strong references among the objects no root reaches, both ways, built on first need.
    private var unreachedGraph: (forward: [Int32: [Edge]], backward: [Int32: [Edge]])? = nil
    /// The nodes that lie on a cycle of unreached objects.
    private var onUnreachedCycle: Set<Int32> = []

    /// A strong reference: the other end, and how it holds.
    private struct Edge {
        var node: Int32
        var hold: Hold
        var closure: UInt64?
    }

    init(snapshot: ProcessSnapshot) {
        memory = SnapshotMemory(snapshot)
        layout = SwiftLayout(memory: memory)
    }

    /// The paths of `instances` (object addresses), searched in `snapshot`; `modules` say where
    /// each loaded image's data is. `retainedSizes` also finds what each instance alone keeps
    /// alive (the dominator tree of the whole heap, the costliest step), which only the report's
    /// paths show.
    static func paths(
        of instances: [UInt64], in snapshot: ProcessSnapshot, modules: [ModuleImage], retainedSizes: Bool = true
    ) -> [UInt64: Path] {
        var search = RetainerSearch(snapshot: snapshot)
        search.enumerateHeap()
        search.reachFromRoots(modules: modules)
        var result: [UInt64: Path] = [:]
        for instance in instances {
            if let path = search.path(to: instance) { result[instance] = path }
        }
        guard retainedSizes else { return result }
        // What is left to do needs of the instances only their nodes, addresses and types.
        let targets = instances.compactMap { address in
            search.node(at: address).map { (node: $0, address: address, type: search.nodeTypeIndexes[Int($0)]) }
        }
        // The paths are found: their tables (8 bytes a node, and the holds) make room for the
        // dominator tree's.
        search.parent = []
        search.parentHold = []
        search.parentClosure = [:]
        search.holds = []
        search.holdIndexes = [:]
        let (retained, dominators) = search.retainedSizes(extraEntries: targets.map(\.node))
        for target in targets { result[target.address]?.retainedBytes = retained[Int(target.node)] }
        // Nested inside another searched instance of its type (a list of leaked models): counted
        // there, so that a group's bytes are not counted twice.
        let addresses = Dictionary(targets.map { ($0.node, $0.address) }, uniquingKeysWith: { first, _ in first })
        let named = targets.map { ($0.node, search.layout.typeTable[Int($0.type)].name) }
        for node in Self.instancesInsideAnother(named, dominators: dominators) {
            if let address = addresses[node] { result[address]?.insideAnotherInstance = true }
        }
        return result
    }

    /// The `instances` (nodes, with their type names) that another of them, of the same type name,
    /// dominates: one depth-first pass over the dominator tree (its own stack, no recursion),
    /// counting on the way down the instances of each type name above the current node.
    private static func instancesInsideAnother(_ instances: [(node: Int32, type: String)], dominators: [Int32]) -> [Int32] {
        var nameIndexes: [String: Int32] = [:]
        var instanceName = [Int32: Int32]()  // node -> its type name's index
        for (node, name) in instances {
            let index = nameIndexes[name] ?? Int32(nameIndexes.count)
            nameIndexes[name] = index
            instanceName[node] = index
        }
        // The dominator tree's children, compact.
        let count = dominators.count
        var childStart = [UInt32](repeating: 0, count: count + 2)
        for up in dominators { childStart[Int(up) + 2] += 1 }  // -1 (the virtual root) at index 1
        for index in 0..<count + 1 { childStart[index + 1] += childStart[index] }
        var children = [Int32](repeating: 0, count: count)
        var filled = childStart
        for (node, up) in dominators.enumerated() {
            children[Int(filled[Int(up) + 1])] = Int32(node)
            filled[Int(up) + 1] += 1
        }
        filled = []
        var above = [Int32](repeating: 0, count: nameIndexes.count)
        var inside: [Int32] = []
        // (node, next child): -1 is the virtual root; a node's count is taken off when it is left.
        var work: [(node: Int32, child: UInt32)] = [(-1, childStart[0])]
        while let (node, child) = work.last {
            guard child < childStart[Int(node) + 2] else {
                work.removeLast()
                if let name = instanceName[node] { above[Int(name)] -= 1 }
                continue
            }
            work[work.count - 1].child += 1
            let next = children[Int(child)]
            if let name = instanceName[next] {
                if above[Int(name)] > 0 { inside.append(next) }
                above[Int(name)] += 1
            }
            work.append((next, childStart[Int(next) + 1]))
        }
        return inside
    }

    /// Makes a node of every Swift object among malloc's blocks in use, so that objects no root
    /// reaches (tasks, cycles) are known too.
    private mutating func enumerateHeap() {
        var ascending = true
        walkedHeaps = MallocHeap.forEachBlock(in: memory) { block in
            guard let typeIndex = layout.objectTypeIndex(at: block.address) else { return }
            if let last = objects.last, last >= block.address { ascending = false }
            objects.append(block.address)
            nodeTypeIndexes.append(typeIndex)
            appendSize(block.size)
        }
        if !ascending {
            // Regions out of order (never in a real snapshot): sorted, as the binary search needs.
            let order = objects.indices.sorted { objects[$0] < objects[$1] }
            objects = order.map { objects[$0] }
            nodeTypeIndexes = order.map { nodeTypeIndexes[$0] }
            let sizes = order.map { size(of: Int32($0)) }
            (nodeSizes, largeSizes) = ([], [:])
            for size in sizes { appendSize(size) }
        }
        parent = [Int32](repeating: Int32.min, count: objects.count)
        parentHold = [Int32](repeating: -1, count: objects.count)
        enumeratedCount = objects.count
    }

    /// Adds the next node's size.
    private mutating func appendSize(_ size: Int) {
        if size >= Int(UInt32.max) { largeSizes[Int32(nodeSizes.count)] = size }
        nodeSizes.append(UInt32(clamping: size))
    }

    /// The node's size in bytes.
    private func size(of node: Int32) -> Int {
        let size = nodeSizes[Int(node)]
        return size == UInt32.max ? largeSizes[node] ?? Int(size) : Int(size)
    }

    /// The enumerated node at `address`, by binary search; nil when none starts there.
    private func enumeratedNode(at address: UInt64) -> Int32? {
        var low = 0
        var high = enumeratedCount
        while low < high {
            let middle = (low + high) / 2
            if objects[middle] < address { low = middle + 1 } else { high = middle }
        }
        return low < enumeratedCount && objects[low] == address ? Int32(low) : nil
    }

    /// Whether `address` lies in a heap whose chunks were walked.
    private func inWalkedHeap(_ address: UInt64) -> Bool {
        var low = 0
        var high = walkedHeaps.count
        while low < high {
            let middle = (low + high) / 2
            if walkedHeaps[middle].upperBound <= address { low = middle + 1 } else { high = middle }
        }
        return low < walkedHeaps.count && walkedHeaps[low].contains(address)
    }

    // MARK: - Nodes

    /// `hold`'s index in `holds`, added on first sight.
    private mutating func holdIndex(_ hold: Hold) -> Int32 {
        if let index = holdIndexes[hold] { return index }
        let index = Int32(holds.count)
        holds.append(hold)
        holdIndexes[hold] = index
        return index
    }

    private func nodeType(_ node: Int32) -> SwiftLayout.ObjectType {
        layout.typeTable[Int(nodeTypeIndexes[Int(node)])]
    }

    /// The node of the live object at `address`, adding it on first sight; nil when none starts there.
    private mutating func node(at address: UInt64) -> Int32? {
        // Most words read are no object's address (a number, code, read-only data): told apart
        // before any table is searched, and never remembered (objectTypeIndex says no to them too).
        guard address & 7 == 0, address > 0xFFFF else { return nil }
        if let node = enumeratedNode(at: address) { return node }
        // In a walked heap, every object is among the enumerated ones.
        if inWalkedHeap(address) { return nil }
        guard memory.isWritable(address) else { return nil }
        if let known = otherNodes[address] { return known >= 0 ? known : nil }
        guard let typeIndex = layout.objectTypeIndex(at: address) else {
            otherNodes[address] = -1
            return nil
        }
        let type = layout.typeTable[Int(typeIndex)]
        let index = Int32(objects.count)
        objects.append(address)
        nodeTypeIndexes.append(typeIndex)
        // Once the paths are found (their tables released), a node met by the dominator tree
        // needs none.
        if parent.count == index {
            parent.append(Int32.min)
            parentHold.append(-1)
        }
        appendSize(extent(of: address, fallback: type.instanceSize))
        otherNodes[address] = index
        return index
    }

    /// How many bytes the object at `address` spans: its malloc chunk's usable size when its header
    /// reads as one, else `fallback`.
    private func extent(of address: UInt64, fallback: Int) -> Int {
        guard let header = memory.word(address &- 8) else { return fallback }
        let size = header & ~7
        guard size >= 32, size & 15 == 0, size < 1 << 36, memory.word(address &- 16 &+ size &- 8) != nil else {
            return fallback
        }
        // An mmapped chunk (bit 1) has no neighbour whose first word it may use.
        let usable = header & 2 != 0 ? Int(size) - 16 : Int(size) - 8
        return Swift.max(usable, fallback)
    }

    /// Calls `body` with each object the node holds strongly, and how.
    private mutating func forEachReference(of node: Int32, _ body: (inout Self, Int32, Hold, UInt64?) -> Void) {
        let address = objects[Int(node)]
        let type = nodeType(node)
        let end = size(of: node)
        func visit(
            _ search: inout Self, offset: Int, hold: Hold, closureAllowed: Bool = true, enumDescriptor: UInt64? = nil,
            isFunction: Bool = false
        ) {
            guard let word = search.memory.word(address &+ UInt64(offset)) else { return }
            let target = word & SwiftLayout.pointerMask
            guard let targetNode = search.node(at: target) else { return }
            var hold = hold
            if let enumDescriptor, let (type, name) = search.layout.payloadCase(ofEnum: enumDescriptor, holding: target) {
                switch hold {
                case .property(let property, _): hold = .property(property, enumCase: EnumCase(type: type, name: name))
                case .element(let index, _): hold = .element(index, enumCase: EnumCase(type: type, name: name))
                default: break
                }
            }
            // A function value is two words, its code (or async function pointer), then its
            // context; the code names the closure.
            var closure: UInt64? = nil
            if closureAllowed, search.nodeType(targetNode).kind == .closureContext {
                if offset >= 24, let function = search.memory.word(address &+ UInt64(offset - 8)),
                    search.isImageConstant(function)
                {
                    closure = function
                }
            } else if closureAllowed, isFunction, case .property = hold, offset >= 24,
                let function = search.memory.word(address &+ UInt64(offset - 8)), search.isCode(function)
            {
                // A closure that captures one object takes that object as its context: the
                // property holds the closure, and the closure the object.
                closure = function
            }
            body(&search, targetNode, hold, closure)
        }
        switch type.kind {
        case .classInstance:
            let fieldsEnd = Swift.min(type.instanceSize, end)
            var fieldIndex = -1
            var offset = 16
            while offset < fieldsEnd {
                while fieldIndex + 1 < type.fields.count, type.fields[fieldIndex + 1].offset <= offset { fieldIndex += 1 }
                if fieldIndex >= 0 {
                    let field = type.fields[fieldIndex]
                    if field.ownership == .strong {
                        visit(
                            &self, offset: offset, hold: .property(field.name), enumDescriptor: field.enumDescriptor,
                            isFunction: field.isFunction)
                    }
                }
                offset += 8
            }
            switch type.collection {
            case .array(let element)?:
                let stride = element.stride
                guard stride > 0, end > 32, let count = memory.word(address &+ 16), count < 1 << 32 else { break }
                let capacity = (end - 32) / stride
                for index in 0..<Swift.min(Int(count), capacity) {
                    var word = 32 + index * stride
                    while word + 8 <= 32 + (index + 1) * stride {
                        visit(&self, offset: word, hold: .element(index), enumDescriptor: element.enumDescriptor)
                        word += 8
                    }
                }
            case .hashed(let key, let value)?:
                forEachHashedBucket(address: address, type: type, end: end, key: key, value: value) {
                    search, keyOffset, valueOffset in
                    if let valueOffset, let value {
                        let keyText = search.describeKey(at: address &+ UInt64(keyOffset), key)
                        var word = valueOffset
                        while word + 8 <= valueOffset + value.stride {
                            visit(&search, offset: word, hold: .value(key: keyText))
                            word += 8
                        }
                    }
                    var word = keyOffset
                    while word + 8 <= keyOffset + key.stride {
                        visit(&search, offset: word, hold: .member)
                        word += 8
                    }
                }
            case nil:
                break
            }
        case .closureContext:
            guard !type.capturesUncertain else { return }
            var offset = type.firstCapture
            while offset + 8 <= end {
                if !type.captureExclusions.contains(where: { $0.contains(offset) }) {
                    visit(&self, offset: offset, hold: .capture)
                }
                offset += 8
            }
        case .box:
            let valueEnd = type.boxedSize > 0 ? Swift.min(end, type.firstCapture + type.boxedSize) : end
            var offset = type.firstCapture
            while offset + 8 <= valueEnd {
                visit(&self, offset: offset, hold: .boxedValue)
                offset += 8
            }
        case .task, .other:
            var offset = 16
            while offset + 8 <= end {
                visit(&self, offset: offset, hold: .word)
                offset += 8
            }
        }
    }

    /// The occupied buckets of a native dictionary or set: the storage's `_scale` gives the
    /// bucket count, a bitmap after its stored properties marks the occupied ones, and `_rawKeys`
    /// and `_rawValues` point into the same object. Only occupied buckets are read: the others
    /// hold whatever was there before.
    private mutating func forEachHashedBucket(
        address: UInt64, type: SwiftLayout.ObjectType, end: Int, key: SwiftLayout.TypeSummary,
        value: SwiftLayout.TypeSummary?, _ body: (inout Self, Int, Int?) -> Void
    ) {
        func field(_ name: String) -> Int? { type.fields.first { $0.name == name }?.offset }
        guard let scaleOffset = field("_scale"), let keysOffset = field("_rawKeys"),
            let scale = memory.byte(address &+ UInt64(scaleOffset)), scale < 40,
            let rawKeys = memory.word(address &+ UInt64(keysOffset))
        else { return }
        let buckets = 1 << Int(scale)
        // Every bucket's key (and value) must fit in the object: a damaged scale reads nothing.
        guard buckets <= end / Swift.max(1, key.stride + (value?.stride ?? 0)) else { return }
        let bitmap = (type.instanceSize + 7) & ~7
        let keysStart = Int(truncatingIfNeeded: Int64(bitPattern: rawKeys &- address))
        var valuesStart: Int? = nil
        if value != nil {
            guard let valuesOffset = field("_rawValues"), let rawValues = memory.word(address &+ UInt64(valuesOffset)) else {
                return
            }
            valuesStart = Int(truncatingIfNeeded: Int64(bitPattern: rawValues &- address))
        }
        // Subtracted, not added: the offsets come from the storage and may be near Int.max.
        guard keysStart >= bitmap, keysStart <= end - buckets * key.stride else { return }
        if let valuesStart, let value {
            guard valuesStart >= bitmap, valuesStart <= end - buckets * value.stride else { return }
        }
        for bucket in 0..<buckets {
            guard let word = memory.word(address &+ UInt64(bitmap + (bucket / 64) * 8)) else { return }
            guard word & (1 << UInt64(bucket % 64)) != 0 else { continue }
            body(&self, keysStart + bucket * key.stride, valuesStart.map { $0 + bucket * (value?.stride ?? 0) })
        }
    }

    /// A dictionary key as the path shows it: a string quoted, an integer as is.
    private func describeKey(at address: UInt64, _ key: SwiftLayout.TypeSummary) -> String? {
        if key.isString { return layout.string(at: address).map { "\"\($0)\"" } }
        if key.isInteger, let value = memory.word(address) {
            return key.stride == 8 ? String(Int64(bitPattern: value)) : String(value & 0xFFFF_FFFF)
        }
        return nil
    }

    /// Whether `address` lies in code: a mapped, executable region of the snapshot.
    /// Whether `address` lies in a mapping of an image's file: code, or an async function's
    /// descriptor (an async closure's "function" points at one, in read-only or relocated data).
    private func isImageConstant(_ address: UInt64) -> Bool {
        guard let index = memory.snapshot.regionIndex(containing: address) else { return false }
        return memory.snapshot.regions[index].path.hasPrefix("/")
    }

    private func isCode(_ address: UInt64) -> Bool {
        guard let index = memory.snapshot.regionIndex(containing: address) else { return false }
        return memory.snapshot.regions[index].isExecutable
    }

    // MARK: - Search

    /// Reaches every object from the roots, globals and thread-locals first, then stacks and
    /// registers, recording for each the shortest path from the first kind of root to reach it.
    private mutating func reachFromRoots(modules: [ModuleImage]) {
        let snapshot = memory.snapshot
        var queue: [Int32] = []
        func seed(_ search: inout Self, _ value: UInt64, _ root: Root, _ queue: inout [Int32]) {
            guard let node = search.node(at: value & SwiftLayout.pointerMask), search.parent[Int(node)] == Int32.min
            else { return }
            search.roots.append(root)
            search.parent[Int(node)] = -Int32(search.roots.count)
            search.seeds.append(node)
            queue.append(node)
        }
        // 1. Globals: the writable data of every loaded image.
        for region in snapshot.regions where region.isWritable && !region.bytes.isEmpty {
            for module in modules where module.start < region.end && region.start < module.end {
                var slot = (Swift.max(region.copiedStart, module.start) + 7) & ~7
                let end = Swift.min(region.copiedEnd, module.end)
                while slot + 8 <= end {
                    if let value = memory.word(slot) { seed(&self, value, .global(slot: slot), &queue) }
                    slot += 8
                }
            }
        }
        // Thread-local storage: static TLS blocks lie just below each thread's thread pointer, above
        // its outermost frame when it is on the thread's stack.
        // A thread pointer at the end of the address space points at no thread's storage.
        for thread in snapshot.threads where thread.threadPointer > 0x10000 && thread.threadPointer <= UInt64.max - 0x1000 {
            let framesEnd = frames(of: thread).end
            // Static TLS is a few hundred bytes here; the thread descriptor above the thread pointer
            // holds pthread_setspecific's first values.
            var slot = (thread.threadPointer &- 0x1000) & ~7
            if framesEnd <= thread.threadPointer, framesEnd > slot { slot = (framesEnd + 7) & ~7 }
            while slot < thread.threadPointer &+ 0x900 {
                if let value = memory.word(slot) {
                    seed(&self, value, .threadLocal(thread: thread.id, threadName: thread.name), &queue)
                }
                slot += 8
            }
        }
        breadthFirst(&queue)
        // 2. Thread stacks, frame by frame, and registers.
        for thread in snapshot.threads {
            let frames = self.frames(of: thread).frames
            for register in thread.registers {
                seed(
                    &self, register,
                    .register(thread: thread.id, threadName: thread.name, function: thread.instructionPointer), &queue)
            }
            guard let index = snapshot.regionIndex(containing: thread.stackPointer) else { continue }
            let region = snapshot.regions[index]
            var slot = Swift.max(region.copiedStart, thread.stackPointer & ~7)
            var frame = 0
            while slot + 8 <= region.copiedEnd {
                while frame + 1 < frames.count, slot >= frames[frame + 1].start { frame += 1 }
                if let value = memory.word(slot) {
                    let function = frames[frame].function
                    seed(
                        &self, value,
                        .stack(thread: thread.id, threadName: thread.name, function: function, innermost: frame == 0),
                        &queue)
                }
                slot += 8
            }
        }
        breadthFirst(&queue)
        // 3. Async tasks no stack or global reaches: running or suspended, held by the executor.
        for node in objects.indices where nodeType(Int32(node)).kind == .task && parent[node] == Int32.min {
            roots.append(.task(functions: taskFunctions(Int32(node))))
            parent[node] = -Int32(roots.count)
            seeds.append(Int32(node))
            queue.append(Int32(node))
        }
        breadthFirst(&queue)
        reachFromTestCases(&queue)
    }

    /// 4. What only XCTest's test case objects hold: XCTest keeps every test case until the run
    /// ends, so a test's property outlives its test without any code leaking it. The roots
    /// above never search through a test case; from here each test case is a root of its own,
    /// except for what a cycle of other objects holds (that cycle outlives the test case: a leak).
    private mutating func reachFromTestCases(_ queue: inout [Int32]) {
        let testCases = objects.indices.map(Int32.init).filter { nodeType($0).isTestCase }
        guard !testCases.isEmpty else { return }
        let heldByCycles = unreachedHeldByCycles()
        for node in testCases {
            if parent[Int(node)] == Int32.min {
                roots.append(.testCase)
                parent[Int(node)] = -Int32(roots.count)
                seeds.append(node)
            }
            queue.append(node)
        }
        breadthFirst(&queue, throughTestCases: true, avoiding: heldByCycles)
    }

    /// The objects no root has reached that a cycle of them (test cases aside) holds, the
    /// cycle's members included.
    private mutating func unreachedHeldByCycles() -> Set<Int32> {
        var forward: [Int32: [Edge]] = [:]
        for node in objects.indices where parent[node] == Int32.min && !nodeType(Int32(node)).isTestCase {
            forEachReference(of: Int32(node)) { search, target, hold, closure in
                guard search.parent[Int(target)] == Int32.min, !search.nodeType(target).isTestCase else { return }
                forward[Int32(node), default: []].append(Edge(node: target, hold: hold, closure: closure))
            }
        }
        var held = Self.nodesOnCycles(forward)
        var pending = Array(held)
        while let node = pending.popLast() {
            for edge in forward[node] ?? [] where held.insert(edge.node).inserted { pending.append(edge.node) }
        }
        return held
    }

    /// The code addresses in a task's first words that are not the runtime's own: the function
    /// it was started with, where it resumes.
    private func taskFunctions(_ node: Int32) -> [UInt64] {
        let address = objects[Int(node)]
        var found: [UInt64] = []
        for offset in stride(from: 16, to: Swift.min(size(of: node), 1 << 16), by: 8) {
            guard let word = memory.word(address &+ UInt64(offset)), isCode(word),
                let index = memory.snapshot.regionIndex(containing: word)
            else { continue }
            let path = memory.snapshot.regions[index].path
            if !path.contains("libswift_Concurrency") && !path.contains("libswiftCore") { found.append(word) }
        }
        return found
    }

    /// A thread's frames, innermost first, by its frame-pointer chain: where each starts on the
    /// stack and the code address that names its function.
    private func frames(of thread: ProcessSnapshot.Thread) -> (frames: [(start: UInt64, function: UInt64)], end: UInt64) {
        var frames: [(start: UInt64, function: UInt64)] = [(thread.stackPointer, thread.instructionPointer)]
        var framePointer =
            isFrameRecord(thread.framePointer, above: thread.stackPointer)
            ? thread.framePointer : firstFrameRecord(above: thread.stackPointer) ?? thread.framePointer
        var end = thread.stackPointer
        while frames.count < 4096, framePointer > frames[frames.count - 1].start,
            let next = memory.word(framePointer), let returnAddress = memory.word(framePointer &+ 8), returnAddress != 0
        {
            frames.append((framePointer &+ 16, returnAddress))
            end = framePointer &+ 16
            guard next > framePointer else { break }
            framePointer = next
        }
        return (frames, end)
    }

    /// Whether `address` holds a frame record (the caller's frame pointer, then a return address
    /// into code) whose chain goes on up the stack for two more records or ends.
    private func isFrameRecord(_ address: UInt64, above stackPointer: UInt64, links: Int = 0) -> Bool {
        var current = address
        for link in 0..<3 {
            guard current > stackPointer, current & 7 == 0, let next = memory.word(current),
                let returnAddress = memory.word(current &+ 8), isCode(returnAddress)
            else { return false }
            if next == 0 { return link >= links }
            guard next > current, next - current < 1 << 20 else { return false }
            current = next
        }
        return true
    }

    /// The first frame record above the stack pointer, for a thread stopped in code that keeps no
    /// frame pointer (the C library's system call wrappers): its frames up to there are counted
    /// as the innermost function's.
    private func firstFrameRecord(above stackPointer: UInt64) -> UInt64? {
        // A stack pointer this close to the end of the address space is no stack's.
        guard stackPointer <= UInt64.max - 16_384 else { return nil }
        var slot = (stackPointer + 7) & ~7
        let limit = stackPointer &+ 16_384
        while slot < limit {
            // Found by scanning, a record must link to another before the chain may end.
            if isFrameRecord(slot, above: stackPointer, links: 1) { return slot }
            slot += 8
        }
        return nil
    }

    /// Reaches what the queued nodes hold, breadth first, but for `avoiding`; a test case is
    /// searched through only with `throughTestCases` (last, by reachFromTestCases).
    private mutating func breadthFirst(
        _ queue: inout [Int32], throughTestCases: Bool = false, avoiding: Set<Int32> = []
    ) {
        var head = 0
        while head < queue.count {
            let node = queue[head]
            head += 1
            guard throughTestCases || !nodeType(node).isTestCase else { continue }
            forEachReference(of: node) { search, target, hold, closure in
                guard search.parent[Int(target)] == Int32.min, !avoiding.contains(target) else { return }
                search.parent[Int(target)] = node
                search.parentHold[Int(target)] = search.holdIndex(hold)
                if let closure { search.parentClosure[target] = closure }
                queue.append(target)
            }
        }
        queue.removeAll(keepingCapacity: true)
    }

    /// The path to `instance`: from its root if one reached it, else round a cycle through it.
    private mutating func path(to instance: UInt64) -> Path? {
        guard let target = node(at: instance) else { return nil }
        if parent[Int(target)] != Int32.min {
            // The objects from the instance up (a list of millions may lead to it): only the
            // steps a path keeps are made.
            var chain: [Int32] = []
            var current = target
            // A task on the way is the root that matters: what keeps the task (its executor, the
            // thread running it) is the runtime's, not the program's.
            // So is a test case: XCTest keeps it, and only through it is the object reached. The
            // instance itself is neither: its path goes on to what holds it.
            while parent[Int(current)] >= 0,
                current == target || (nodeType(current).kind != .task && !nodeType(current).isTestCase)
            {
                chain.append(current)
                current = parent[Int(current)]
            }
            let top = current
            var path = Path.kept(count: chain.count + 1) { index in
                guard index == 0 else { return step(to: chain[chain.count - index]) }
                if nodeType(top).kind == .task && top != target { return step(to: top) }
                if nodeType(top).isTestCase && top != target {
                    return Step(hold: .property(""), type: nodeType(top).name)
                }
                return Step(
                    hold: .property(""), type: nodeType(top).name, isCollectionStorage: nodeType(top).collection != nil)
            }
            if nodeType(top).kind == .task && top != target {
                path.root = .task(functions: taskFunctions(top))
            } else if nodeType(top).isTestCase && top != target {
                path.root = .testCase
            } else {
                path.root = roots[Int(-parent[Int(top)] - 1)]
            }
            return path
        }
        if let cycle = cycle(through: target) { return Path(root: .cycle, steps: cycle) }
        return heldFromOutside(target)
    }

    /// For an unreached instance on no cycle: the nearest unreached object that holds it and lies
    /// on a cycle, or else the farthest one that nothing holds (over-retained, or held from memory
    /// that is not a Swift object), and the path from there.
    private mutating func heldFromOutside(_ target: Int32) -> Path {
        let graph = unreachedEdges()
        var next: [Int32: Edge] = [:]  // toward the target
        var queue: [Int32] = [target]
        var head = 0
        var chosen: Int32? = nil
        var farthest = target
        while head < queue.count {
            let node = queue[head]
            head += 1
            if node != target, onUnreachedCycle.contains(node) {
                chosen = node
                break
            }
            let holders = graph.backward[node] ?? []
            if holders.isEmpty { farthest = node }
            for holder in holders where holder.node != target && next[holder.node] == nil {
                next[holder.node] = Edge(node: node, hold: holder.hold, closure: holder.closure)
                queue.append(holder.node)
            }
        }
        let start = chosen ?? farthest
        var steps = [
            Step(hold: .property(""), type: nodeType(start).name, isCollectionStorage: nodeType(start).collection != nil)
        ]
        var current = start
        while current != target, let edge = next[current] {
            steps.append(
                Step(
                    hold: edge.hold, type: nodeType(edge.node).name, closure: edge.closure,
                    isCollectionStorage: nodeType(edge.node).collection != nil))
            current = edge.node
        }
        guard let cycleStart = chosen else { return Path(root: .unknown, steps: steps) }
        return Path(root: .heldByCycle(members: cycleSize(containing: cycleStart)), steps: steps)
    }

    /// The strong references among objects no root reached, and which of them lie on a cycle
    /// (a strongly connected component of more than one object, or one holding itself).
    private mutating func unreachedEdges() -> (forward: [Int32: [Edge]], backward: [Int32: [Edge]]) {
        if let unreachedGraph { return unreachedGraph }
        var forward: [Int32: [Edge]] = [:]
        var backward: [Int32: [Edge]] = [:]
        for node in objects.indices where parent[node] == Int32.min {
            forEachReference(of: Int32(node)) { search, target, hold, closure in
                guard search.parent[Int(target)] == Int32.min else { return }
                forward[Int32(node), default: []].append(Edge(node: target, hold: hold, closure: closure))
                backward[target, default: []].append(Edge(node: Int32(node), hold: hold, closure: closure))
            }
        }
        onUnreachedCycle = Self.nodesOnCycles(forward)
        unreachedGraph = (forward, backward)
        return (forward, backward)
    }

    /// The nodes of `graph` on a cycle, by Tarjan's strongly connected components (iterative).
    private static func nodesOnCycles(_ graph: [Int32: [Edge]]) -> Set<Int32> {
        var index: [Int32: Int] = [:]
        var low: [Int32: Int] = [:]
        var onStack: Set<Int32> = []
        var stack: [Int32] = []
        var result: Set<Int32> = []
        var counter = 0
        for start in graph.keys where index[start] == nil {
            var work: [(node: Int32, edge: Int)] = [(start, 0)]
            index[start] = counter
            low[start] = counter
            counter += 1
            stack.append(start)
            onStack.insert(start)
            while let (node, edge) = work.last {
                let edges = graph[node] ?? []
                if edge < edges.count {
                    work[work.count - 1].edge += 1
                    let target = edges[edge].node
                    if index[target] == nil {
                        index[target] = counter
                        low[target] = counter
                        counter += 1
                        stack.append(target)
                        onStack.insert(target)
                        work.append((target, 0))
                    } else if onStack.contains(target) {
                        low[node] = Swift.min(low[node]!, index[target]!)
                    }
                    continue
                }
                work.removeLast()
                if let parentNode = work.last?.node { low[parentNode] = Swift.min(low[parentNode]!, low[node]!) }
                guard low[node] == index[node] else { continue }
                var component: [Int32] = []
                while let member = stack.popLast() {
                    onStack.remove(member)
                    component.append(member)
                    if member == node { break }
                }
                let selfHeld = (graph[node] ?? []).contains { $0.node == node }
                if component.count > 1 || selfHeld { result.formUnion(component) }
            }
        }
        return result
    }

    /// How many unreached objects share a cycle with `node` (its strongly connected component).
    private func cycleSize(containing node: Int32) -> Int {
        guard let graph = unreachedGraph else { return 1 }
        // Objects reachable from the node that reach it back.
        var forwardSeen: Set<Int32> = [node]
        var queue = [node]
        while let current = queue.popLast() {
            for edge in graph.forward[current] ?? []
            where onUnreachedCycle.contains(edge.node) && forwardSeen.insert(edge.node).inserted {
                queue.append(edge.node)
            }
        }
        var backwardSeen: Set<Int32> = [node]
        queue = [node]
        while let current = queue.popLast() {
            for edge in graph.backward[current] ?? []
            where forwardSeen.contains(edge.node) && backwardSeen.insert(edge.node).inserted {
                queue.append(edge.node)
            }
        }
        return backwardSeen.count
    }

    // MARK: - Retained size

    /// Each node's retained size (the bytes of its dominator subtree) and its immediate dominator
    /// (-1: the virtual root), over the graph of every strong reference, entered from the roots'
    /// objects, then `extraEntries` if unreached, then any object still unreached
    /// (`DominatorTree`: near-linear on any shape of heap, and no recursion). The last use of the
    /// search: its node tables are released on the way.
    private mutating func retainedSizes(extraEntries: [Int32]) -> (retained: [Int], dominators: [Int32]) {
        // Successors of every node, once. Reading a node's references can find an object outside
        // the walked heaps that no search has met yet: it becomes a node, and is read in turn.
        var successorStart: [UInt32] = []
        successorStart.reserveCapacity(objects.count + 1)
        var successors: [Int32] = []
        var next = 0
        while next < objects.count {
            successorStart.append(UInt32(truncatingIfNeeded: successors.count))
            forEachReference(of: Int32(next)) { _, target, _, _ in successors.append(target) }
            next += 1
        }
        successorStart.append(UInt32(truncatingIfNeeded: successors.count))
        precondition(successors.count < Int(UInt32.max), "more strong references than a 32-bit index counts")
        // Every reference is read: of the nodes, only their sizes are needed from here, and the
        // rest (addresses, types, the graph of unreached objects: 12 bytes a node and more) makes
        // room for the tree's tables. No node can be looked up after this.
        let nodeCount = objects.count
        (objects, nodeTypeIndexes, otherNodes, walkedHeaps, enumeratedCount) = ([], [], [:], [], 0)
        (unreachedGraph, onUnreachedCycle) = (nil, [])
        let tree = DominatorTree(
            nodeCount: nodeCount, successorStart: consume successorStart, successors: consume successors,
            entries: seeds + extraEntries)
        // Subtree sums, what a node dominates before it (reverse preorder).
        var retained = (0..<Int32(nodeCount)).map { size(of: $0) }
        for node in tree.preorder.reversed() {
            let up = tree.dominators[Int(node)]
            if up >= 0 { retained[Int(up)] += retained[Int(node)] }
        }
        return (retained, tree.dominators)
    }

    private func step(to node: Int32) -> Step {
        Step(
            hold: parentHold[Int(node)] >= 0 ? holds[Int(parentHold[Int(node)])] : .word, type: nodeType(node).name,
            closure: parentClosure[node],
            isCollectionStorage: nodeType(node).collection != nil)
    }

    /// The shortest cycle of strong references from `start` back to it, among objects no root
    /// reached: the instance first, each step holding the next, the last step back to it.
    private mutating func cycle(through start: Int32) -> [Step]? {
        var previous: [Int32: (Int32, Hold, UInt64?)] = [:]
        var queue: [Int32] = [start]
        var head = 0
        var closing: (Int32, Hold, UInt64?)? = nil
        while head < queue.count, closing == nil, queue.count < 1_000_000 {
            let node = queue[head]
            head += 1
            forEachReference(of: node) { search, target, hold, closure in
                guard closing == nil, search.parent[Int(target)] == Int32.min else { return }
                if target == start {
                    closing = (node, hold, closure)
                } else if previous[target] == nil {
                    previous[target] = (node, hold, closure)
                    queue.append(target)
                }
            }
        }
        guard let closing else { return nil }
        var steps = [Step(hold: closing.1, type: nodeType(start).name, closure: closing.2)]
        var current = closing.0
        while current != start, let (from, hold, closure) = previous[current] {
            steps.append(
                Step(
                    hold: hold, type: nodeType(current).name, closure: closure,
                    isCollectionStorage: nodeType(current).collection != nil))
            current = from
        }
        steps.append(Step(hold: .property(""), type: nodeType(start).name))
        return steps.reversed()
    }
}
