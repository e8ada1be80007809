import LeakAuditModel
import XCTest

@testable import LeakAuditCore

/// What the heap walk's fuzzer (Fuzz/HeapGraphFuzzer) found, each reduced to the value that did
/// it: read from a hostile process, it is "not an object" or "not a reference", never a trap.
final class RetainerSearchFuzzFindingsTests: XCTestCase {
    /// A stopped thread with the registers the search reads.
    private func thread(
        stackPointer: UInt64, framePointer: UInt64 = 0, instructionPointer: UInt64 = 0, threadPointer: UInt64 = 0
    ) -> ProcessSnapshot.Thread {
        ProcessSnapshot.Thread(
            id: 7, name: "wild", instructionPointer: instructionPointer, stackPointer: stackPointer, framePointer: framePointer,
            threadPointer: threadPointer, registers: [])
    }

    private typealias Encoder = HeapSnapshotReplay.Encoder
    private typealias Code = HeapSnapshotReplay.Code

    /// The retainers of the process the fuzz input `encoder` describes, one line each: count, root
    /// kind and name, steps and the bytes retained.
    private func lines(_ encoder: Encoder) -> [String] {
        let found = encoder.bytes.withUnsafeBytes(HeapSnapshotReplay.retainers(from:))
        return found.retainers.map { retainer in
            "\(retainer.count) \(retainer.root.kind.rawValue) \(retainer.root.name): "
                + retainer.path.map { "\($0.via) \($0.type)" }.joined(separator: " / ") + " (\(retainer.retainedBytes))"
        } + found.unavailable
    }

    /// The deep chain's 50,000 nodes with no global holding the first: every node's path is its
    /// holder's and one step more, and keeping the paths of all of them (a thousand steps each)
    /// took 4 GB. Only the instances' and the chain's top are kept.
    func testAListNoRootReachesKeepsThePathsOfItsInstancesAloneNotOfEveryObject() throws {
        var chain = Encoder()
        typealias Name = HeapSnapshotReplay.Name
        chain.classType(name: Name.node, words: 1, fields: [(2, Encoder.symbolic(0), Name.next)])
        chain.chunks(.heap, [(2, [Encoder.meta(0), Code.live, Code.relative + 4])], repeats: 4_999)
        chain.chunks(.heap, [(2, [Encoder.meta(0), Code.live])])
        chain.instances(Encoder.object(4_999) + Encoder.object(2_500) + Encoder.object(10))
        let decoded = chain.bytes.withUnsafeBytes(HeapSnapshotReplay.decode)
        var search = RetainerSearch(snapshot: decoded.snapshot)
        search.foreignClasses = HeapSnapshotReplay.foreignClasses
        XCTAssertNil(search.enumerateCheckingLayout(knownLive: decoded.instances))
        search.reachFromRoots(modules: decoded.modules)
        let paths = decoded.instances.compactMap { search.path(to: $0) }
        XCTAssertEqual(paths.map { $0.steps.count + $0.omittedSteps }, [5_000, 2_501, 11])
        XCTAssertEqual(paths.map(\.omittedSteps), [4_000, 1_501, 0])
        XCTAssertLessThanOrEqual(search.unreachedGraph?.heldFromOutsidePaths.count ?? 0, 4)
    }

