// Whether the heap walk understood the heap: the objects the process's records say are alive must
// be found at the start of malloc's blocks. A malloc that puts a header before each block (an
// interposer over glibc's, such as ordo-one/malloc-interposer) hands out addresses inside glibc's
// chunks: every object then lies some bytes into a block, none is found, and the walk's answers
// ("no longer alive", "nothing unreachable") would be claims about memory it did not read.

extension RetainerSearch {
    /// At most this many of the addresses known alive are checked.
    static let layoutCheckSample = 256

    /// Why the walk's answers are not to be trusted, nil when they are: when fewer than half of
    /// `knownLive` (addresses the process's records say hold live objects) that lie in the walked
    /// heaps are objects there, and those missed either lie at one offset inside malloc's blocks
    /// (three in four of them at least) or are at least eight (a freed object or two, at a block's start or in free space,
    /// is the ledger being behind, not the heap misread). With none of them in the walked heaps,
    /// when no Swift object starts a block there but some start at one offset inside blocks
    /// (`offsetOfObjectsInsideBlocks`). No heap walked (another allocator, whose objects the
    /// search meets from the roots alone) is not this.
    func heapLayoutNotUnderstood(knownLive: some Sequence<UInt64>) -> String? {
        // The first of them in the walked heaps, enough to sample: a census's millions cost nothing.
        var firstInHeaps: Set<UInt64> = []
        for address in knownLive where inWalkedHeap(address) {
            firstInHeaps.insert(address)
            if firstInHeaps.count == 4 * Self.layoutCheckSample { break }
        }
        let inHeaps = firstInHeaps.sorted()
        guard !inHeaps.isEmpty else {
            // Nothing known alive to look up: a heap where no Swift object starts a block but some
            // lie at one offset inside them is read the same way.
            guard !walkedHeaps.isEmpty, !objects.prefix(enumeratedCount).contains(where: inWalkedHeap),
                let offset = offsetOfObjectsInsideBlocks()
            else { return nil }
            return Self.notUnderstood("Swift objects lie \(offset) bytes into malloc's blocks, not at their start")
        }
        let stride = Swift.max(1, (inHeaps.count + Self.layoutCheckSample - 1) / Self.layoutCheckSample)
        let sample = Swift.stride(from: 0, to: inHeaps.count, by: stride).map { inHeaps[$0] }
        let missed = sample.filter { enumeratedNode(at: $0) == nil }
        guard missed.count * 2 > sample.count else { return nil }
        let offsets = Self.offsetsInsideBlocks(of: missed, in: memory)
        // One offset, past the block's start, for at least three in four of the missed objects (a
        // header before each block; the others freed after the ledger's last record, or aligned
        // blocks, which an interposer may leave without a header).
        var offset: UInt64? = nil
        let tally = Dictionary(offsets.map { ($0, 1) }, uniquingKeysWith: +)
        if let (common, count) = tally.max(by: { ($0.value, $1.key) < ($1.value, $0.key) }), common > 0,
            count * 4 >= missed.count * 3
        {
            offset = common
        }
        guard offset != nil || missed.count >= 8 else { return nil }
        return Self.notUnderstood(
            offset.map { "the objects known alive lie \($0) bytes into malloc's blocks, not at their start" }
                ?? "\(missed.count) of \(sample.count) objects known alive were not found at the start of malloc's blocks")
    }

    /// The report's sentence, with what was found.
    private static func notUnderstood(_ found: String) -> String {
        "the heap's layout was not understood (\(found): a malloc replaced by an interposer?), so retaining paths and the unreachable check are not available for this process"
    }

    /// The offsets a header before each block may take.
    static let headerOffsets: [UInt64] = [16, 32, 48, 64]

    /// The offset inside malloc's blocks in use at which most Swift objects start, among
    /// `headerOffsets`; nil when none does at any.
    func offsetOfObjectsInsideBlocks() -> UInt64? {
        var counts = [Int](repeating: 0, count: Self.headerOffsets.count)
        _ = MallocHeap.forEachBlock(in: memory) { block in
            for (index, offset) in Self.headerOffsets.enumerated() where offset + 16 <= UInt64(block.size) {
                if layout.objectTypeIndex(at: block.address + offset) != nil { counts[index] += 1 }
            }
        }
        guard let best = counts.indices.max(by: { counts[$0] < counts[$1] }), counts[best] > 0 else { return nil }
        return Self.headerOffsets[best]
    }

    /// For each of `addresses` (sorted) that lies inside a block in use, its offset from the
    /// block's start; those in no block are left out.
    static func offsetsInsideBlocks(of addresses: [UInt64], in memory: SnapshotMemory) -> [UInt64] {
        var offsets: [UInt64] = []
        var next = 0
        _ = MallocHeap.forEachBlock(in: memory) { block in
            while next < addresses.count, addresses[next] < block.address { next += 1 }
            var index = next
            while index < addresses.count, addresses[index] - block.address < UInt64(block.size) {
                offsets.append(addresses[index] - block.address)
                index += 1
            }
        }
        return offsets
    }
}
