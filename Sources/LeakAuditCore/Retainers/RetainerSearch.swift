/// Who holds each instance still alive in a process snapshot: a breadth-first search over strong
/// references from the process's roots, so that each object reached gets a shortest path from
/// the first kind of root that reaches it (globals and thread-locals, then thread stacks and
/// registers); an instance no root reaches is explained by a cycle through it when there is one.
/// See docs/retainers.md.
struct RetainerSearch {
    /// How one object holds the next.
    enum Hold: Hashable {
        /// A stored property (of a struct inside it too: the outermost property is named).
        case property(String)
        /// An array element.
        case element(Int)
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
        /// A cycle of strong references that nothing else reaches: the path goes round it.
        case cycle
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
        var root: Root
        var steps: [Step]
    }

    private let layout: SwiftLayout
    private let memory: SnapshotMemory
    private var objects: [UInt64] = []
    private var nodeTypes: [SwiftLayout.ObjectType] = []
    private var nodeIndex: [UInt64: Int32] = [:]
    /// For each node reached: the node it was reached from (or -1 - the root's index), and how.
    private var parent: [Int32] = []
    private var parentHold: [Hold?] = []
    private var parentClosure: [UInt64?] = []
    private var roots: [Root] = []

    init(snapshot: ProcessSnapshot) {
        memory = SnapshotMemory(snapshot)
        layout = SwiftLayout(memory: memory)
    }

    /// The paths of `instances` (object addresses), searched in `snapshot`; `modules` say where
    /// each loaded image's data is.
    static func paths(of instances: [UInt64], in snapshot: ProcessSnapshot, modules: [ModuleImage]) -> [UInt64: Path] {
        var search = RetainerSearch(snapshot: snapshot)
        search.reachFromRoots(modules: modules)
        var result: [UInt64: Path] = [:]
        for instance in instances {
            if let path = search.path(to: instance) { result[instance] = path }
        }
        return result
    }

    // MARK: - Nodes