    /// Objects outside the walked heaps that overlap: each says it is far larger than the
    /// distance to the next, so that every word of memory is read once for each of the hundred
    /// objects that span it, at each pass over the objects. A fuzz input of 75 bytes made such a
    /// snapshot of 3 MB take 37 seconds; the walk now stops once it has read `readLimit` times the
    /// writable memory and says why, rather than give paths that words left unread could change.
    func testObjectsThatOverlapStopTheWalkOnceItHasReadItsLimit() {
        typealias Name = HeapSnapshotReplay.Name
        func input(objects: Int) -> Encoder {
            var input = Encoder()
            // Instances of 2 KiB, their chunks 32 bytes apart: each spans the next 63.
            input.classType(name: Name.node, words: 254, fields: [(2, Encoder.symbolic(0), Name.next)])
            input.chunks(.outside, [(2, [Encoder.meta(0), Code.live, Code.relative + 4])], repeats: objects - 1)
            input.chunks(.outside, [(2, [Encoder.meta(0), Code.live])])
            input.globals(Encoder.object(0))
            input.instances(Encoder.object(objects - 1))
            return input
        }
        let few = lines(input(objects: 10))
        XCTAssertEqual(few.count, 1)
        XCTAssertTrue(few[0].hasPrefix("1 global App.store: App.store App.Node / next App.Leaked"), few[0])
        let overlapping = input(objects: 10_000)
        let reason =
            "the heap walk stopped once it had read \(RetainerSearch.readLimit) times as many words as the process's writable memory holds"
        let found = lines(overlapping)
        XCTAssertEqual(found.count, 1)
        XCTAssertTrue(found[0].hasPrefix(reason), found[0])
        let unreachable = overlapping.bytes.withUnsafeBytes(HeapSnapshotReplay.unreachable(from:))
        XCTAssertEqual(unreachable.groups.count, 0)
        XCTAssertEqual(unreachable.unavailable.count, 1)
        XCTAssertTrue(unreachable.unavailable[0].hasPrefix(reason), "\(unreachable.unavailable)")
        XCTAssertFalse(overlapping.bytes.withUnsafeBytes(HeapSnapshotReplay.testCasesHold(from:)))
        // `leak-audit inspect`: the census of what was found, no largest objects, no unreachable ones.
        let decoded = overlapping.bytes.withUnsafeBytes(HeapSnapshotReplay.decode)
        let inspection = HeapInspection.inspect(decoded.snapshot, modules: decoded.modules)
        XCTAssertTrue(inspection.unavailable?.hasPrefix(reason) == true, "\(inspection.unavailable ?? "none")")
        XCTAssertEqual(inspection.largest.count, 0)
        XCTAssertEqual(inspection.unreachable.groups.count, 0)
        XCTAssertGreaterThan(inspection.objects, 0)
        let small = input(objects: 10).bytes.withUnsafeBytes(HeapSnapshotReplay.decode)
        XCTAssertNil(HeapInspection.inspect(small.snapshot, modules: small.modules).unavailable)
    }

    func testAStackPointerAtTheEndOfTheAddressSpaceHasNoFrames() {
        // Looking for a frame record above it added 7 to the stack pointer: an overflow.
        for stackPointer in [UInt64.max, UInt64.max - 3, UInt64.max - 16_383] {
            let snapshot = ProcessSnapshot(pid: 1, regions: [], threads: [thread(stackPointer: stackPointer)])
            XCTAssertTrue(RetainerSearch.paths(of: [0x1000], in: snapshot, modules: []).isEmpty)
        }
    }

    func testAThreadPointerAtTheEndOfTheAddressSpaceHasNoThreadLocalStorage() {
        // Its storage starts after the thread's frames: one past a stack pointer there overflowed.
        for stackPointer in [UInt64.max, UInt64.max - 2, UInt64.max - 0x800] {
            let snapshot = ProcessSnapshot(
                pid: 1, regions: [], threads: [thread(stackPointer: stackPointer, threadPointer: UInt64.max)])
            XCTAssertTrue(RetainerSearch.paths(of: [0x1000], in: snapshot, modules: []).isEmpty)
        }
    }

    func testAnAsyncTaskThatIsTheInstanceIsNamedByWhatHoldsIt() {
        // A task on the way is a path's root, but the task searched for is not its own root: its
        // path went up to the task itself and read its parent as a root's index.
        var input = Encoder()
        input.typeSpec([Encoder.kind(.task), 0, HeapSnapshotReplay.Name.node])
        input.typeSpec([Encoder.kind(.other), 0, HeapSnapshotReplay.Name.model, 0, 0])
        input.chunks(
            .heap, [(3, [Encoder.meta(1), Code.live] + Encoder.object(1)), (2, [Encoder.meta(0), Code.live])])
        input.globals(Encoder.object(0))
        input.instances(Encoder.object(1))
        XCTAssertEqual(lines(input), ["1 global App.store: App.store Swift.Error box / (in its memory) App.Leaked (24)"])
    }

