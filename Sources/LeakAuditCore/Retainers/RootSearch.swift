// The search from the roots: globals and thread-local storage, then XCTest's test cases, then
// thread stacks and registers, then async tasks, then untyped memory (malloc blocks that are no
// Swift object, memory no heap walk enumerated), breadth first, keeping for each object reached the
// object it was reached from; and the path to an instance, built from those links. An object is
// named by the root that keeps it longest: a global for the process's life, a test case until the
// run ends, a thread's stack or a task only while it runs.

extension RetainerSearch {
    /// Reaches every object from the roots, globals and thread-locals first, then test cases, then
    /// stacks and registers, recording for each the shortest path from the first kind of root to
    /// reach it.
    /// A word of a root that points at or into an object reaches it (an interior pointer: an
    /// element's address that a buffer pointer over an array's storage holds).
    mutating func reachFromRoots(modules: [ModuleImage]) {
        let snapshot = memory.snapshot
        var queue: [Int32] = []
        // The tasks among the objects the heap walk found (the search adds objects it meets
        // outside the walked heaps: they are not among them).
        let tasks = objects.indices.map(Int32.init).filter { nodeType($0).kind == .task }
        // Malloc's blocks that are no object (and the slabs among them) are found after the
        // first three phases, only when the search goes on or a path runs through a task
        // (`endsWithEveryInstanceReached`); the images' streams are noted as phase 1 reads them.
        var streamsInImages: [UInt64] = []
        func seed(_ search: inout Self, _ value: UInt64, _ root: Root, _ queue: inout [Int32]) {
            search.seed(value, root, &queue)
        }
        // 1. Globals: the writable data of every loaded image. A word whose high half of its low
        // half is `_IO_MAGIC` may start a C library `FILE` (`stdioBuffers`).
        for data in imageData(modules) {
            var slot = data.lowerBound
            while slot + 8 <= data.upperBound {
                if let value = memory.word(slot) {
                    if UInt32(truncatingIfNeeded: value) >> 16 == Self.stdioMagic { streamsInImages.append(slot) }
                    if !isMallocState(slot) { seed(&self, value, .global(slot: slot), &queue) }
                }
                slot += 8
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
        if endsWithEveryInstanceReached(tasks: tasks, modules: modules, streamsInImages: streamsInImages) { return }
        // 2. What XCTest's test cases keep, before what a thread's stack holds: an event loop's
        // thread still winding down from a test's tearDown holds what the test case keeps too
        // (swift-nio's DatagramChannelTests), and the test case keeps it after the thread ends.
        reachFromTestCases(&queue)
        if endsWithEveryInstanceReached(tasks: tasks, modules: modules, streamsInImages: streamsInImages) { return }
        // 3. Thread stacks, frame by frame, then registers. Outermost slot first: an object's live
        // holder is the outermost frame that names it. Every frame that touched it since was called
        // from there, so the words those calls left lie below, stale once they returned, and stay
        // where a later call leaves a slot unwritten (padding, a buffer a blocking call has not
        // filled, the C library's wrappers around a system call), in frames named by the stopped
        // instruction; so do its registers, last. The caller owns what it passes down, too (a
        // callee borrows its arguments).
        for thread in snapshot.threads {
            let frames = self.frames(of: thread).frames
            if let index = snapshot.regionIndex(containing: thread.stackPointer) {
                let region = snapshot.regions[index]
                let lowest = Swift.max(region.copiedStart, thread.stackPointer & ~7)
                var slot = lowest &+ (region.copiedEnd &- lowest &- 8) / 8 * 8
                var frame = frames.count - 1
                while lowest + 8 <= region.copiedEnd {
                    while frame > 0, slot < frames[frame].start { frame -= 1 }
                    if let value = memory.word(slot) {
                        let function = frames[frame].function
                        seed(
                            &self, value,
                            .stack(thread: thread.id, threadName: thread.name, function: function, innermost: frame == 0),
                            &queue)
                    }
                    if slot < lowest + 8 { break }
                    slot -= 8
                }
            }
            for register in thread.registers {
                seed(
                    &self, register,
                    .register(thread: thread.id, threadName: thread.name, function: thread.instructionPointer), &queue)
            }
        }
        breadthFirst(&queue)
        if endsWithEveryInstanceReached(tasks: tasks, modules: modules, streamsInImages: streamsInImages) { return }
        let untypedBlocks = untypedBlocksAndSlabs(tasks: tasks, modules: modules, streamsInImages: streamsInImages)
        // 4. Async tasks no stack or global reaches: running or suspended, held by the executor.
        // Each task's functions are read once (every word of the task and its slabs).
        var taskRoots: [Int32: Root] = [:]
        for node in tasks where parent[Int(node)] == Int32.min {
            let root = Root.task(functions: taskFunctions(node))
            taskRoots[node] = root
            roots.append(root)
            parent[Int(node)] = -Int32(roots.count)
            seeds.append(node)
            queue.append(node)
        }
        breadthFirst(&queue)
        // What tasks' frames hold in the slabs their allocators took from malloc, once the first
        // slab (inside the task) filled: the task holds it, as it holds what its own words name.
        if !taskSlabs.isEmpty {
            for node in tasks {
                let frames = slabs(of: node)
                guard !frames.isEmpty else { continue }
                let root = taskRoots[node] ?? Root.task(functions: taskFunctions(node))
                for frames in frames {
                    var slot = frames.lowerBound &+ 32
                    while slot &+ 8 <= frames.upperBound {
                        if let value = memory.word(slot) { seed(&self, value, root, &queue) }
                        slot &+= 8
                    }
                }
            }
            breadthFirst(&queue)
        }
        if reachedEveryInstance() { return }
        reachFromUntypedMemory(&queue, untyped: untypedBlocks, modules: modules)
    }

    /// The frames in use of the slabs task `node`'s allocator took from malloc (`taskSlabs`): its
    /// words name the first (the slab inside the task names the next), and each slab the one
    /// after it (its second word).
    private func slabs(of node: Int32) -> [Range<UInt64>] {
        let address = objects[Int(node)]
        var pending: [UInt64] = []
        var offset: UInt64 = 16
        while offset + 8 <= UInt64(size(of: node)) {
            if let word = memory.word(address &+ offset), taskSlabs[word] != nil { pending.append(word) }
            offset += 8
        }
        var read: Set<UInt64> = []
        var frames: [Range<UInt64>] = []
        while let slab = pending.popLast() {
            guard let range = taskSlabs[slab], read.insert(slab).inserted else { continue }
            frames.append(range)
            if let next = memory.word(slab &+ 8), taskSlabs[next] != nil { pending.append(next) }
        }
        return frames
    }

    /// Makes the object `value` points at or into (spare bits masked) a root's, unless reached.
    private mutating func seed(_ value: UInt64, _ root: Root, _ queue: inout [Int32]) {
        guard let node = node(atOrInside: value & SwiftLayout.pointerMask), parent[Int(node)] == Int32.min else {
            return
        }
        roots.append(root)
        parent[Int(node)] = -Int32(roots.count)
        seeds.append(node)
        queue.append(node)
    }

    /// 5. What untyped memory holds, where no layout says which words are references: first the
    /// `Unmanaged` and raw-pointer properties of the objects reached, then every malloc block in
    /// use that is no live Swift object (a C structure, a raw-pointer allocation, an async task
    /// allocator's slab up to its frames in use, an object whose metadata is not understood), and
    /// every writable mapping no heap walk enumerated, no image's data and no thread's stack
    /// (another allocator's memory). Each word that points at or into an object reaches it: an
    /// object handed to C as an opaque retained pointer is held, never leaked. Not read: the
    /// blocks malloc keeps free (tcache, fastbins) and C stream buffers, whose stale words would
    /// name false holders, and a Swift side table, whose first word points back at its object
    /// without holding it.
    private mutating func reachFromUntypedMemory(
        _ queue: inout [Int32], untyped: [MallocHeap.Block], modules: [ModuleImage]
    ) {
        // The `Unmanaged` and raw-pointer properties of the objects reached: from here on, every
        // object reached is read with them.
        for node in objects.indices where parent[node] != Int32.min && nodeType(Int32(node)).hasOpaqueFields {
            queue.append(Int32(node))
        }
        breadthFirst(&queue, opaque: true)
        parentBeforeUntypedMemory = parent
        // Malloc's blocks in use that are no object, gathered first, then read: a closure that
        // read them would copy the whole search for each block (its tables' references retained
        // and released).
        let taskAllocatorImages = Self.taskAllocatorImages(in: modules)
        for block in untyped {
            scanWords(liveRange(of: block, taskAllocatorImages: taskAllocatorImages), &queue) {
                .memory(bytes: block.size, isMallocBlock: true)
            }
        }
        breadthFirst(&queue, opaque: true)
        // Writable memory outside the walked heaps, the images and the threads' stacks.
        let snapshot = memory.snapshot
        let stacks = Set(snapshot.threads.compactMap { snapshot.regionIndex(containing: $0.stackPointer) })
        for (index, region) in snapshot.regions.enumerated()
        where region.isWritable && !region.bytes.isEmpty && !stacks.contains(index)
            && !modules.contains(where: { $0.start < region.end && region.start < $0.end })
        {
            var start = region.copiedStart
            let size = Int(clamping: region.end - region.start)
            for heap in walkedHeaps where heap.lowerBound < region.copiedEnd && heap.upperBound > start {
                if heap.lowerBound > start {
                    scanWords(start..<heap.lowerBound, &queue) { .memory(bytes: size, isMallocBlock: false) }
                }
                start = heap.upperBound
            }
            if start < region.copiedEnd {
                scanWords(start..<region.copiedEnd, &queue) { .memory(bytes: size, isMallocBlock: false) }
            }
        }
        breadthFirst(&queue, opaque: true)
    }

    /// Malloc's blocks in use, in address order, but for the enumerated objects, the free blocks
    /// that read as in use and the C library's stream buffers; past a malloc interposer's header
    /// (`objectOffset`), where what the program allocated starts.
    private func untypedBlocks(modules: [ModuleImage], streamsInImages: [UInt64]) -> [MallocHeap.Block] {
        let buffers = stdioBuffers(streamsInImages: streamsInImages)
        var untyped: [MallocHeap.Block] = []
        var next = 0
        _ = MallocHeap.forEachBlock(in: memory) { block in
            while next < enumeratedCount, objects[next] < block.address { next += 1 }
            guard next >= enumeratedCount || objects[next] - block.address >= UInt64(block.size),
                !freeBlocks.addresses.contains(block.address), !buffers.contains(block.address)
            else { return }
            guard objectOffset < UInt64(block.size) else { return }
            untyped.append(MallocHeap.Block(address: block.address + objectOffset, size: block.size - Int(objectOffset)))
        }
        return untyped
    }

    /// `_IO_MAGIC`, the high half of every C library `FILE`'s first word (`_flags`).
    static let stdioMagic: UInt32 = 0xFBAD

    /// The malloc blocks that are C library stream buffers (`FILE._IO_buf_base`), of the standard
    /// streams in the images' data and of the streams fopen made: text that stdio wrote, whose
    /// words past what it wrote are a freed block's stale ones (stdout's buffer, allocated at the
    /// first print, often reuses what a program freed just before). A stream is read as glibc
    /// lays out `struct _IO_FILE`: `_flags` with `_IO_MAGIC`, then its read, write and buffer
    /// pointers; it counts only when they are in order within one block in use (past a malloc
    /// interposer's header, `objectOffset`). The blocks' addresses, as malloc's walk gives them.
    /// `streamsInImages`: the words of the images' data whose `_flags` read as a stream's, found
    /// as the search read them for globals.
    private func stdioBuffers(streamsInImages: [UInt64]) -> Set<UInt64> {
        var buffers: Set<UInt64> = []
        func add(stream: UInt64) {
            guard stream <= UInt64.max - 72, let base = memory.word(stream &+ 56), let end = memory.word(stream &+ 64),
                base < end, base & 15 == 0, base >= objectOffset, inWalkedHeap(base - objectOffset),
                let header = memory.word(base - objectOffset &- 8), header & 2 == 0, header & ~7 >= 32 + objectOffset,
                end - base <= (header & ~7) - 8 - objectOffset
            else { return }
            // The read and write pointers (read_ptr, read_end, read_base, write_base, write_ptr,
            // write_end) are null or within the buffer.
            for offset in stride(from: UInt64(8), through: 48, by: 8) {
                guard let pointer = memory.word(stream &+ offset), pointer == 0 || (pointer >= base && pointer <= end)
                else { return }
            }
            buffers.insert(base - objectOffset)
        }
        for stream in streams { add(stream: stream) }
        for stream in streamsInImages { add(stream: stream) }
        return buffers
    }

    /// The copied, writable data of every loaded image (its globals and statics), each range
    /// starting at an aligned word: only the pages a copy took, since the rest reads as zeros
    /// (bss the process never touched, and leak-audit's own shim state, which is not copied).
    private func imageData(_ modules: [ModuleImage]) -> [Range<UInt64>] {
        var ranges: [Range<UInt64>] = []
        for region in memory.snapshot.regions where region.isWritable && !region.bytes.isEmpty {
            for module in modules where module.start < region.end && region.start < module.end {
                let start = (Swift.max(region.copiedStart, module.start) + 7) & ~7
                let end = Swift.min(region.copiedEnd, module.end)
                guard start < end else { continue }
                for part in memory.copiedParts(of: start..<end) {
                    let aligned = (part.lowerBound + 7) & ~7
                    if aligned < part.upperBound { ranges.append(aligned..<part.upperBound) }
                }
            }
        }
        return ranges
    }

    /// The part of a malloc block that may hold references: all of it, but for a slab of an async
    /// task's allocator (its first word the runtime's slab metadata in libswift_Concurrency, then
    /// the next slab, its capacity and the offset its allocations reach), whose frames end at
    /// that offset: above it lie the stale words of frames already popped; and for a C block
    /// copied to the heap, which ends at its size (`cBlockSize(at:)`).
    private func liveRange(of block: MallocHeap.Block, taskAllocatorImages: [ModuleImage]) -> Range<UInt64> {
        if let size = cBlockSize(at: block.address), size <= block.size { return block.address..<(block.address &+ UInt64(size)) }
        return slabFrames(of: block, taskAllocatorImages: taskAllocatorImages)
            ?? block.address..<(block.address &+ UInt64(block.size))
    }

    /// The loaded images whose code allocates async tasks' slabs (`slabFrames`): picked out of
    /// `modules` once, not by their paths for each block.
    private static func taskAllocatorImages(in modules: [ModuleImage]) -> [ModuleImage] {
        modules.filter { $0.path.contains("libswift_Concurrency") }
    }

    /// For a slab of an async task's allocator (`liveRange(of:taskAllocatorImages:)`): its header
    /// and the frames in use; nil for another block.
    private func slabFrames(of block: MallocHeap.Block, taskAllocatorImages: [ModuleImage]) -> Range<UInt64>? {
        let header: UInt64 = 32
        guard block.size >= Int(header), let metadata = memory.word(block.address),
            let capacity = memory.uint32(block.address &+ 16), let used = memory.uint32(block.address &+ 20),
            UInt64(capacity) + header <= UInt64(block.size), UInt64(capacity) + header + 32 > UInt64(block.size),
            used <= capacity, used % 16 == 0,
            taskAllocatorImages.contains(where: { $0.start <= metadata && metadata < $0.end })
        else { return nil }
        return block.address..<(block.address &+ header &+ UInt64(used))
    }

    /// A C block on the heap (the Blocks ABI's `Block_layout`: `isa`, 32-bit flags and reserved
    /// bits, `invoke`, `descriptor`, then the captured variables): its size, header and captures,
    /// from its descriptor (`reserved`, then `size`), rounded up to a word. Past it lie the stale
    /// words of the block's earlier owner (a block of 48 bytes is given 56). Nil for a block that
    /// is not one: its first word not `_NSConcreteMallocBlock`, `BLOCK_NEEDS_FREE` (1 << 24) not
    /// set, its descriptor unread or its size less than the header.
    private func cBlockSize(at address: UInt64) -> Int? {
        let header: UInt64 = 32
        let needsFree: UInt32 = 1 << 24
        guard !foreignClasses.mallocBlocks.isEmpty, let isa = memory.word(address),
            foreignClasses.mallocBlocks.contains(isa), let flags = memory.uint32(address &+ 8), flags & needsFree != 0,
            let descriptor = memory.word(address &+ 24), let size = memory.word(descriptor &+ 8), size >= header,
            size <= 1 << 31
        else { return nil }
        return Int((size + 7) & ~7)
    }

    /// Seeds from each aligned word of `range` that points at or into an object not yet reached,
    /// but for a side table's pointer back at its object and the words of an ICU `UnicodeString`
    /// that hold its text or lie past it (`referenceSlot(ofUnicodeStringAt:)`).
    private mutating func scanWords(_ range: Range<UInt64>, _ queue: inout [Int32], root: () -> Root) {
        for part in memory.copiedParts(of: range) {
            var slot = (part.lowerBound &+ 7) & ~7
            while slot < part.upperBound, part.upperBound - slot >= 8 {
                guard let value = memory.word(slot) else {
                    slot += 8
                    continue
                }
                if !foreignClasses.unicodeStrings.isEmpty, foreignClasses.unicodeStrings.contains(value),
                    part.upperBound - slot >= Self.unicodeStringSize
                {
                    if let array = referenceSlot(ofUnicodeStringAt: slot), let word = memory.word(array) {
                        scanWord(word, at: array, &queue, root: root)
                    }
                    slot += Self.unicodeStringSize
                    continue
                }
                scanWord(value, at: slot, &queue, root: root)
                slot += 8
            }
        }
    }

    /// Seeds from `value`, read at `slot` of untyped memory, if it points at or into an object
    /// not yet reached and is no side table's pointer back at its object.
    private mutating func scanWord(_ value: UInt64, at slot: UInt64, _ queue: inout [Int32], root: () -> Root) {
        // Most words are no address (zeros, small numbers): told apart before any lookup.
        if value & SwiftLayout.pointerMask > 0xFFFF, let node = node(atOrInside: value & SwiftLayout.pointerMask),
            parent[Int(node)] == Int32.min, !isSideTable(slot, of: node)
        {
            seed(value, root(), &queue)
        }
    }

    /// An ICU `UnicodeString` (`unicode/unistr.h`): its vtable pointer, then a union of 56 bytes
    /// whose first 16 bits are its length and flags. A short string keeps its UTF-16 text in the
    /// union (flag `kUsingStackBuffer`), past the text the stale bytes of the memory's earlier
    /// owner; a longer one keeps its length, its capacity and a pointer to its text (`fArray`,
    /// at 24), and nothing past it.
    static let unicodeStringSize: UInt64 = 64
    static let unicodeStringInlineCapacity: UInt16 = 27

    /// Where the `UnicodeString` whose vtable pointer is at `slot` may hold a reference: its text
    /// pointer, when it keeps its text elsewhere (a buffer that may alias any memory, so read as
    /// any word is); nil when it keeps the text inline (flags exactly `kUsingStackBuffer`, the
    /// length within the inline buffer): text, and stale bytes past it. Its other words are its
    /// length, flags and capacity, never an address.
    private func referenceSlot(ofUnicodeStringAt slot: UInt64) -> UInt64? {
        let usingStackBuffer: UInt16 = 2
        guard let lengthAndFlags = memory.uint16(slot &+ 8) else { return slot &+ 24 }
        let inline = lengthAndFlags & 0x1F == usingStackBuffer && lengthAndFlags >> 5 <= Self.unicodeStringInlineCapacity
        return inline ? nil : slot &+ 24
    }

    /// Whether `slot` is the first word of `node`'s side table: the object's reference counts
    /// name it (a weak reference's target, which holds the object's address without keeping it).
    private func isSideTable(_ slot: UInt64, of node: Int32) -> Bool {
        guard let bits = memory.word(objects[Int(node)] &+ 8) else { return false }
        return SwiftLayout.sideTable(refCounts: bits) == slot
    }

    /// 2. What XCTest's test case objects hold that no global does: XCTest keeps every test case
    /// until the run ends, so a test's property outlives its test without any code leaking it.
    /// The other roots never search through a test case; from here each test case is a root of
    /// its own, except for what a cycle of other objects holds (that cycle outlives the test case:
    /// a leak) and for async tasks (a task holds what it holds while it runs, and is named as
    /// the root of what it holds).
    private mutating func reachFromTestCases(_ queue: inout [Int32]) {
        let testCases = objects.indices.map(Int32.init).filter { nodeType($0).isTestCase }
        guard !testCases.isEmpty else { return }
        var (heldByCycles, references) = unreachedHeldByCycles()
        for node in objects.indices where nodeType(Int32(node)).kind == .task { heldByCycles.insert(Int32(node)) }
        for node in testCases {
            if parent[Int(node)] == Int32.min {
                roots.append(.testCase)
                parent[Int(node)] = -Int32(roots.count)
                seeds.append(node)
            }
            queue.append(node)
        }
        breadthFirst(&queue, throughTestCases: true, avoiding: heldByCycles, references: references)
    }

    /// The objects no root has reached that a cycle of them (test cases aside) holds, the
    /// cycle's members included; and the references that led there: from each of the first
    /// `read` objects no root had reached (test cases aside), those to others, in the order
    /// `forEachReference` gives them. An object first met while they were read is not among them.
    private mutating func unreachedHeldByCycles() -> (Set<Int32>, UnreachedReferences) {
        var forward: [Int32: [Edge]] = [:]
        let read = objects.count
        forEachUnreachedReference(among: read, skippingTestCases: true) { forward[$0, default: []].append($1) }
        var held = Self.nodesOnCycles(forward)
        var pending = Array(held)
        while let node = pending.popLast() {
            for edge in forward[node] ?? [] where held.insert(edge.node).inserted { pending.append(edge.node) }
        }
        return (held, UnreachedReferences(forward: forward, read: read))
    }

    /// The references among the objects no root reached, as `unreachedHeldByCycles` read them:
    /// the search from test cases reads them there, not from each object's layout again.
    struct UnreachedReferences {
        var forward: [Int32: [Edge]]
        var read: Int
    }

    /// The code addresses in a task's first words that are not the runtime's own: the function
    /// it was started with, where it resumes.
    private func taskFunctions(_ node: Int32) -> [UInt64] {
        let address = objects[Int(node)]
        var found: [UInt64] = []
        func look(at slot: UInt64) {
            if let word = memory.word(slot), MallocHeap.contains(programCode, word) { found.append(word) }
        }
        for offset in stride(from: 16, to: Swift.min(size(of: node), 1 << 16), by: 8) { look(at: address &+ UInt64(offset)) }
        // Then its frames in the slabs its allocator took from malloc: inner ones, once the first
        // slab, inside the task, filled.
        if !taskSlabs.isEmpty {
            for frames in slabs(of: node) {
                for slot in stride(from: frames.lowerBound &+ 32, to: frames.upperBound, by: 8) { look(at: slot) }
            }
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
    /// searched through only with `throughTestCases` (by reachFromTestCases), and an
    /// `Unmanaged` or raw-pointer property only with `opaque` (with untyped memory).
    private mutating func breadthFirst(
        _ queue: inout [Int32], throughTestCases: Bool = false, avoiding: Set<Int32> = [], opaque: Bool = false,
        references: UnreachedReferences? = nil
    ) {
        var head = 0
        while head < queue.count {
            // Every thousand objects, whether the instances searched for are all reached.
            if head & 1023 == 0 && !stopsOnceReached.isEmpty && reachedEveryInstance() { break }
            let node = queue[head]
            head += 1
            guard throughTestCases || !nodeType(node).isTestCase else { continue }
            // An object no root had reached when `references` were read (what is queued here, but
            // test cases and objects first met since): its references as read then.
            if let references, Int(node) < references.read, !nodeType(node).isTestCase {
                for edge in references.forward[node] ?? [] {
                    guard parent[Int(edge.node)] == Int32.min, !avoiding.contains(edge.node) else { continue }
                    parent[Int(edge.node)] = node
                    parentHold[Int(edge.node)] = holdIndex(edge.hold)
                    if let closure = edge.closure { parentClosure[edge.node] = closure }
                    queue.append(edge.node)
                }
                continue
            }
            forEachReference(of: node, opaque: opaque) { search, target, hold, closure in
                guard search.parent[Int(target)] == Int32.min, !avoiding.contains(target) else { return }
                search.parent[Int(target)] = node
                search.parentHold[Int(target)] = search.holdIndex(hold)
                if let closure { search.parentClosure[target] = closure }
                queue.append(target)
            }
        }
        queue.removeAll(keepingCapacity: true)
    }

    /// True when every instance searched for is reached (`stopsOnceReached`): the search ends,
    /// and finds the task slabs first when a path runs through a task (which its frames name).
    private mutating func endsWithEveryInstanceReached(
        tasks: [Int32], modules: [ModuleImage], streamsInImages: [UInt64]
    ) -> Bool {
        guard reachedEveryInstance() else { return false }
        if !tasks.isEmpty && stopsOnceReached.contains(where: isHeldThroughATask) {
            _ = untypedBlocksAndSlabs(tasks: tasks, modules: modules, streamsInImages: streamsInImages)
        }
        return true
    }

    /// Malloc's blocks in use that are no object (`untypedBlocks`), noting the slabs of tasks'
    /// allocators among them when there are tasks (`taskSlabs`).
    private mutating func untypedBlocksAndSlabs(
        tasks: [Int32], modules: [ModuleImage], streamsInImages: [UInt64]
    ) -> [MallocHeap.Block] {
        let found = untypedBlocks(modules: modules, streamsInImages: streamsInImages)
        if !tasks.isEmpty {
            let taskAllocatorImages = Self.taskAllocatorImages(in: modules)
            for block in found {
                if let frames = slabFrames(of: block, taskAllocatorImages: taskAllocatorImages) {
                    taskSlabs[block.address] = frames
                }
            }
        }
        return found
    }

    /// The object the path of `target`, reached, starts from (`path(to:)`), after `visit` saw each
    /// object on the way up from `target` to it. A task on the way is the root that matters: what
    /// keeps the task (its executor, the thread running it) is the runtime's, not the program's.
    /// So is a test case: XCTest keeps it, and only through it is the object reached. The
    /// instance itself is neither: its path goes on to what holds it.
    func pathTop(of target: Int32, _ visit: (Int32) -> Void = { _ in }) -> Int32 {
        var current = target
        while parent[Int(current)] >= 0,
            current == target || (nodeType(current).kind != .task && !nodeType(current).isTestCase)
        {
            visit(current)
            current = parent[Int(current)]
        }
        return current
    }

    /// Whether the path of `target`, reached, starts at a task other than itself (`path(to:)`),
    /// which is named by its frames, those in its allocator's slabs included.
    func isHeldThroughATask(_ target: Int32) -> Bool {
        let top = pathTop(of: target)
        return top != target && nodeType(top).kind == .task
    }

    /// True when the search may end (`stopsOnceReached`): every instance searched for is reached.
    private mutating func reachedEveryInstance() -> Bool {
        guard !stopsOnceReached.isEmpty else { return false }
        while reachedInstances < stopsOnceReached.count, parent[Int(stopsOnceReached[reachedInstances])] != Int32.min {
            reachedInstances += 1
        }
        return reachedInstances == stopsOnceReached.count
    }

    /// `hold`'s index in `holds`, added on first sight; an array element with no enum case is
    /// kept as `-2 - its index` instead (`hold(of:)`): an array of a million objects would add a
    /// million holds, each with its dictionary entry, about 250 bytes an element.
    private mutating func holdIndex(_ hold: Hold) -> Int32 {
        if case .element(let element, enumCase: nil) = hold, element >= 0, element <= Int(Int32.max) - 2 {
            return -2 - Int32(element)
        }
        if let index = holdIndexes[hold] { return index }
        let index = Int32(holds.count)
        holds.append(hold)
        holdIndexes[hold] = index
        return index
    }

    /// The path to `instance`: from its root if one reached it, else round a cycle through it.
    mutating func path(to instance: UInt64) -> Path? {
        guard let target = node(at: instance) else { return nil }
        if parent[Int(target)] != Int32.min {
            // The objects from the instance up (a list of millions may lead to it): only the
            // steps a path keeps are made.
            var chain: [Int32] = []
            let top = pathTop(of: target) { chain.append($0) }
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
            if case .memory = path.root, !isRetainedByUntypedMemory(top), var held = pathIgnoringUntypedMemory(to: target) {
                held.alsoPointedAtFrom = path.root
                return held
            }
            return path
        }
        if let cycle = cycle(through: target) { return Path(root: .cycle, steps: cycle) }
        return heldFromOutside(target)
    }

    /// For an instance that only untyped memory reaches: the cycle it lies on, or the cycle that
    /// holds it, among the objects no root reached before untyped memory was read; nil when none
    /// does (only untyped memory holds it: a C structure, an `Unmanaged` pointer kept there).
    /// Untyped memory is read conservatively, every word of a block in use, its earlier owner's
    /// stale words among them: the first block whose word points into a cycle would otherwise be
    /// named as the holder of what the cycle holds (a channel's pipeline that its test case also
    /// keeps, which the search from the test cases leaves to the cycle). The cycle is the
    /// structure that keeps it whatever that word is; the word is named beside it. What is
    /// reachable does not change.
    private mutating func pathIgnoringUntypedMemory(to target: Int32) -> Path? {
        // A node met since (an object first met through a word read later) was unreached then.
        guard var before = parentBeforeUntypedMemory, Int(target) >= before.count || before[Int(target)] == Int32.min
        else { return nil }
        // The searches of unreached objects read `parent` and their cached graph: both as they
        // were before untyped memory was read, then put back, with the nodes those searches met
        // (unreached either way). Swapped, not assigned: with two references to one table, the
        // searches' first change would copy it whole, for every instance asked about.
        parentBeforeUntypedMemory = nil
        if before.count < parent.count { before += repeatElement(Int32.min, count: parent.count - before.count) }
        swap(&parent, &before)
        swap(&unreachedGraph, &unreachedGraphBeforeUntypedMemory)
        let path = cycle(through: target).map { Path(root: .cycle, steps: $0) } ?? heldFromOutside(target)
        swap(&unreachedGraph, &unreachedGraphBeforeUntypedMemory)
        if before.count < parent.count { before += repeatElement(Int32.min, count: parent.count - before.count) }
        swap(&parent, &before)
        parentBeforeUntypedMemory = before
        switch path.root {
        case .cycle, .heldByCycle: return path
        default: return nil
        }
    }

    /// Whether untyped memory holds a retain of `node`, an object one of its words reached first:
    /// its strong count is more than the strong references objects hold to it. An object handed
    /// to C as an opaque retained pointer (`Unmanaged.passRetained`) is; a word that merely
    /// points at it (stale, left by a block's earlier owner, or unretained) adds no count. True
    /// when the count cannot be read (immortal, unreadable): the word is then taken as a holder.
    private mutating func isRetainedByUntypedMemory(_ node: Int32) -> Bool {
        guard let strong = strongCount(of: node) else { return true }
        if typedHoldsOfUntypedSeeds == nil {
            var counts: [Int32: Int] = [:]
            for candidate in objects.indices where parent[candidate] < 0 && parent[candidate] != Int32.min {
                if case .memory = roots[Int(-parent[candidate] - 1)] { counts[Int32(candidate)] = 0 }
            }
            if !counts.isEmpty {
                for holder in objects.indices {
                    forEachReference(of: Int32(holder)) { _, target, _, _ in
                        if let count = counts[target] { counts[target] = count + 1 }
                    }
                }
            }
            typedHoldsOfUntypedSeeds = counts
        }
        return strong > typedHoldsOfUntypedSeeds?[node] ?? 0
    }

    /// The strong reference count of the object at `node` (RefCount.h on 64-bit: the extra strong
    /// count in bits 33 to 62, in its side table's counts when it has one), or nil when it is
    /// immortal or cannot be read.
    private func strongCount(of node: Int32) -> Int? {
        guard var bits = memory.word(objects[Int(node)] &+ 8), !SwiftLayout.isImmortal(refCounts: bits) else { return nil }
        if let sideTable = SwiftLayout.sideTable(refCounts: bits) {
            guard let counts = memory.word(sideTable &+ 8) else { return nil }
            bits = counts
        }
        return Int((bits >> 33) & 0x3FFF_FFFF) + 1
    }

    /// How `node`'s parent holds it (`parentHold`: an index into `holds`, an element's index
    /// below -1, or -1 for a word).
    private func hold(of node: Int32) -> Hold {
        let index = parentHold[Int(node)]
        if index >= 0 { return holds[Int(index)] }
        return index == -1 ? .word : .element(Int(-2 - index))
    }

    private func step(to node: Int32) -> Step {
        Step(
            hold: hold(of: node), type: nodeType(node).name,
            closure: parentClosure[node],
            isCollectionStorage: nodeType(node).collection != nil)
    }
}
