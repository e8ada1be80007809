/// The blocks glibc's malloc handed out, found in a process snapshot by walking its chunks: the
/// main arena's `[heap]`, each thread arena's 64 MiB-aligned heaps, and the chunks it mapped on
/// their own. Every Swift object is such a block, so this finds the objects nothing in the roots
/// reaches: async tasks, and what only a cycle or non-Swift memory holds. A chain of chunk sizes
/// that does not end exactly where its heap ends is dropped, never half-trusted; a process that
/// uses another allocator has no chain, and the search then starts from the roots alone.
///
/// A chunk reads as in use when the next one's PREV_INUSE bit is set, and so do the blocks malloc
/// keeps free on its per-thread caches (tcache) and fastbins: `freeBlocks` finds those by their
/// lists, so that their stale words are never read as a holder (glibc 2.36's malloc.c layouts).
enum MallocHeap {
    /// A block in use: its user address and its usable size.
    struct Block {
        var address: UInt64
        var size: Int
    }

    /// What a walk of the heaps found besides the blocks: where it walked, and the places of the
    /// structures that name the free blocks.
    struct Walk {
        /// The address ranges whose chunks were walked (every object there is among the blocks).
        var walked: [Range<UInt64>] = []
        /// The top chunk of the main arena's `[heap]`: the main arena's `malloc_state.top`.
        var mainHeapTop: UInt64? = nil
        /// Each thread arena's `malloc_state`, in the first heap of its arena.
        var threadArenas: [UInt64] = []
        /// The blocks the size of a `tcache_perthread_struct` (each thread's is one).
        var tcacheCandidates: [UInt64] = []
    }

    /// glibc's HEAP_MAX_SIZE on 64-bit systems: a thread arena's heaps are aligned to it.
    static let arenaHeapAlignment: UInt64 = 64 << 20
    /// The sizes a heap's `heap_info` header has had: 48 bytes since glibc 2.35 (which added
    /// `pagesize`), 32 before.
    static let heapInfoSizes: [UInt64] = [48, 32]

    /// Every block in use, sorted by address, and the address ranges whose chunks were walked
    /// (every object there is among the blocks).
    static func blocks(in memory: SnapshotMemory) -> (blocks: [Block], walked: [Range<UInt64>]) {
        var blocks: [Block] = []
        let walk = forEachBlock(in: memory) { blocks.append($0) }
        return (blocks, walk.walked)
    }

    /// Calls `body` with every block in use, in address order (regions are sorted, and each
    /// heap's chain ascends), without keeping them: a heap of millions of blocks costs the walk
    /// nothing but its callers' own tables. Returns what the walk found: the address ranges whose
    /// chunks were walked, the arenas and the candidates for each thread's tcache.
    static func forEachBlock(in memory: SnapshotMemory, _ body: (Block) -> Void) -> Walk {
        var result = Walk()
        var walked: [Range<UInt64>] = []
        func visit(_ block: Block) {
            if block.size == Int(tcacheStructChunkSize) - 8 { result.tcacheCandidates.append(block.address) }
            body(block)
        }
        for region in memory.snapshot.regions where region.isWritable && !region.bytes.isEmpty {
            guard region.copiedStart == region.start else { continue }  // a stack
            if region.path == "[heap]" {
                // The main arena: chunks from the start of the break area (after a little alignment).
                for skip in stride(from: UInt64(0), through: 64, by: 16) {
                    guard let top = walk(memory, from: region.start + skip, to: region.copiedEnd, visit) else { continue }
                    walked.append(region.start..<region.copiedEnd)
                    result.mainHeapTop = top
                    break
                }
            } else if region.path.isEmpty, let heaps = walkThreadArenaHeaps(in: region, memory, visit) {
                // Thread arenas' heaps, each at a multiple of HEAP_MAX_SIZE inside the region.
                walked += heaps.walked
                result.threadArenas += heaps.arenas
            } else if region.path.isEmpty, let header = memory.word(region.start + 8), header & 2 != 0 {
                // Chunks mmapped on their own, one per mapping (the kernel shows adjacent ones as
                // one region): each starts at its alignment slack and its size (with IS_MMAPPED)
                // reaches the next.
                var position = region.start
                while position < region.copiedEnd, let slack = memory.word(position), slack < 4096, slack & 15 == 0,
                    let header = memory.word(position + slack + 8), header & 2 != 0
                {
                    let chunk = position + slack
                    let size = header & ~7
                    guard size >= 32, chunk < region.copiedEnd, size <= region.copiedEnd - chunk else { break }
                    visit(Block(address: chunk + 16, size: Int(size) - 16))
                    position = chunk + size
                }
                if position > region.start { walked.append(region.start..<position) }
            }
        }
        walked.sort { $0.lowerBound < $1.lowerBound }
        result.walked = walked
        return result
    }