    func testAnObjectFirstMetWhileTheDominatorTreeIsBuiltIsANodeOfIt() {
        // An object in the heap that no root reaches holds one outside the walked heaps that no
        // search met: reading its references made a node past those the tree had counted.
        var input = Encoder()
        input.classType(
            name: HeapSnapshotReplay.Name.node, words: 1, fields: [(2, Encoder.symbolic(0), HeapSnapshotReplay.Name.next)])
        input.chunks(.heap, [(2, [Encoder.meta(0), Code.live] + Encoder.object(2)), (2, [Encoder.meta(0), Code.live])])
        input.chunks(.outside, [(2, [Encoder.meta(0), Code.live])])
        input.globals(Encoder.object(1))
        input.instances(Encoder.object(1))
        XCTAssertEqual(lines(input), ["1 global App.store: App.store App.Leaked (24)"])
    }

    func testAClassThatIsItsOwnSuperclassEndsTheSearchForAnEnumsPayload() {
        // Which enum case holds an object is looked up by the object's classes, superclass by
        // superclass: a class that named itself as its superclass added none, and the walk went on.
        var input = Encoder()
        input.typeSpec([Encoder.kind(.classInstance), 0x80, HeapSnapshotReplay.Name.model, 0, 0xFF, 0])
        input.typeSpec([Encoder.kind(.enumeration), 0, HeapSnapshotReplay.Name.state, 1, HeapSnapshotReplay.Name.loading, 0])
        input.classType(
            name: HeapSnapshotReplay.Name.screen, words: 1, fields: [(2, Encoder.symbolic(1), HeapSnapshotReplay.Name.state)])
        input.chunks(.heap, [(2, [Encoder.meta(2), Code.live] + Encoder.object(1)), (2, [Encoder.meta(0), Code.live])])
        input.globals(Encoder.object(0))
        input.instances(Encoder.object(1))
        XCTAssertEqual(lines(input), ["1 global App.store: App.store App.Screen / state App.state / .loading App.Leaked (24)"])
    }

    func testAnInstructionPointerAtTheEndOfTheAddressSpaceNamesNoFunction() {
        // A register or the innermost stack frame is named by the instruction after the stopped
        // one: one past the last address overflowed.
        let path = RetainerSearch.Path(
            root: .register(thread: 7, threadName: "wild", function: UInt64.max),
            steps: [RetainerSearch.Step(hold: .property(""), type: "App.Model")])
        let naming = RetainerNaming(
            symbolizer: HeapSnapshotReplay.FixedSymbolizer(), modules: [], walk: .searched([0x9000: path]))
        let found = naming.retainers(of: [0x9000], typeName: "App.Model").retainers
        XCTAssertEqual(found.map(\.root), [Retainer.Root(kind: .register, name: "0xffffffffffffffff", thread: "wild")])
    }

    func testDictionaryKeysFarPastTheStorageAreNotRead() {
        // Where a native dictionary's keys start is read from its storage (_rawKeys): an offset
        // near Int.max passed the check that it is past the bitmap, and adding the keys' length
        // to it overflowed.
        var input = Encoder()
        input.classType(name: HeapSnapshotReplay.Name.model)
        input.typeSpec([Encoder.kind(.structure), 0x20, HeapSnapshotReplay.Name.string, 16])
        input.typeSpec([Encoder.kind(.dictionary), 0, HeapSnapshotReplay.Name.cache, 1, 0])
        // The storage is object 0, at the heap's start + 16: its keys "start" 2^63 - 16 bytes on.
        let keys = (HeapSnapshotReplay.starts[HeapSnapshotReplay.Area.heap.rawValue] + 16) &+ 0x7FFF_FFFF_FFFF_FFF0
        let storage: [UInt8] =
            [Encoder.meta(2), Code.live, Code.small + 1, Code.small + 1, Code.small + 1, Code.zero, Code.literal64]
            + withUnsafeBytes(of: keys.littleEndian) { Array($0) }
            + [Code.inside + 13, Code.small + 1, Code.smallStringLow, Code.smallStringHigh, Code.zero, Code.zero]
        input.chunks(.heap, [(9, storage + Encoder.object(1)), (2, [Encoder.meta(0), Code.live])])
        input.globals(Encoder.object(0))
        input.instances(Encoder.object(1))
        // No bucket is read: nothing holds the model.
        XCTAssertEqual(lines(input).map { $0.prefix(10) }, ["1 unknown "])
    }
}
