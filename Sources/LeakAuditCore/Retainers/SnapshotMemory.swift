/// Bounds-checked reads of a process snapshot's copied memory. Every read of an address the copy
/// does not hold answers nil: the bytes came from the target, and nothing in them is trusted.
final class SnapshotMemory {
    let snapshot: ProcessSnapshot
    /// Each region's copied range and bytes, in the snapshot's order, for reads without copying
    /// region values.
    private let starts: [UInt64]
    private let ends: [UInt64]
    private let bases: [UnsafeRawPointer?]
    private let writable: [Bool]
    /// Each region's mapped bounds, for the binary search (ProcessSnapshot.regionIndex's, over
    /// two arrays of words rather than the regions' values).
    private let regionStarts: [UInt64]
    private let regionEnds: [UInt64]
    /// The last region read: reads cluster, so most skip the binary search.
    private var lastStart: UInt64 = 1
    private var lastEnd: UInt64 = 0
    private var lastBase: UnsafeRawPointer? = nil
    private var lastWritable = false
    /// The region read before it: a search reads a run of words in one region (globals, a stack,
    /// an object) and looks at where each points in another, turn by turn.
    private var otherStart: UInt64 = 1
    private var otherEnd: UInt64 = 0
    private var otherBase: UnsafeRawPointer? = nil
    private var otherWritable = false
    /// The copied region, or the gap between two mappings, that `isWritable` last found by binary
    /// search: the words a search asks it about, which point away from the region being read,
    /// often point into the same image's code or data, or are numbers, one after another.
    private var askedStart: UInt64 = 1
    private var askedEnd: UInt64 = 0
    private var askedWritable = false

    /// How many bytes of writable memory the copy holds: where every object lies.
    let writableBytes: Int

    init(_ snapshot: ProcessSnapshot) {
        self.snapshot = snapshot
        writableBytes = snapshot.writableBytes
        starts = snapshot.regions.map(\.copiedStart)
        ends = snapshot.regions.map(\.copiedEnd)
        bases = snapshot.regions.map { $0.bytes.buffer.baseAddress }
        writable = snapshot.regions.map(\.isWritable)
        regionStarts = snapshot.regions.map(\.start)
        regionEnds = snapshot.regions.map(\.end)
    }

    /// The region holding `address`, by binary search, as ProcessSnapshot.regionIndex finds it.
    private func regionIndex(containing address: UInt64) -> Int? {
        let low = firstRegion(endingAbove: address)
        guard low < regionEnds.count, regionStarts[low] <= address, address < regionEnds[low] else { return nil }
        return low
    }

