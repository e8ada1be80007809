import LeakAuditModel
import LeakAuditPresentation
import XCTest

@testable import LeakAuditCore

/// The heap walk's fuzz entry (HeapSnapshotReplay): its seeds read as the retaining paths they
/// stand for, and the fuzzer's findings (HeapGraphCorpus/, each a crash, hang or blow-up that was
/// fixed) and random and mutated inputs (a fixed seed, so every run is the same) go through the
/// search and the naming without a trap. scripts/fuzz.sh runs millions more under libFuzzer.
final class HeapSnapshotReplayTests: XCTestCase {
    private static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("HeapGraphCorpus")

    private func retainers(_ input: [UInt8]) -> (retainers: [Retainer], unavailable: [String]) {
        input.withUnsafeBytes(HeapSnapshotReplay.retainers(from:))
    }

    /// Asserts that each instance `input` names is in one retainer's count or among those said to
    /// be no longer alive: none is lost, none counted twice.
    private func assertEveryInstanceIsAccountedFor(_ input: [UInt8], _ message: String) {
        let instances = input.withUnsafeBytes { HeapSnapshotReplay.decode($0).instances }
        let found = retainers(input)
        // A walk that found nothing it could keep (the heap's layout not understood, its read
        // limit reached) says why once, for every instance.
        if found.retainers.isEmpty, found.unavailable.count == 1, let reason = found.unavailable.first,
            reason.split(separator: " ").first.flatMap({ Int($0) }) == nil
        {
            XCTAssertTrue(reason.contains("not available for this process"), message)
            return
        }
        let missing = found.unavailable.compactMap { $0.split(separator: " ").first.flatMap { Int($0) } }.reduce(0, +)
        XCTAssertEqual(found.retainers.map(\.count).reduce(0, +) + missing, instances.count, message)
        XCTAssertTrue(found.retainers.allSatisfy { $0.count >= 1 }, message)
    }

    /// Asserts that every unreachable object of `input`'s process is in exactly one group and
    /// counted under one type, its bytes too.
    private func assertEveryUnreachableObjectIsInOneGroup(_ input: [UInt8], _ message: String) {
        let found = input.withUnsafeBytes(HeapSnapshotReplay.unreachable(from:))
        XCTAssertEqual(found.groups.reduce(0) { $0 + $1.objects }, found.objects, message)
        XCTAssertEqual(found.groups.reduce(0) { $0 + $1.bytes }, found.bytes, message)
        XCTAssertEqual(found.types.reduce(0) { $0 + $1.count }, found.objects, message)
        XCTAssertEqual(found.types.reduce(0) { $0 + $1.bytes }, found.bytes, message)
        XCTAssertTrue(found.groups.allSatisfy { $0.count >= 1 && $0.objects >= $0.count && !$0.path.isEmpty }, message)
    }

    /// Each retainer as one line: count, root kind and name, then each step's via and type.
    private func lines(_ input: [UInt8]?) throws -> [String] {
        let found = retainers(try XCTUnwrap(input))
        XCTAssertEqual(found.unavailable, [])
        return found.retainers.map { retainer in
            "\(retainer.count) \(retainer.root.kind.rawValue) \(retainer.root.name): "
                + retainer.path.map { "\($0.via) \($0.type)" }.joined(separator: " / ")
        }
    }