    /// Walks the thread arenas' heaps in `region`: one at each multiple of HEAP_MAX_SIZE in it
    /// whose `heap_info` gives a size that fits. The kernel shows adjacent mappings with the same
    /// permissions as one region, so one region may hold two heaps grown whole (128 MiB), or begin
    /// before its first heap. A heap is `heap_info`, then (in the arena's first heap, which its
    /// arena pointer names) the arena's `malloc_state`, then chunks. Returns the heaps walked and
    /// the arenas whose first heap was among them; nil when no heap was found.
    private static func walkThreadArenaHeaps(
        in region: ProcessSnapshot.Region, _ memory: SnapshotMemory, _ visit: (Block) -> Void
    ) -> (walked: [Range<UInt64>], arenas: [UInt64])? {
        var walked: [Range<UInt64>] = []
        var arenas: [UInt64] = []
        var heapStart = (region.start &+ arenaHeapAlignment &- 1) / arenaHeapAlignment &* arenaHeapAlignment
        while heapStart >= region.start, heapStart < region.copiedEnd {
            defer { heapStart &+= arenaHeapAlignment }
            guard let size = memory.word(heapStart + 16), size > 64, size <= arenaHeapAlignment,
                size <= region.copiedEnd - heapStart
            else { continue }
            let end = heapStart + size
            let arena = memory.word(heapStart) ?? 0
            let isFirstHeap = heapInfoSizes.contains(arena &- heapStart)
            let starts =
                isFirstHeap ? firstChunkCandidates(arena: arena, heapStart: heapStart) : heapInfoSizes.map { heapStart + $0 }
            for first in starts where walk(memory, from: first, to: end, visit) != nil {
                walked.append(heapStart..<end)
                if isFirstHeap { arenas.append(arena) }
                break
            }
        }
        return walked.isEmpty ? nil : (walked, arenas)
    }

    /// Where the first chunk of a thread arena's first heap may start, most likely first: right
    /// after the arena's `malloc_state` (`mallocStateSize` bytes, where glibc's `_int_new_arena`
    /// puts its first chunk, aligned so that its block is 16-byte aligned), then nearer the arena
    /// (an older, smaller `malloc_state`), then further on, up to the heap's first 4 KiB. A chain
    /// read from inside `malloc_state` can hold too, and must not be tried first: a word of its
    /// bin map, which changes as the arena's bins fill and empty, read as a chunk's size (0x2000)
    /// jumps onto a real chunk, and the chain goes on to the top chunk, leaving out every block
    /// before that one (a thread's event loop made there, then taken for a test's leak).
    static func firstChunkCandidates(arena: UInt64, heapStart: UInt64) -> [UInt64] {
        let all = Array(stride(from: arena + 0x800, through: heapStart + 0x1000, by: 16))
        let expected = ((arena + mallocStateSize + 16 + 15) & ~15) - 16
        let first = all.firstIndex { $0 >= expected } ?? all.count
        return Array(all[first...].prefix(1)) + all[..<first].reversed() + all[first...].dropFirst()
    }

    /// Walks the chunk chain from `start`, and only when it ends exactly at `end` (the top
    /// chunk's end) walks it again calling `body` with its blocks in use: a chain is checked
    /// before any of its blocks is trusted, without a list of them in between. Returns the top
    /// chunk's address, nil when the chain does not hold.
    private static func walk(_ memory: SnapshotMemory, from start: UInt64, to end: UInt64, _ body: (Block) -> Void)
        -> UInt64?
    {
        guard chain(memory, from: start, to: end, { _ in }) != nil else { return nil }
        return chain(memory, from: start, to: end, body)
    }