    /// The node of the live object at `address`, adding it on first sight; nil when none starts there.
    private mutating func node(at address: UInt64) -> Int32? {
        if let known = nodeIndex[address] { return known >= 0 ? known : nil }
        guard let type = layout.objectType(at: address) else {
            nodeIndex[address] = -1
            return nil
        }
        let index = Int32(objects.count)
        objects.append(address)
        nodeTypes.append(type)
        parent.append(Int32.min)
        parentHold.append(nil)
        parentClosure.append(nil)
        nodeIndex[address] = index
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
        let type = nodeTypes[Int(node)]
        let end = extent(of: address, fallback: type.instanceSize)
        func visit(_ search: inout Self, offset: Int, hold: Hold, closureAllowed: Bool = true) {
            guard let word = search.memory.word(address &+ UInt64(offset)) else { return }
            let target = word & SwiftLayout.pointerMask
            guard let targetNode = search.node(at: target) else { return }
            var closure: UInt64? = nil
            if closureAllowed, search.nodeTypes[Int(targetNode)].kind == .closureContext, offset >= 8,
                let function = search.memory.word(address &+ UInt64(offset - 8)), search.isCode(function)
            {
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
                    if field.ownership == .strong { visit(&self, offset: offset, hold: .property(field.name)) }
                }
                offset += 8
            }
            switch type.collection {
            case .array(let element)?:
                let stride = element.stride
                guard stride > 0, let count = memory.word(address &+ 16), count < 1 << 32 else { break }
                let capacity = (end - 32) / stride
                for index in 0..<Swift.min(Int(count), capacity) {
                    var word = 32 + index * stride
                    while word + 8 <= 32 + (index + 1) * stride {
                        visit(&self, offset: word, hold: .element(index))
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
        let bitmap = (type.instanceSize + 7) & ~7
        let keysStart = Int(truncatingIfNeeded: Int64(bitPattern: rawKeys &- address))
        var valuesStart: Int? = nil
        if value != nil {
            guard let valuesOffset = field("_rawValues"), let rawValues = memory.word(address &+ UInt64(valuesOffset)) else {
                return
            }
            valuesStart = Int(truncatingIfNeeded: Int64(bitPattern: rawValues &- address))
        }
        guard keysStart >= bitmap, keysStart + buckets * key.stride <= end else { return }
        if let valuesStart, let value {
            guard valuesStart >= bitmap, valuesStart + buckets * value.stride <= end else { return }
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
        // Thread-local storage: static TLS blocks lie just below each thread's thread pointer.
        for thread in snapshot.threads where thread.threadPointer > 0x10000 {
            var slot = (thread.threadPointer &- 0x4000) & ~7
            while slot < thread.threadPointer &+ 0x100 {
                if let value = memory.word(slot) {
                    seed(&self, value, .threadLocal(thread: thread.id, threadName: thread.name), &queue)
                }
                slot += 8
            }
        }
        breadthFirst(&queue)
        // 2. Thread stacks, frame by frame, and registers.
        for thread in snapshot.threads {
            let frames = self.frames(of: thread)
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
    }

    /// A thread's frames, innermost first, by its frame-pointer chain: where each starts on the
    /// stack and the code address that names its function.
    private func frames(of thread: ProcessSnapshot.Thread) -> [(start: UInt64, function: UInt64)] {
        var frames: [(start: UInt64, function: UInt64)] = [(thread.stackPointer, thread.instructionPointer)]
        var framePointer = thread.framePointer
        while frames.count < 4096, framePointer > frames[frames.count - 1].start,
            let next = memory.word(framePointer), let returnAddress = memory.word(framePointer &+ 8), returnAddress != 0
        {
            frames.append((framePointer &+ 16, returnAddress))
            guard next > framePointer else { break }
            framePointer = next
        }
        return frames
    }

    private mutating func breadthFirst(_ queue: inout [Int32]) {
        var head = 0
        while head < queue.count {
            let node = queue[head]
            head += 1
            forEachReference(of: node) { search, target, hold, closure in
                guard search.parent[Int(target)] == Int32.min else { return }
                search.parent[Int(target)] = node
                search.parentHold[Int(target)] = hold
                search.parentClosure[Int(target)] = closure
                queue.append(target)
            }
        }
        queue.removeAll(keepingCapacity: true)
    }

    /// The path to `instance`: from its root if one reached it, else round a cycle through it.
    private mutating func path(to instance: UInt64) -> Path? {
        guard let target = node(at: instance) else { return nil }
        if parent[Int(target)] != Int32.min {
            var steps: [Step] = []
            var current = target
            while parent[Int(current)] >= 0 {
                steps.append(step(to: current))
                current = parent[Int(current)]
            }
            steps.append(
                Step(
                    hold: .property(""), type: nodeTypes[Int(current)].name,
                    isCollectionStorage: nodeTypes[Int(current)].collection != nil))
            let root = roots[Int(-parent[Int(current)] - 1)]
            return Path(root: root, steps: steps.reversed())
        }
        if let cycle = cycle(through: target) { return Path(root: .cycle, steps: cycle) }
        return Path(root: .unknown, steps: [Step(hold: .property(""), type: nodeTypes[Int(target)].name)])
    }

    private func step(to node: Int32) -> Step {
        Step(
            hold: parentHold[Int(node)] ?? .word, type: nodeTypes[Int(node)].name, closure: parentClosure[Int(node)],
            isCollectionStorage: nodeTypes[Int(node)].collection != nil)
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
        var steps = [Step(hold: closing.1, type: nodeTypes[Int(start)].name, closure: closing.2)]
        var current = closing.0
        while current != start, let (from, hold, closure) = previous[current] {
            steps.append(
                Step(
                    hold: hold, type: nodeTypes[Int(current)].name, closure: closure,
                    isCollectionStorage: nodeTypes[Int(current)].collection != nil))
            current = from
        }
        steps.append(Step(hold: .property(""), type: nodeTypes[Int(start)].name))
        return steps.reversed()
    }
}