    /// The index of the first region that ends above `address`, by binary search: the region
    /// holding it, or the first one above it (`regionEnds.count` when none).
    private func firstRegion(endingAbove address: UInt64) -> Int {
        var low = 0
        var high = regionEnds.count
        while low < high {
            let middle = (low + high) / 2
            if regionEnds[middle] <= address { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The pointer to the `count` bytes at `address` in the copy, or nil.
    @inline(__always) private func pointer(_ address: UInt64, _ count: UInt64) -> UnsafeRawPointer? {
        let last = address &+ count
        guard last >= address else { return nil }
        if address >= lastStart, last <= lastEnd, let base = lastBase {
            return base + Int(address - lastStart)
        }
        if address >= otherStart, last <= otherEnd, let base = otherBase {
            swap(&lastStart, &otherStart)
            swap(&lastEnd, &otherEnd)
            swap(&lastBase, &otherBase)
            swap(&lastWritable, &otherWritable)
            return base + Int(address - lastStart)
        }
        guard let index = regionIndex(containing: address), let base = bases[index],
            address >= starts[index], last <= ends[index]
        else { return nil }
        (otherStart, otherEnd, otherBase, otherWritable) = (lastStart, lastEnd, lastBase, lastWritable)
        (lastStart, lastEnd, lastBase, lastWritable) = (starts[index], ends[index], base, writable[index])
        return base + Int(address - starts[index])
    }

    /// The 64-bit word at `address` (any alignment).
    func word(_ address: UInt64) -> UInt64? {
        pointer(address, 8)?.loadUnaligned(as: UInt64.self)
    }

    func uint32(_ address: UInt64) -> UInt32? {
        pointer(address, 4)?.loadUnaligned(as: UInt32.self)
    }

    func uint16(_ address: UInt64) -> UInt16? {
        pointer(address, 2)?.loadUnaligned(as: UInt16.self)
    }

    func byte(_ address: UInt64) -> UInt8? {
        pointer(address, 1)?.load(as: UInt8.self)
    }

    /// The `count` bytes at `address`, all in one region, or nil.
    func bytes(_ address: UInt64, count: Int) -> [UInt8]? {
        guard count >= 0, let start = pointer(address, UInt64(count)) else { return nil }
        return Array(UnsafeRawBufferPointer(start: start, count: count))
    }

    /// The NUL-terminated string at `address`, at most `limit` bytes; nil when unreadable,
    /// unterminated or not UTF-8.
    func cString(_ address: UInt64, limit: Int = 1024) -> String? {
        guard let start = pointer(address, 1) else { return nil }
        let available = Int(lastEnd - address)
        let bytes = UnsafeRawBufferPointer(start: start, count: Swift.min(available, limit))
        guard let terminator = bytes.firstIndex(of: 0) else { return nil }
        return String(validating: bytes[..<terminator], as: UTF8.self)
    }

    /// The target of the 32-bit relative pointer at `address` (nil when its value is 0).
    func relative(_ address: UInt64) -> UInt64? {
        guard let raw = uint32(address), raw != 0 else { return nil }
        return address &+ UInt64(bitPattern: Int64(Int32(bitPattern: raw)))
    }

    /// The target of the 32-bit relative *indirectable* pointer at `address`: an odd value points
    /// at a pointer to the target (a reference to another image).
    func relativeIndirectable(_ address: UInt64) -> UInt64? {
        guard let raw = uint32(address), raw != 0 else { return nil }
        let offset = Int64(Int32(bitPattern: raw & ~1))
        let target = address &+ UInt64(bitPattern: offset)
        return raw & 1 == 0 ? target : word(target)
    }

    /// The parts of `range` (within one region) that may hold data: where a copy took only the
    /// pages the process held, the rest reads as zeros and is left out, so that a scan of an
    /// untouched reservation costs nothing.
    func copiedParts(of range: Range<UInt64>) -> [Range<UInt64>] {
        guard let index = snapshot.regionIndex(containing: range.lowerBound) else { return [] }
        let region = snapshot.regions[index]
        guard let written = region.bytes.writtenRanges else { return [range] }
        let base = region.copiedStart
        // The first run that ends after the range starts, by binary search.
        var low = 0
        var high = written.count
        while low < high {
            let middle = (low + high) / 2
            if base &+ UInt64(written[middle].upperBound) <= range.lowerBound { low = middle + 1 } else { high = middle }
        }
        var parts: [Range<UInt64>] = []
        while low < written.count, base &+ UInt64(written[low].lowerBound) < range.upperBound {
            let part =
                Swift.max(
                    range.lowerBound, base &+ UInt64(written[low].lowerBound))..<Swift.min(
                    range.upperBound, base &+ UInt64(written[low].upperBound))
            if !part.isEmpty { parts.append(part) }
            low += 1
        }
        return parts
    }

    /// Whether `address` lies in a copied, writable region: where objects live. The regions last
    /// read stay as they were: the search asks this of words that mostly point elsewhere (code,
    /// read-only data) while it reads a run of words in one region.
    func isWritable(_ address: UInt64) -> Bool {
        guard address <= UInt64.max - 8 else { return false }
        if address >= lastStart, address + 8 <= lastEnd, lastBase != nil { return lastWritable }
        if address >= otherStart, address + 8 <= otherEnd, otherBase != nil { return otherWritable }
        if address >= askedStart, address + 8 <= askedEnd { return askedWritable }
        let index = firstRegion(endingAbove: address)
        guard index < regionEnds.count, regionStarts[index] <= address else {
            // Between two mappings (a number, not an address): so is every address of the gap.
            (askedStart, askedEnd, askedWritable) = (
                index > 0 ? regionEnds[index - 1] : 0, index < regionStarts.count ? regionStarts[index] : UInt64.max, false
            )
            return false
        }
        guard bases[index] != nil, address >= starts[index], address + 8 <= ends[index] else { return false }
        (askedStart, askedEnd, askedWritable) = (starts[index], ends[index], writable[index])
        return writable[index]
    }
}