    /// One pass over the chunk chain from `start`: the top chunk's address when the chain ends
    /// exactly at `end` (or the first fencepost's, in a heap its arena left), else nil; `body`
    /// hears each block in use.
    private static func chain(_ memory: SnapshotMemory, from start: UInt64, to end: UInt64, _ body: (Block) -> Void)
        -> UInt64?
    {
        var chunk = start
        while chunk < end {
            guard let header = memory.word(chunk + 8) else { return nil }
            let size = header & ~7
            // A heap its arena left for a new one ends in fenceposts (glibc's sysmalloc): a
            // 16-byte chunk, then a header of size 0, in the last MINSIZE bytes and a header.
            if size < 32, end - chunk <= 48, size == 0 || (size == 16 && memory.word(chunk + 24).map { $0 & ~7 } == 0) {
                return chunk
            }
            guard size >= 32, size & 15 == 0, size <= end - chunk, header & 2 == 0 else { return nil }
            let next = chunk + size
            if next == end { break }  // the top chunk: free
            guard let nextHeader = memory.word(next + 8) else { return nil }
            // A chunk is in use when the next one says its previous is (tcache and fastbin blocks
            // also read as in use: `freeBlocks` tells them apart).
            if nextHeader & 1 != 0 { body(Block(address: chunk + 16, size: Int(size) - 8)) }
            chunk = next
        }
        return chunk &+ (memory.word(chunk &+ 8).map { $0 & ~7 } ?? 0) == end ? chunk : nil
    }

    // MARK: - Free blocks that read as in use

    /// A `tcache_perthread_struct`'s chunk: 64 two-byte counts, then 64 list heads (glibc 2.30
    /// and later; before, the counts were one byte each).
    static let tcacheStructChunkSize: UInt64 = 0x290
    static let tcacheBins = 64
    /// `malloc_state`: `fastbinsY` (10 list heads) at 0x10, `top` at 0x60, `next` (the ring of
    /// arenas, the main one included) at 0x870.
    static let fastbinsOffset: UInt64 = 0x10
    static let fastbinCount = 10
    static let arenaTopOffset: UInt64 = 0x60
    static let arenaNextOffset: UInt64 = 0x870
    static let mallocStateSize: UInt64 = 0x898
    /// At most this many blocks are taken from free lists, whatever their links say.
    static let freeListLimit = 1 << 22

    /// The blocks malloc keeps free that the chunk walk reads as in use, and what was read to
    /// find them.
    struct FreeBlocks {
        /// The user addresses of the free blocks.
        var addresses: Set<UInt64> = []
        /// The `tcache_perthread_struct`s whose lists were followed.
        var tcaches = 0
        /// The arenas whose fastbins were followed, and whether the main arena (in the C library's
        /// data, not in any heap) was among them.
        var arenas = 0
        /// The main arena's `malloc_state`, when found.
        var mainArena: UInt64? = nil
    }

