/// The blocks glibc's malloc handed out, found in a process snapshot by walking its chunks: the
/// main arena's `[heap]`, each thread arena's 64 MiB-aligned heaps, and the chunks it mapped on
/// their own. Every Swift object is such a block, so this finds the objects nothing in the roots
/// reaches: async tasks, and what only a cycle or non-Swift memory holds. A chain of chunk sizes
/// that does not end exactly where its heap ends is dropped, never half-trusted; a process that
/// uses another allocator has no chain, and the search then starts from the roots alone.
enum MallocHeap {
    /// A block in use: its user address and its usable size.
    struct Block {
        var address: UInt64
        var size: Int
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
        let walked = forEachBlock(in: memory) { blocks.append($0) }
        return (blocks, walked)
    }

    /// Calls `body` with every block in use, in address order (regions are sorted, and each
    /// heap's chain ascends), without keeping them: a heap of millions of blocks costs the walk
    /// nothing but its callers' own tables. Returns the address ranges whose chunks were walked.
    static func forEachBlock(in memory: SnapshotMemory, _ body: (Block) -> Void) -> [Range<UInt64>] {
        var walked: [Range<UInt64>] = []
        for region in memory.snapshot.regions where region.isWritable && !region.bytes.isEmpty {
            guard region.copiedStart == region.start else { continue }  // a stack
            if region.path == "[heap]" {
                // The main arena: chunks from the start of the break area (after a little alignment).
                for skip in stride(from: UInt64(0), through: 64, by: 16)
                where walk(memory, from: region.start + skip, to: region.copiedEnd, body) {
                    walked.append(region.start..<region.copiedEnd)
                    break
                }
            } else if region.path.isEmpty, region.start % arenaHeapAlignment == 0,
                let size = memory.word(region.start + 16), size > 64, size <= region.copiedEnd - region.start
            {
                // A thread arena's heap: heap_info, then (in the arena's first heap, which its
                // arena pointer names) the arena's malloc_state, then chunks.
                let end = region.start + size
                let arena = memory.word(region.start) ?? 0
                var starts: [UInt64] = []
                if heapInfoSizes.contains(arena &- region.start) {
                    starts = Array(stride(from: arena + 0x800, through: region.start + 0x1000, by: 16))
                } else {
                    starts = heapInfoSizes.map { region.start + $0 }
                }
                for first in starts where walk(memory, from: first, to: end, body) {
                    walked.append(region.start..<end)
                    break
                }
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
                    body(Block(address: chunk + 16, size: Int(size) - 16))
                    position = chunk + size
                }
                if position > region.start { walked.append(region.start..<position) }
            }
        }
        walked.sort { $0.lowerBound < $1.lowerBound }
        return walked
    }

    /// Walks the chunk chain from `start`, and only when it ends exactly at `end` (the top
    /// chunk's end) walks it again calling `body` with its blocks in use: a chain is checked
    /// before any of its blocks is trusted, without a list of them in between.
    private static func walk(_ memory: SnapshotMemory, from start: UInt64, to end: UInt64, _ body: (Block) -> Void)
        -> Bool
    {
        guard chain(memory, from: start, to: end, { _ in }) else { return false }
        return chain(memory, from: start, to: end, body)
    }

    /// One pass over the chunk chain from `start`: true when it ends exactly at `end`; `body`
    /// hears each block in use.
    private static func chain(_ memory: SnapshotMemory, from start: UInt64, to end: UInt64, _ body: (Block) -> Void)
        -> Bool
    {
        var chunk = start
        while chunk < end {
            guard let header = memory.word(chunk + 8) else { return false }
            let size = header & ~7
            guard size >= 32, size & 15 == 0, size <= end - chunk, header & 2 == 0 else { return false }
            let next = chunk + size
            if next == end { break }  // the top chunk: free
            guard let nextHeader = memory.word(next + 8) else { return false }
            // A chunk is in use when the next one says its previous is (tcache and fastbin blocks
            // also read as in use: their first words are free-list links, never an object's).
            if nextHeader & 1 != 0 { body(Block(address: chunk + 16, size: Int(size) - 8)) }
            chunk = next
        }
        return chunk &+ (memory.word(chunk &+ 8).map { $0 & ~7 } ?? 0) == end
    }
}