    func testTheSeedsReadAsThePathsTheyStandFor() throws {
        let seeds = HeapSnapshotReplay.seeds
        // The freed Session beside the live one holds nothing.
        XCTAssertEqual(try lines(seeds["global"]), ["1 global App.store: App.store App.Session / model App.Leaked"])
        XCTAssertEqual(
            try lines(seeds["cycle"]),
            ["1 cycle a cycle of 2 objects that nothing else holds:  App.Node / next App.Node / next App.Leaked"])
        // Two models held by a cycle, not on it, and a node on it; the second model lying outside
        // any heap changes nothing.
        for name in ["held-by-cycle", "held-by-cycle-outside"] {
            XCTAssertEqual(
                try lines(seeds[name]),
                [
                    "1 cycle a cycle of 2 objects that nothing else holds, through: a cycle of 2 objects that nothing else holds, through App.Node / model App.Leaked",
                    "1 cycle a cycle of 2 objects that nothing else holds, through: a cycle of 2 objects that nothing else holds, through App.Node / model App.Model / next App.Leaked",
                    "1 cycle a cycle of 2 objects that nothing else holds:  App.Node / next App.Node / next App.Leaked",
                ], name)
        }
        XCTAssertEqual(
            try lines(seeds["array"]), ["3 global App.store: App.store App.Screen / items [App.Model] / [i] App.Leaked"])
        // The struct's word that reads as the second instance's address holds nothing.
        let existentials = try lines(seeds["existentials"])
        XCTAssertEqual(existentials.first, "1 global App.store: App.store App.Screen / items [(existential)] / [0] App.Leaked")
        XCTAssertEqual(existentials.count, 2)
        XCTAssertTrue(existentials.last?.hasPrefix("1 unknown nothing: unreachable") ?? false, "\(existentials)")
        // A struct property is read by its layout: its `Any` by the type it holds, never the
        // buffer's word past a one-word integer.
        let structValues = try lines(seeds["struct-values"])
        XCTAssertEqual(structValues.count, 2)
        XCTAssertTrue(structValues.first?.hasPrefix("1 unknown nothing: unreachable") ?? false, "\(structValues)")
        XCTAssertEqual(structValues.last, "1 global App.Screen.shared: App.Screen.shared App.Screen / state App.Leaked")
        XCTAssertEqual(
            try lines(seeds["dictionary"]),
            [#"1 global App.store: App.store App.Session / cache [Swift.String: App.Model] / ["login"] App.Leaked"#])
        XCTAssertEqual(
            try lines(seeds["closure"]),
            [
                "1 global App.store: App.store App.Screen / onClose context of closure #1 in App.Screen.init() / captured model App.Leaked"
            ])
        XCTAssertEqual(
            try lines(seeds["outside-malloc"]),
            ["1 global App.store: App.store App.Node / next App.Node / next App.Node / next App.Leaked"])
        XCTAssertEqual(
            try lines(seeds["roots"]),
            [
                "1 stack closure #1 in App.Screen.init(): closure #1 in App.Screen.init() App.Screen / state App.LoadState / .loading App.Leaked",
                "1 task closure #1 in App.Screen.init(): closure #1 in App.Screen.init() async task / (in its memory) captured App.Model / captured var App.Leaked",
                "1 threadLocal thread-local storage: thread-local storage App.Leaked",
            ])
        // Behind a malloc interposer's 16-byte header, objects are read 16 bytes into their blocks,
        // and the untyped block's words after its header.
        XCTAssertEqual(
            try lines(seeds["interposed-malloc"]),
            [
                "1 global App.store: App.store App.Session / model App.Leaked",
                "1 memory a malloc block of 40 bytes: a malloc block of 40 bytes App.Leaked",
                "1 cycle a cycle of 2 objects that nothing else holds:  App.Node / next App.Node / next App.Leaked",
            ])
        // The last of 50,000 nodes, each held by the one before, and the second, which holds the
        // other 49,998 (the last among them: its bytes are counted there).
        let chain = retainers(try XCTUnwrap(seeds["deep-chain"])).retainers
        XCTAssertEqual(chain.map(\.root.kind), [.global, .global])
        // The long path keeps its first and last 500 objects, and counts the 49,000 between;
        // the text shows 8 steps at each end.
        XCTAssertEqual(chain.map(\.path.count), [1_000, 2])
        XCTAssertEqual(chain.map(\.omittedSteps), [49_000, 0])
        XCTAssertEqual(chain.map(\.omittedAfter), [500, 0])
        XCTAssertEqual(chain.map(\.retainedBytes), [0, 49_999 * 24])
        XCTAssertEqual(
            ReportPhrases.retainerChain(chain[0]),
            "Node.next → Node.next → Node.next → Node.next → Node.next → Node.next → Node.next → Node"
                + " → … 49984 more objects … → "
                + "Node.next → Node.next → Node.next → Node.next → Node.next → Node.next → Node.next → Leaked")
    }

    /// Models of a list, each the next one's only holder, take their holder's path and one step
    /// more: from the cycle that holds the list, from the first model that nothing holds, or from
    /// the node holding itself that also holds the 1,101st model (which the model before it
    /// holds too). The paths are those of searches of their own (`testTheSearchesShortcuts…`);
    /// here, what they are.
    func testAListsModelsHaveTheirHoldersPathsAndOneStepMore() throws {
        let seeds = HeapSnapshotReplay.seeds
        // The 1,101st, the last, the first, the 601st and the 1,102nd model, each a retainer.
        func shapes(_ seed: String) throws -> [String] {
            retainers(try XCTUnwrap(seeds[seed])).retainers.map {
                "\($0.root.kind.rawValue) \($0.path.count + $0.omittedSteps) \($0.omittedSteps)"
            }.sorted()
        }
        // The cycle's node, then the models up to the instance.
        XCTAssertEqual(
            try shapes("held-list"), ["cycle 1102 102", "cycle 1103 103", "cycle 1201 201", "cycle 2 0", "cycle 602 0"])
        // Nothing holds the first model; the node holds the 1,101st and, through it, those after.
        XCTAssertEqual(
            try shapes("unreferenced-list"), ["cycle 101 0", "cycle 2 0", "cycle 3 0", "unknown 1 0", "unknown 601 0"])
    }

    /// Untyped memory (and an `Unmanaged` or raw-pointer property) holds what it points at or
    /// into, but for the blocks malloc keeps free and a side table's pointer back at its object.
    func testUntypedMemoryHoldsAndFreeBlocksAndSideTablesDoNot() throws {
        let seeds = HeapSnapshotReplay.seeds
        // A cycle whose first node a C block holds (an opaque retained pointer) is held.
        XCTAssertEqual(
            try lines(seeds["opaque-retained"]),
            ["1 memory a malloc block of 24 bytes: a malloc block of 24 bytes App.Node / next App.Leaked"])
        // A word of the same block that holds no count of its own (stale, or never retained):
        // the cycle holds the node, and the word is named beside it.
        XCTAssertEqual(
            try lines(seeds["stale-word-into-cycle"]),
            [
                "1 cycle a cycle of 2 objects that nothing else holds but a word in untyped memory (a malloc block of 24 bytes):  App.Node / next App.Node / next App.Leaked"
            ])
        // Pointers into array storage (its count, its first element) hold it.
        XCTAssertEqual(
            try lines(seeds["interior-pointers"]),
            [
                "1 memory a malloc block of 24 bytes: a malloc block of 24 bytes [App.Model] / [0] App.Leaked",
                "1 stack closure #1 in App.Screen.init(): closure #1 in App.Screen.init() [App.Model] / [0] App.Leaked",
            ])
        // Blocks on a tcache list (the second one's link safe-linked) and on the fastbins of a
        // thread arena and of the main arena, which read as in use, hold nothing; nor do the main
        // arena's own words (its list heads and `top` name chunks, the last word of the block
        // before), nor a side table's pointer back at its object.
        XCTAssertEqual(
            try lines(seeds["tcache-freed"]),
            ["1 cycle a cycle of 2 objects that nothing else holds:  App.Node / next App.Node / next App.Leaked"])
        XCTAssertEqual(
            try lines(seeds["fastbin-freed"]),
            [
                "1 cycle a cycle of 2 objects that nothing else holds:  App.Node / next App.Node / next App.Leaked",
                "1 cycle a cycle of 1 object that nothing else holds:  App.Node / next App.Leaked",
            ])
        // An `Unmanaged` property and a raw pointer into an object hold it (last: a strong path
        // is shown first); a weak one does not.
        let opaque = try lines(seeds["unmanaged"])
        XCTAssertEqual(
            Array(opaque.prefix(2)),
            [
                "1 global App.store: App.store App.Screen / model App.Leaked",
                "1 global App.store: App.store App.Screen / items App.Leaked",
            ])
        XCTAssertTrue(opaque.last?.hasPrefix("1 unknown nothing: unreachable") == true, "\(opaque)")
        // Nor do the stale words past the text of stdio buffers (stdout's, an fopen'd stream's).
        XCTAssertEqual(
            try lines(seeds["stdio-buffers"]),
            ["1 cycle a cycle of 2 objects that nothing else holds:  App.Node / next App.Node / next App.Leaked"])
        // Nor do the words of an ICU `UnicodeString` but its text pointer: its inline text and
        // what lies past it are the stale bytes of its memory's earlier owner (ICU's number
        // formatters are full of such strings); a long string's text pointer holds. Nor do the
        // words past a C block's size (its descriptor's), which malloc rounded up; its captures
        // hold. Each seed's cycle is unheld, and its 72-byte block holds a Leaked.
        for seed in ["icu-strings", "c-blocks"] {
            XCTAssertEqual(
                try lines(seeds[seed]),
                [
                    "1 cycle a cycle of 2 objects that nothing else holds:  App.Node / next App.Node / next App.Leaked",
                    "1 memory a malloc block of 72 bytes: a malloc block of 72 bytes App.Leaked",
                ], seed)
        }
        let unreferenced = try lines(seeds["side-table"])
        XCTAssertEqual(unreferenced.count, 1)
        XCTAssertTrue(unreferenced[0].hasPrefix("1 unknown nothing: unreachable"), unreferenced[0])
    }

    /// The free lists are found and followed, bounded, however their links are damaged.
    func testFreeListsAreFollowedOnlyWhileTheyHold() throws {
        for (name, expected) in [("tcache-freed", 2), ("fastbin-freed", 2)] {
            let input = try XCTUnwrap(HeapSnapshotReplay.seeds[name])
            let snapshot = input.withUnsafeBytes { HeapSnapshotReplay.decode($0).snapshot }
            let memory = SnapshotMemory(snapshot)
            let walk = MallocHeap.forEachBlock(in: memory) { _ in }
            XCTAssertEqual(MallocHeap.freeBlocks(in: memory, walk: walk).addresses.count, expected, name)
        }
        // A tcache list whose second link is damaged ends at its first block; one whose count
        // says more than its blocks ends at the last.
        var input = try XCTUnwrap(HeapSnapshotReplay.seeds["tcache-freed"])
        input += [6, UInt8(HeapSnapshotReplay.Area.heap.rawValue), 0x60, 0, 1, 0x80 + 7]
        var snapshot = input.withUnsafeBytes { HeapSnapshotReplay.decode($0).snapshot }
        var memory = SnapshotMemory(snapshot)
        var walk = MallocHeap.forEachBlock(in: memory) { _ in }
        XCTAssertEqual(walk.tcacheCandidates.count, 1)
        XCTAssertEqual(MallocHeap.freeBlocks(in: memory, walk: walk).addresses.count, 1)
        input = try XCTUnwrap(HeapSnapshotReplay.seeds["tcache-freed"])
        input += [6, UInt8(HeapSnapshotReplay.Area.heap.rawValue), 2, 0, 1, 0x80 + 60]
        snapshot = input.withUnsafeBytes { HeapSnapshotReplay.decode($0).snapshot }
        memory = SnapshotMemory(snapshot)
        walk = MallocHeap.forEachBlock(in: memory) { _ in }
        XCTAssertEqual(MallocHeap.freeBlocks(in: memory, walk: walk).addresses.count, 2)
    }

    func testTheFuzzersFindingsStayFixed() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).sorted()
        XCTAssertFalse(files.isEmpty)
        for file in files {
            let input = try [UInt8](Data(contentsOf: Self.corpus.appendingPathComponent(file)))
            assertEveryInstanceIsAccountedFor(input, file)
            assertEveryUnreachableObjectIsInOneGroup(input, file)
        }
    }