    /// The free blocks on the tcache and fastbin lists of a walk's heaps. Each list is followed
    /// only while it holds: a block taken from a list is a chunk of the list's size in a walked
    /// heap that the next chunk says is in use, a tcache block carries its struct's key in its
    /// second word (glibc 2.29 and later write it there), links are decoded with safe-linking
    /// (`PROTECT_PTR`: the link's own address shifted right by 12, xor the next block), a tcache
    /// list stops at its count and every list at a block already taken. A damaged list ends
    /// early: a free block left out is scanned as untyped memory, which can hide a leak but never
    /// make one up, while a block in use is never taken as free.
    static func freeBlocks(in memory: SnapshotMemory, walk: Walk) -> FreeBlocks {
        var free = FreeBlocks()
        let heaps = walk.walked
        /// Whether `user` is the block of an in-use chunk of `size` bytes in a walked heap.
        func isBlock(_ user: UInt64, chunkSize size: UInt64) -> Bool {
            guard user & 15 == 0, user >= 16, let header = memory.word(user - 8), header & ~7 == size, header & 2 == 0,
                contains(heaps, user - 16), user - 16 <= UInt64.max - size,
                let nextHeader = memory.word(user - 16 + size + 8)
            else { return false }
            return nextHeader & 1 != 0 && contains(heaps, user - 16 + size)
        }
        // Each thread's tcache: a block of its struct's size whose list heads all name blocks of
        // their bin's size carrying one key, with a count where there is a head.
        for candidate in walk.tcacheCandidates {
            var key: UInt64? = nil
            var lists: [(head: UInt64, count: Int, size: UInt64)] = []
            var valid = true
            for bin in 0..<tcacheBins {
                guard let count = memory.uint16(candidate + UInt64(2 * bin)),
                    let head = memory.word(candidate + UInt64(2 * tcacheBins + 8 * bin))
                else {
                    valid = false
                    break
                }
                guard (count == 0) == (head == 0) else {
                    valid = false
                    break
                }
                guard head != 0 else { continue }
                let size = UInt64(32 + 16 * bin)
                guard isBlock(head, chunkSize: size), let headKey = memory.word(head + 8), headKey != 0,
                    key == nil || key == headKey
                else {
                    valid = false
                    break
                }
                key = headKey
                lists.append((head, Int(count), size))
            }
            guard valid, let key else { continue }
            free.tcaches += 1
            for list in lists {
                var block = list.head
                for _ in 0..<list.count {
                    guard free.addresses.count < freeListLimit, isBlock(block, chunkSize: list.size),
                        memory.word(block + 8) == key, free.addresses.insert(block).inserted,
                        let link = memory.word(block)
                    else { break }
                    block = (block >> 12) ^ link
                    if block == 0 { break }
                }
            }
        }
        // Each arena's fastbins: the thread arenas' `malloc_state`s, and the main arena's, found
        // on their ring or else by its `top` naming the `[heap]`'s top chunk.
        var arenas = walk.threadArenas
        if let mainArena = mainArena(in: memory, walk: walk) {
            arenas.append(mainArena)
            free.mainArena = mainArena
        }
        for arena in arenas {
            free.arenas += 1
            for bin in 0..<fastbinCount {
                guard var chunk = memory.word(arena + fastbinsOffset + UInt64(8 * bin)) else { break }
                let size = UInt64(32 + 16 * bin)
                while chunk != 0, free.addresses.count < freeListLimit, chunk <= UInt64.max - 16 {
                    let block = chunk + 16
                    guard isBlock(block, chunkSize: size), free.addresses.insert(block).inserted,
                        let link = memory.word(block)
                    else { break }
                    chunk = (block >> 12) ^ link
                }
            }
        }
        return free
    }

    /// The main arena's `malloc_state`, in the C library's data: the arena on the thread arenas'
    /// ring that lies in no heap, or else the word in an image's writable data that names the
    /// `[heap]`'s top chunk as `top`, whose `next` is itself or a thread arena. Either way its
    /// `top` must be that chunk. Nil when `[heap]` was not walked or no such arena is found.
    static func mainArena(in memory: SnapshotMemory, walk: Walk) -> UInt64? {
        guard let top = walk.mainHeapTop else { return nil }
        let threadArenas = Set(walk.threadArenas)
        func isMainArena(_ arena: UInt64) -> Bool {
            guard arena <= UInt64.max - arenaNextOffset - 8, memory.word(arena + arenaTopOffset) == top,
                let next = memory.word(arena + arenaNextOffset)
            else { return false }
            return next == arena || threadArenas.contains(next)
        }
        var seen: Set<UInt64> = []
        for start in walk.threadArenas {
            var arena = start
            while seen.insert(arena).inserted, seen.count < 1024, arena <= UInt64.max - arenaNextOffset,
                let next = memory.word(arena + arenaNextOffset)
            {
                if !threadArenas.contains(next), isMainArena(next) { return next }
                arena = next
            }
        }
        for region in memory.snapshot.regions where region.isWritable && region.path.hasPrefix("/") {
            var slot = (region.copiedStart + 7) & ~7
            while slot + 8 <= region.copiedEnd {
                if memory.word(slot) == top, slot >= arenaTopOffset, isMainArena(slot - arenaTopOffset) {
                    return slot - arenaTopOffset
                }
                slot += 8
            }
        }
        return nil
    }

    /// Whether one of `ranges` (sorted, disjoint) contains `address`.
    static func contains(_ ranges: [Range<UInt64>], _ address: UInt64) -> Bool {
        var low = 0
        var high = ranges.count
        while low < high {
            let middle = (low + high) / 2
            if ranges[middle].upperBound <= address { low = middle + 1 } else { high = middle }
        }
        return low < ranges.count && ranges[low].contains(address)
    }
}
