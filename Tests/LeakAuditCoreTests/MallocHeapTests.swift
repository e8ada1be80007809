import XCTest

@testable import LeakAuditCore

/// The walk of glibc malloc's chunks in a copy: which blocks it finds in a thread arena's heap.
final class MallocHeapTests: XCTestCase {
    private let heapStart: UInt64 = 0x7F00_0000_0000
    private let heapSize = 0x4000
    /// glibc 2.35 and later: a 48-byte `heap_info`, then the arena's `malloc_state`.
    private var arena: UInt64 { heapStart + 0x30 }
    /// Where `_int_new_arena` puts the first chunk: after `malloc_state`, its block 16-byte aligned.
    private var firstChunk: UInt64 { heapStart + 0x8D0 }

    /// A thread arena's first heap: `heap_info` (its arena, its size), the arena's
    /// `malloc_state` with `binMapWord` at arena+0x868 (in its bin map), then a chunk of
    /// `firstChunkSize` bytes, ten of 0x40, and the top chunk up to the heap's end.
    /// `before` bytes of other memory in the same region precede the heap (the kernel shows
    /// adjacent mappings with the same permissions as one).
    /// With `fenceposts`, the heap ends as one its arena left for a new one: the last chunk
    /// free, then a 16-byte chunk and a header of size 0, 32 bytes before the end.
    private func snapshot(
        binMapWord: UInt64, firstChunkSize: UInt64 = 0x1FC0, before: Int = 0, fenceposts: Bool = false
    ) -> ProcessSnapshot {
        let regionStart = heapStart - UInt64(before)
        var words = [UInt64](repeating: 0, count: (before + heapSize) / 8)
        func set(_ address: UInt64, _ value: UInt64) { words[Int(address - regionStart) / 8] = value }
        set(heapStart, arena)
        set(heapStart + 16, UInt64(heapSize))
        set(arena + 0x868, binMapWord)
        var chunk = firstChunk
        for size in [firstChunkSize] + Array(repeating: 0x40, count: 10) {
            set(chunk + 8, size | 1)
            chunk += size
        }
        if fenceposts {
            let end = heapStart + UInt64(heapSize)
            set(chunk + 8, (end - 32 - chunk) | 1)
            // The free last chunk cleared the fencepost's PREV_INUSE (it went to a bin).
            set(end - 32 + 8, 16)
            set(end - 16 + 8, 0 | 1)
        } else {
            set(chunk + 8, (heapStart + UInt64(heapSize) - chunk) | 1)
        }
        let region = ProcessSnapshot.Region(
            start: regionStart, end: heapStart + UInt64(heapSize), isWritable: true, isExecutable: false, path: "",
            copiedStart: regionStart, bytes: RegionBytes(copying: words.withUnsafeBytes { Array($0) }))
        return ProcessSnapshot(pid: 1, regions: [region], threads: [])
    }

    private func blocks(_ snapshot: ProcessSnapshot) -> [UInt64] {
        var blocks: [UInt64] = []
        _ = MallocHeap.forEachBlock(in: SnapshotMemory(snapshot)) { blocks.append($0.address) }
        return blocks
    }

    func testAThreadArenasChunksStartRightAfterItsMallocState() {
        let expected = [firstChunk + 16] + (0..<10).map { firstChunk + 0x1FC0 + UInt64($0) * 0x40 + 16 }
        XCTAssertEqual(blocks(snapshot(binMapWord: 0)), expected)
        // A bin map word read as a chunk's size from inside `malloc_state` (arena+0x860) jumps
        // onto the second real chunk, and that chain ends at the top chunk too: it is not the
        // heap's, and the first chunk's block is still found.
        XCTAssertEqual(blocks(snapshot(binMapWord: 0x2000)), expected)
    }

    func testAHeapInsideALargerRegionIsWalked() {
        // The heap begins at its 64 MiB boundary, a page into the region: its blocks are still
        // found (a region that does not begin at a heap was read as untyped memory).
        let expected = [firstChunk + 16] + (0..<10).map { firstChunk + 0x1FC0 + UInt64($0) * 0x40 + 16 }
        XCTAssertEqual(blocks(snapshot(binMapWord: 0, before: 0x1000)), expected)
        let walk = MallocHeap.forEachBlock(in: SnapshotMemory(snapshot(binMapWord: 0, before: 0x1000))) { _ in }
        XCTAssertEqual(walk.walked, [heapStart..<(heapStart + UInt64(heapSize))])
        XCTAssertEqual(walk.threadArenas, [arena])
    }

    func testAHeapItsArenaLeftEndsInFencepostsAndIsWalked() {
        // A full heap, left for a new one: its chain ends at glibc's fenceposts, not at its end.
        let expected = [firstChunk + 16] + (0..<10).map { firstChunk + 0x1FC0 + UInt64($0) * 0x40 + 16 }
        XCTAssertEqual(blocks(snapshot(binMapWord: 0, fenceposts: true)), expected)
    }

    func testTheFirstChunksStartIsTriedFirstThenNearerTheArena() {
        let candidates = MallocHeap.firstChunkCandidates(arena: arena, heapStart: heapStart)
        XCTAssertEqual(candidates.first, firstChunk)
        XCTAssertEqual(candidates.dropFirst().first, firstChunk - 16)
        XCTAssertEqual(Set(candidates), Set(stride(from: arena + 0x800, through: heapStart + 0x1000, by: 16)))
        XCTAssertEqual(candidates.count, Set(candidates).count)
    }
}
