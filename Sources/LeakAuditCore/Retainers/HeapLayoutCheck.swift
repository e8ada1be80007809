// Whether the heap walk understood the heap: the objects the process's records say are alive must
// be found where the walk looks for objects, at the start of malloc's blocks. A malloc that puts a
// header before each block (an interposer over glibc's, such as ordo-one/malloc-interposer) hands
// out addresses inside glibc's chunks: every object then lies some bytes into a block. When they
// lie at one such offset, the heap is enumerated again with objects read there; otherwise the
// walk's answers ("no longer alive", "nothing unreachable") would be claims about memory it did
// not read, and none is given.

extension RetainerSearch {
    /// At most this many of the addresses known alive are checked.
    static let layoutCheckSample = 256

    /// The offsets a header before each block may take.
    static let headerOffsets: [UInt64] = [16, 32, 48, 64]

    /// The addresses known alive whose offsets `enumerateHeap` keeps for the check: the first
    /// `4 * layoutCheckSample` of them, sorted, so that a census's millions cost nothing.
    static func layoutSample(_ knownLive: [UInt64]) -> [UInt64] {
        Array(Set(knownLive.prefix(4 * layoutCheckSample))).sorted()
    }

    /// Enumerates the heap (`enumerateHeap`) and checks that the walk understood it: when the
    /// objects `knownLive` names (addresses the process's records say hold live objects) lie at
    /// one offset inside malloc's blocks, or, with none of them in the walked heaps, when no Swift
    /// object starts a block there but some start at one offset inside blocks, the heap is
    /// enumerated again with objects read at that offset (`objectOffset`). Returns why the walk's
    /// answers are not to be trusted, nil when they are.
    mutating func enumerateCheckingLayout(knownLive: [UInt64]) -> String? {
        let sampled = Self.layoutSample(knownLive)
        enumerateHeap(sampled: sampled)
        switch layoutFinding(sampled: sampled) {
        case .understood: return nil
        case .notUnderstood(let reason): return reason
        case .objectsInsideBlocks(let offset):
            enumerateHeap(objectOffset: offset, sampled: sampled)
            switch layoutFinding(sampled: sampled) {
            case .understood: return nil
            case .notUnderstood(let reason): return reason
            case .objectsInsideBlocks:
                return Self.notUnderstood("no Swift object was found in malloc's blocks, \(lookedAt)")
            }
        }
    }

    /// What the last enumeration tells of the heap's layout.
    enum LayoutFinding: Equatable {
        /// The objects known alive are where the walk looked.
        case understood
        /// They lie at this offset into malloc's blocks, where it did not look.
        case objectsInsideBlocks(UInt64)
        /// Why the walk's answers are not to be trusted.
        case notUnderstood(String)
    }

    /// What the last enumeration tells of the heap's layout, from `sampled` (the addresses known
    /// alive, sorted, but those whose blocks are on malloc's free lists: dead) and the offsets
    /// `enumerateHeap` kept of them: understood unless fewer than
    /// half of those that lie in the walked heaps are objects there; then inside blocks when
    /// those missed lie at one of `headerOffsets` past where the walk looked (three in four of
    /// them at least: the others freed since, or aligned blocks, which an interposer may place
    /// otherwise), and not understood when they lie at another offset or are at least eight (a
    /// freed object or two, at a block's start or in free space, is the ledger being behind, not
    /// the heap misread). With none of them in the walked heaps, inside blocks when no Swift object
    /// lies where the walk looked but some start at one offset inside blocks
    /// (`offsetOfObjectsInsideBlocks`). No heap walked (another allocator, whose objects the
    /// search meets from the roots alone) is understood.
    func layoutFinding(sampled: [UInt64]) -> LayoutFinding {
        // An object known alive whose block is on malloc's free lists is dead: the ledger is
        // behind (its death recorded after the records were read for this copy, while other
        // threads still ran, or freed where no hook saw it), the heap is not misread.
        let inHeaps = sampled.filter { inWalkedHeap($0) && !freeBlocks.addresses.contains($0 &- objectOffset) }
        guard !inHeaps.isEmpty else {
            // Nothing known alive to look up: a heap where no Swift object starts a block but some
            // lie at one offset inside them is read the same way.
            guard objectOffset == 0, !walkedHeaps.isEmpty, !objects.prefix(enumeratedCount).contains(where: inWalkedHeap),
                let offset = offsetOfObjectsInsideBlocks()
            else { return .understood }
            return .objectsInsideBlocks(offset)
        }
        let stride = Swift.max(1, (inHeaps.count + Self.layoutCheckSample - 1) / Self.layoutCheckSample)
        let sample = Swift.stride(from: 0, to: inHeaps.count, by: stride).map { inHeaps[$0] }
        let missed = sample.filter { enumeratedNode(at: $0) == nil }
        guard missed.count * 2 > sample.count else { return .understood }
        // One offset, past where the walk looked, for at least three in four of the missed objects.
        let tally = Dictionary(missed.compactMap { sampleOffsets[$0] }.map { ($0, 1) }, uniquingKeysWith: +)
        if let (common, count) = tally.max(by: { ($0.value, $1.key) < ($1.value, $0.key) }), common > objectOffset,
            count * 4 >= missed.count * 3
        {
            if objectOffset == 0, Self.headerOffsets.contains(common) { return .objectsInsideBlocks(common) }
            return .notUnderstood(
                Self.notUnderstood("the objects known alive lie \(common) bytes into malloc's blocks, \(lookedAt)"))
        }
        // Read past a header, the sample must be found: a few missed are not the ledger behind.
        guard missed.count >= 8 || objectOffset != 0 else { return .understood }
        return .notUnderstood(
            Self.notUnderstood(
                "\(missed.count) of \(sample.count) objects known alive were not found in malloc's blocks, \(lookedAt)"))
    }

    /// Where the walk looked for objects in malloc's blocks, for the report's sentence.
    private var lookedAt: String {
        objectOffset == 0 ? "not at their start" : "neither at their start nor \(objectOffset) bytes into them"
    }

    /// The report's sentence, with what was found.
    private static func notUnderstood(_ found: String) -> String {
        "the heap's layout was not understood (\(found): a malloc replaced by an interposer?), so retaining paths and the unreachable check are not available for this process"
    }

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
}