    /// The walk at exit without `--retainers` reads only the instances' paths, and its search ends
    /// once it has reached them all: on every seed (the deep chain's instance is found first of
    /// its 50,000 objects), the fuzzer's findings and mutated seeds, the paths are those of the
    /// whole search.
    ///
    /// Also the searches for a cycle through an unreached instance, which read the graph of
    /// unreached objects once it is whole (an instance on none of its cycles needs no search):
    /// the paths are those of searches that read each object's layout again. And the paths of
    /// instances held from outside a cycle by one holder alone, taken from their holder's: they
    /// are those of a search backwards from each (seeds "held-list" and "unreferenced-list").
    func testTheSearchesShortcutsFindTheSamePaths() throws {
        var inputs = HeapSnapshotReplay.seeds.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        for file in try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).sorted() {
            inputs.append((file, try [UInt8](Data(contentsOf: Self.corpus.appendingPathComponent(file)))))
        }
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        let mutable = inputs.filter { $0.0 != "deep-chain" }
        for round in 0..<300 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            var input = mutable[round % mutable.count].1
            guard !input.isEmpty else { continue }
            input[Int((state >> 33) % UInt64(input.count))] = UInt8(truncatingIfNeeded: state >> 13)
            inputs.append(("\(mutable[round % mutable.count].0), mutation \(round)", input))
        }
        for (name, input) in inputs {
            let kept = input.withUnsafeBytes(HeapSnapshotReplay.shortcutsKeepPaths(from:))
            XCTAssertTrue(kept.earlyEnd, "\(name): ending once every instance is reached")
            XCTAssertTrue(kept.cyclesFromGraph, "\(name): cycles from the graph")
            XCTAssertTrue(kept.sharedHolderPaths, "\(name): paths shared with a sole holder")
        }
    }

    func testRandomAndMutatedSnapshotsNeverTrap() {
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        func random() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        // The deep chain is left out: a mutation of it costs a search of 50,000 objects.
        let seeds = HeapSnapshotReplay.seeds.filter { $0.key != "deep-chain" }.sorted { $0.key < $1.key }.map(\.value)
        for round in 0..<600 {
            var input: [UInt8]
            if round % 3 == 0 {
                input = (0..<Int(random() % 512)).map { _ in UInt8(truncatingIfNeeded: random()) }
            } else {
                input = seeds[round % seeds.count]
                for _ in 0..<(1 + random() % 6) {
                    input[Int(random() % UInt64(input.count))] = UInt8(truncatingIfNeeded: random())
                }
            }
            assertEveryInstanceIsAccountedFor(input, "round \(round)")
            assertEveryUnreachableObjectIsInOneGroup(input, "round \(round)")
        }
    }
}
