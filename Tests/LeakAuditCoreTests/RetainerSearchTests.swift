import XCTest

@testable import LeakAuditCore

/// The heap walk reads memory the target wrote: whatever it holds, the search ends, without a
/// trap, and names no holder for what is not an object.
final class RetainerSearchTests: XCTestCase {
    /// A generator with a fixed seed, so that a failure can be replayed.
    private struct SplitMix64: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var value = state
            value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
            value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
            return value ^ (value >> 31)
        }
    }

    /// Regions like a process's (a heap, an arena-aligned heap, an image's data, a stack), filled
    /// with words that are mostly addresses inside them, small numbers, or anything.
    private func hostileSnapshot(_ random: inout SplitMix64) -> ProcessSnapshot {
        let layout: [(start: UInt64, size: Int, writable: Bool, path: String)] = [
            (0x5555_0000_0000, 4096, false, "/usr/lib/libfake.so"),
            (0x5555_0000_1000, 8192, true, "/usr/lib/libfake.so"),
            (0x5555_1000_0000, 65_536, true, "[heap]"),
            (0x7f00_0000_0000, 32_768, true, ""),
            (0x7f00_0400_0000, 16_384, true, ""),
            (0x7ffe_0000_0000, 16_384, true, "[stack]"),
        ]
        let starts = layout.map(\.start)
        var regions: [ProcessSnapshot.Region] = []
        for region in layout {
            var words = [UInt64](repeating: 0, count: region.size / 8)
            for index in words.indices {
                switch random.next() % 6 {
                case 0, 1:
                    let base = starts[Int(random.next() % UInt64(starts.count))]
                    words[index] = base + (random.next() % 8192) & ~7
                case 2: words[index] = random.next() % 0x1000
                case 3: words[index] = 0
                case 4: words[index] = UInt64(0x400 + random.next() % 0x200)  // runtime metadata kinds
                default: words[index] = random.next()
                }
            }
            let bytes = words.withUnsafeBytes { Array($0) }
            regions.append(
                ProcessSnapshot.Region(
                    start: region.start, end: region.start + UInt64(region.size), isWritable: region.writable,
                    isExecutable: false, path: region.path, copiedStart: region.start, bytes: RegionBytes(copying: bytes)))
        }
        let thread = ProcessSnapshot.Thread(
            id: 1, name: "main", instructionPointer: 0x5555_0000_0010, stackPointer: 0x7ffe_0000_0100,
            framePointer: 0x7ffe_0000_0200, threadPointer: 0x7f00_0000_4000,
            registers: (0..<16).map { _ in starts[Int(random.next() % UInt64(starts.count))] + 16 })
        return ProcessSnapshot(pid: 1, regions: regions, threads: [thread])
    }

    func testHostileMemoryNeverTrapsOrHangs() {
        var random = SplitMix64(state: 0x1EAC_A0D1)
        let module = ModuleImage(
            path: "/usr/lib/libfake.so", buildID: [], loadBias: 0x5555_0000_0000, start: 0x5555_0000_0000,
            end: 0x5555_0000_3000)
        for _ in 0..<60 {
            let snapshot = hostileSnapshot(&random)
            let instances = (0..<16).map { _ in 0x5555_1000_0000 + (random.next() % 65_536) & ~15 }
            let paths = RetainerSearch.paths(of: instances, in: snapshot, modules: [module])
            // Random words are never a live Swift object: no path, and no holder named.
            XCTAssertTrue(paths.isEmpty, "\(paths)")
        }
    }

    /// A generic struct's metadata whose 15 arguments are itself: without a budget its name read
    /// 15⁶ names, 6 levels deep (millions of characters); now at most `typeNameBudget`.
    func testATypeNamedByItselfManyTimesOverHasAShortName() {
        let base: UInt64 = 0x5555_0000_0000
        var words = [UInt64](repeating: 0, count: 512)
        let metadata = base
        let descriptor = base + 0x400
        words[0] = 0x200  // a struct's metadata
        words[1] = descriptor
        for argument in 0..<15 { words[2 + argument] = metadata }
        var bytes = words.withUnsafeBytes { Array($0) }
        // The descriptor: a generic struct (kind 17, flag 0x80), no parent, its name at +0x100;
        // the generic header 28 bytes in: 15 parameters, each a key argument.
        let flags: UInt32 = 0x80 | 17
        withUnsafeBytes(of: flags) { bytes.replaceSubrange(0x400..<0x404, with: $0) }
        withUnsafeBytes(of: Int32(0x100 - 8)) { bytes.replaceSubrange(0x408..<0x40C, with: $0) }
        bytes.replaceSubrange(0x500..<0x505, with: Array("Self\0".utf8))
        withUnsafeBytes(of: UInt16(15)) { bytes.replaceSubrange(0x424..<0x426, with: $0) }
        for parameter in 0..<15 { bytes[0x42C + parameter] = 0x80 }
        let region = ProcessSnapshot.Region(
            start: base, end: base + UInt64(bytes.count), isWritable: false, isExecutable: false, path: "/app/App",
            copiedStart: base, bytes: RegionBytes(copying: bytes))
        let layout = SwiftLayout(memory: SnapshotMemory(ProcessSnapshot(pid: 1, regions: [region], threads: [])))
        let name = layout.typeName(metadata: metadata)
        XCTAssertTrue(name.hasPrefix("Self<Self<"), name)
        XCTAssertLessThan(name.utf8.count, 8 * SwiftLayout.typeNameBudget, name)
    }

    /// A sparse copy's scan reads only the pages copied: an untouched reservation costs nothing.
    func testOnlyTheCopiedPartsOfASparseCopyAreRead() {
        let start: UInt64 = 0x7f00_0000_0000
        let bytes = RegionBytes(copying: [UInt8](repeating: 0, count: 16_384))
        bytes.writtenRanges = [0..<4096, 8192..<12_288]
        let region = ProcessSnapshot.Region(
            start: start, end: start + 16_384, isWritable: true, isExecutable: false, path: "", copiedStart: start,
            bytes: bytes)
        let memory = SnapshotMemory(ProcessSnapshot(pid: 1, regions: [region], threads: []))
        XCTAssertEqual(
            memory.copiedParts(of: start + 16..<start + 16_384), [start + 16..<start + 4096, start + 8192..<start + 12_288])
        XCTAssertEqual(memory.copiedParts(of: start + 4096..<start + 8192), [])
        XCTAssertEqual(memory.copiedParts(of: start + 9000..<start + 9008), [start + 9000..<start + 9008])
        bytes.writtenRanges = nil
        XCTAssertEqual(memory.copiedParts(of: start + 4096..<start + 8192), [start + 4096..<start + 8192])
        XCTAssertEqual(memory.copiedParts(of: start + 16_384..<start + 16_392), [])
    }

    /// `isWritable` answers what the regions say whatever was read or asked before it (it keeps
    /// the regions last read and last asked about): a writable region, a read-only one, a stack
    /// copied from its stack pointer up, an empty copy, and the gaps between them.
    func testIsWritableAnswersAsTheRegionsSayWhateverWasAskedBefore() {
        var random = SplitMix64(state: 0x5EED_0A11)
        func region(_ start: UInt64, _ size: Int, writable: Bool, copiedFrom offset: UInt64 = 0) -> ProcessSnapshot.Region {
            ProcessSnapshot.Region(
                start: start, end: start + UInt64(size), isWritable: writable, isExecutable: false, path: "",
                copiedStart: start + offset,
                bytes: RegionBytes(copying: [UInt8](repeating: 1, count: size - Int(offset))))
        }
        let regions = [
            region(0x5555_0000_0000, 8192, writable: false), region(0x5555_0000_2000, 4096, writable: true),
            region(0x5555_0000_4000, 4096, writable: false), region(0x7ffe_0000_0000, 16_384, writable: true, copiedFrom: 4096),
            region(0x7fff_0000_0000, 4096, writable: true, copiedFrom: 4096),
        ]
        let memory = SnapshotMemory(ProcessSnapshot(pid: 1, regions: regions, threads: []))
        func expected(_ address: UInt64) -> Bool {
            regions.first { !$0.bytes.isEmpty && $0.copiedStart <= address && address + 8 <= $0.copiedEnd }?.isWritable ?? false
        }
        for _ in 0..<20_000 {
            let region = regions[Int(random.next() % UInt64(regions.count))]
            let address = region.start &- 64 &+ random.next() % (region.end - region.start + 128)
            if random.next() % 3 == 0 {
                _ = memory.word(address)
            } else {
                XCTAssertEqual(memory.isWritable(address), expected(address), "0x\(String(address, radix: 16))")
            }
        }
    }

    func testAnEmptySnapshotExplainsNothing() {
        let snapshot = ProcessSnapshot(pid: 1, regions: [], threads: [])
        XCTAssertTrue(RetainerSearch.paths(of: [0x1000, 0xFFFF_FFFF_FFFF_FFF0], in: snapshot, modules: []).isEmpty)
    }
}
