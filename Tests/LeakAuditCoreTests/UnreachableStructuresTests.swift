import LeakAuditModel
import XCTest

@testable import LeakAuditCore

/// The grouping of the objects no root reaches into structures (`--unreachable`), on synthetic
/// process snapshots (HeapSnapshotReplay): cycles by their canonical path, over-retained objects
/// alone, what they hold counted in their group, and what a root reaches never.
final class UnreachableStructuresTests: XCTestCase {
    private typealias Encoder = HeapSnapshotReplay.Encoder
    private typealias Code = HeapSnapshotReplay.Code
    private typealias Name = HeapSnapshotReplay.Name

    private func unreachable(_ encoder: Encoder) -> UnreachableObjects {
        encoder.bytes.withUnsafeBytes(HeapSnapshotReplay.unreachable(from:))
    }

    /// Each group as one line: shape, structures, objects, bytes and the path.
    private func lines(_ found: UnreachableObjects) -> [String] {
        found.groups.map { group in
            "\(group.shape.rawValue) \(group.count)×, \(group.objects) objects, \(group.bytes) bytes: "
                + group.path.map { "\($0.via) \($0.type)" }.joined(separator: " / ")
        }
    }

    /// Node (next → Screen) and Screen (parent → Node): a cycle of two types.
    private func twoTypes() -> Encoder {
        var encoder = Encoder()
        encoder.classType(name: Name.node, words: 1, fields: [(2, Encoder.symbolic(1), Name.next)])
        encoder.classType(name: Name.screen, words: 1, fields: [(2, Encoder.symbolic(0), Name.parent)])
        return encoder
    }

    func testACycleNothingReachesIsOneGroupStartingAtItsSmallestTypeName() {
        var encoder = twoTypes()
        // The Screen first in memory: the path still starts at the Node.
        encoder.chunks(
            .heap,
            [(2, [Encoder.meta(1), Code.live] + Encoder.object(1)), (2, [Encoder.meta(0), Code.live] + Encoder.object(0))])
        let found = unreachable(encoder)
        XCTAssertEqual(lines(found), ["cycle 1×, 2 objects, 48 bytes:  App.Node / next App.Screen / parent App.Node"])
        XCTAssertEqual(found.objects, 2)
        XCTAssertEqual(found.bytes, 48)
        XCTAssertEqual(found.types.map(\.name), ["App.Node", "App.Screen"])
        XCTAssertEqual(found.types.map(\.count), [1, 1])
        XCTAssertEqual(found.groups.map(\.isInternal), [false])
        XCTAssertEqual(found.processesChecked, 1)
    }

    func testWhatACycleHoldsIsCountedInItsGroupAndCyclesOfOneShapeAreOneGroup() {
        var encoder = Encoder()
        encoder.classType(name: Name.model)
        encoder.classType(
            name: Name.node, words: 2,
            fields: [(2, Encoder.symbolic(1), Name.next), (3, Encoder.symbolic(0), Name.modelProperty)])
        // Two rings of two nodes; the first ring's first node holds a model, which nothing else
        // holds: it is in that ring's structure, not a group of its own.
        encoder.chunks(
            .heap,
            [
                (3, [Encoder.meta(1), Code.live] + Encoder.object(1) + Encoder.object(4)),
                (3, [Encoder.meta(1), Code.live] + Encoder.object(0)),
                (3, [Encoder.meta(1), Code.live] + Encoder.object(3)),
                (3, [Encoder.meta(1), Code.live] + Encoder.object(2)),
                (2, [Encoder.meta(0), Code.live]),
            ])
        let found = unreachable(encoder)
        XCTAssertEqual(lines(found), ["cycle 2×, 5 objects, 184 bytes:  App.Node / next App.Node / next App.Node"])
        XCTAssertEqual(found.types.map { "\($0.name) \($0.count) \($0.bytes)" }, ["App.Node 4 160", "App.Model 1 24"])
    }

    /// Two rings of two nodes of one type, each node holding the other by another field (`next`
    /// one way, `parent` back, as a pipeline's head and tail contexts hold each other by `next`
    /// and `prev`): in the first ring the node holding `next` lies lower in memory, in the second
    /// the one holding `parent`. One shape, one group, drawn from the same field either way.
    func testACycleThroughMembersOfOneTypeIsOneGroupWhicheverOfThemLiesLowest() {
        var encoder = Encoder()
        encoder.classType(
            name: Name.node, words: 2,
            fields: [(2, Encoder.symbolic(0), Name.next), (3, Encoder.symbolic(0), Name.parent)])
        encoder.chunks(
            .heap,
            [
                (3, [Encoder.meta(0), Code.live] + Encoder.object(1) + [Code.zero]),
                (3, [Encoder.meta(0), Code.live, Code.zero] + Encoder.object(0)),
                (3, [Encoder.meta(0), Code.live, Code.zero] + Encoder.object(3)),
                (3, [Encoder.meta(0), Code.live] + Encoder.object(2) + [Code.zero]),
            ])
        let found = unreachable(encoder)
        XCTAssertEqual(lines(found), ["cycle 2×, 4 objects, 160 bytes:  App.Node / next App.Node / parent App.Node"])
    }

    func testAnObjectNothingHoldsOnNoCycleIsOverRetainedWithWhatItHolds() {
        var encoder = Encoder()
        encoder.classType(name: Name.model)
        encoder.classType(name: Name.session, words: 1, fields: [(2, Encoder.symbolic(0), Name.modelProperty)])
        // A session nothing holds, holding a model; a second model held by a global.
        encoder.chunks(
            .heap,
            [
                (2, [Encoder.meta(1), Code.live] + Encoder.object(1)), (2, [Encoder.meta(0), Code.live]),
                (2, [Encoder.meta(0), Code.live]),
            ])
        encoder.globals(Encoder.object(2))
        encoder.instances(Encoder.object(1) + Encoder.object(2))
        let found = unreachable(encoder)
        XCTAssertEqual(lines(found), ["overRetained 1×, 2 objects, 48 bytes:  App.Session"])
        // Of the watched objects (the instances), only the unreachable model is the group's.
        XCTAssertEqual(found.groups.first?.allocations.map(\.count), [1])
        XCTAssertEqual(found.types.map(\.name), ["App.Model", "App.Session"])
        XCTAssertEqual(found.groups.map(\.isInternal), [false])
    }

    /// A group fails only when it holds an object of the program's types: one mentioning a module
    /// that is not the toolchain's, however nested; unnamed objects and the toolchain's are nobody's.
    func testProgramTypesAreThoseOfModulesOutsideTheToolchain() {
        for name in [
            "App.Model", "[App.Model]", "Swift.Optional<App.Model>", "[Swift.String: App.Entry]",
            "Lib.Box<Swift.Int>", "(any App.Delegate)?", "App.Outer.Inner", "_CryptoExtras.RSAKey",
            "[_NIOFileSystem.FileHandle]",
        ] {
            XCTAssertTrue(TypeOrigin.isProgramType(name), name)
        }
        for name in [
            "closure context", "context of closure #1 in makeClosures()", "[Swift.AnyObject]",
            "[any XCTest.PerformanceMetric]", "Foundation.NSObject", "_Concurrency.Task<()>", "Swift.Set<Swift.Int>",
            "Testing._Box<Swift.Int>", "_StringProcessing.Regex<Swift.Substring>", "_FoundationCollections.Deque<Swift.Int>",
            "__C.NSObject", "",
        ] {
            XCTAssertFalse(TypeOrigin.isProgramType(name), name)
        }
    }

    func testNothingARootReachesIsUnreachable() {
        var encoder = twoTypes()
        encoder.chunks(
            .heap,
            [(2, [Encoder.meta(0), Code.live] + Encoder.object(1)), (2, [Encoder.meta(1), Code.live] + Encoder.object(0))])
        encoder.globals(Encoder.object(1))
        let found = unreachable(encoder)
        XCTAssertEqual(found.objects, 0)
        XCTAssertEqual(found.groups, [])
        XCTAssertEqual(found.types, [])
    }

    /// An array of a POD struct whose fields are plain values (`Edge`: two integers and a flag,
    /// stride 24 with 7 bytes of padding), and its storage: the elements' words hold nothing,
    /// whatever their padding reads as. Here an element's padding reads as the storage's own
    /// address: read as a reference, it made a cycle of one through the storage's own element, and
    /// a storage on a cycle is left out of what a test case holds (SwiftGraph's `edges`).
    /// An array storage nothing holds, of 2 edges (9 → 11, 9 → 8) of stride 24, the first one's
    /// last word the storage's own address; the edge type plain (POD) or not.
    private func edgesWithTheirStorageAddress(plain: Bool) -> [String] {
        var encoder = Encoder()
        encoder.typeSpec([Encoder.kind(.structure), plain ? 1 : 0, 0xF4] + Array("Edge".utf8) + [24])
        encoder.typeSpec([Encoder.kind(.array), 0, Name.items, 0])
        encoder.chunks(
            .heap,
            [
                (
                    6,
                    [Encoder.meta(1), Code.live, Code.small + 2, Code.small + 4]
                        + [Code.small + 9, Code.small + 11, Code.inside] + [Code.small + 9, Code.small + 8, Code.zero]
                )
            ])
        return lines(unreachable(encoder))
    }

    func testThePaddingOfPlainElementsNeverHoldsTheirOwnStorage() {
        XCTAssertEqual(edgesWithTheirStorageAddress(plain: true), ["overRetained 1×, 1 objects, 88 bytes:  [App.Edge]"])
    }

    /// Elements whose type may hold references are read word by word, stale bytes included (a
    /// smaller enum case's unused payload): a word that is the storage's own address is never a
    /// reference, as a storage cannot hold itself (OpenAPIKit's `[String: JSONSchema]`).
    func testAStorageNeverHoldsItself() {
        XCTAssertEqual(edgesWithTheirStorageAddress(plain: false), ["overRetained 1×, 1 objects, 88 bytes:  [App.Edge]"])
    }

    /// A closure context nothing holds, its capture a Model and its last word (past its capture,
    /// where malloc rounded the block up) its own address: a context cannot hold itself (its
    /// captures exist before it does; a closure that calls itself does so through a box), so it
    /// is over-retained with what it holds, not a cycle through itself (OpenAPIKit's `closure
    /// context → (captured) → closure context`).
    func testAClosureContextNeverHoldsItself() {
        var encoder = Encoder()
        encoder.classType(name: Name.model)
        encoder.typeSpec([Encoder.kind(.closureContext), 0, Name.onClose, 16, 1] + Encoder.symbolic(0))
        encoder.chunks(
            .heap, [(4, [Encoder.meta(1), Code.live] + Encoder.object(1) + [Code.inside]), (2, [Encoder.meta(0), Code.live])])
        XCTAssertEqual(lines(unreachable(encoder)), ["overRetained 1×, 2 objects, 80 bytes:  closure context"])
    }

    /// A word of an instance that runs past the end of its last field (a 17-byte instance whose
    /// last field is one byte, as `ManagedAtomic<Bool>`: the other seven bytes are malloc's slack)
    /// holds nothing, whatever stale address it spells: the Model holds the Holder, not the other
    /// way round (hummingbird's false `ManagedAtomic<Bool>.__storage` edges).
    func testAWordPastTheLastFieldIsNoReference() {
        var encoder = Encoder()
        encoder.classType(name: Name.model, words: 1, fields: [(2, Encoder.symbolic(1), Name.next)])
        // Instance size 17: a field of one byte at offset 16, of a type read as holding references.
        encoder.typeSpec([0, 0, Name.session, 0xFF, 0xFF, 1, 17, 0, 0, 0, 2] + Encoder.symbolic(0) + [Name.state])
        encoder.chunks(
            .heap,
            [(2, [Encoder.meta(0), Code.live] + Encoder.object(1)), (2, [Encoder.meta(1), Code.live] + Encoder.object(0))])
        XCTAssertEqual(lines(unreachable(encoder)), ["overRetained 1×, 2 objects, 48 bytes:  App.Model"])
    }

    /// A field of a tuple of plain types (an enum case's labelled payload is one: `case
    /// constant(index: UInt32, flag: Bool)`) holds nothing, whatever its padding spells; a tuple
    /// that names a class is still read (hummingbird's `TrieToken`, whose padding held a stale
    /// pointer that read as the holder of a leaked channel).
    func testATupleOfPlainTypesHoldsNothing() {
        func found(_ tuple: String) -> [String] {
            var encoder = Encoder()
            encoder.classType(name: Name.model, words: 1, fields: [(2, Encoder.symbolic(1), Name.next)])
            let mangled = [UInt8(15), UInt8(tuple.utf8.count)] + Array(tuple.utf8)
            encoder.classType(name: Name.session, words: 1, fields: [(2, mangled, Name.state)])
            encoder.chunks(
                .heap,
                [(2, [Encoder.meta(0), Code.live] + Encoder.object(1)), (2, [Encoder.meta(1), Code.live] + Encoder.object(0))])
            return lines(unreachable(encoder))
        }
        XCTAssertEqual(found("s6UInt32V5index_Sb4flagt"), ["overRetained 1×, 2 objects, 48 bytes:  App.Model"])
        XCTAssertEqual(found("s6UInt32V5index_Sb4flagtSg"), ["overRetained 1×, 2 objects, 48 bytes:  App.Model"])
        // A String may hold a reference (its storage): the tuple is read.
        XCTAssertEqual(
            found("s6UInt32V5index_SS4namet"), ["cycle 1×, 2 objects, 48 bytes:  App.Model / next App.Session / state App.Model"])
    }

    /// An array of `Any` (an opaque existential: a three-word buffer, the type's metadata, its
    /// witness tables) is read by the type each element holds: a class instance's reference in
    /// the buffer's first word, an inline value's words by what its type holds, never the
    /// buffer's stale bytes past the value (XCTest's `[any PerformanceMetric]` in Yams: a small
    /// metric inline, the buffer's third word the storage's own address).
    func testAnExistentialElementIsReadByTheTypeItHolds() {
        var encoder = Encoder()
        encoder.classType(name: Name.model)
        encoder.typeSpec([Encoder.kind(.structure), 1, 0xF5] + Array("Small".utf8) + [8])
        // Existential metadata: kind 0x303, not class-bound, no protocol; stride 40.
        encoder.typeSpec([Encoder.kind(.raw), 0, 0xF3] + Array("Any".utf8) + [0x03, 0x03])
        encoder.typeSpec([Encoder.kind(.array), 0, Name.items, 2])
        let existential = 0x1000 + 2 * 0x1000
        encoder.patch(.types, word: (existential + 0x18) / 8, Encoder.literal(0x8000_0000))
        encoder.patch(.types, word: (existential + 0x500 + 64) / 8, Encoder.literal(40) + Encoder.literal(40))
        // Nothing holds the storage: [0] a Small (7) whose buffer's next words are the storage's
        // address, [1] a model.
        encoder.chunks(
            .heap,
            [
                (
                    8,
                    [Encoder.meta(3), Code.live, Code.small + 2, Code.small + 4]
                        + [Code.small + 7, Code.inside, Code.inside, Encoder.meta(1), Code.zero]
                        + Encoder.object(1) + [Code.inside, Code.inside, Encoder.meta(0), Code.zero]
                ),
                (2, [Encoder.meta(0), Code.live]),
            ])
        XCTAssertEqual(lines(unreachable(encoder)), ["overRetained 1×, 2 objects, 144 bytes:  [Any]"])
    }

    /// A global holding an array of one POD enum value (its one case's payload: 0, the Model
    /// class; 0xFE, an `unowned(unsafe)` reference), which points at a model nothing else holds.
    private func globalArrayOfOnePODValue(payload: UInt8) -> Encoder {
        var encoder = Encoder()
        encoder.classType(name: Name.model)
        encoder.typeSpec([Encoder.kind(.enumeration), 1, 0xF4] + Array("Slot".utf8) + [1, Name.loading, payload])
        encoder.typeSpec([Encoder.kind(.array), 0, Name.items, 1])
        encoder.chunks(
            .heap,
            [
                (3, [Encoder.meta(2), Code.live, Code.small + 1, Code.small + 2] + Encoder.object(1)),
                (2, [Encoder.meta(0), Code.live]),
            ])
        encoder.globals(Encoder.object(0))
        return encoder
    }

    /// A POD element that may be an `Unmanaged` or a raw pointer (an enum whose payload is a
    /// class: POD by its value witnesses, so no strong reference) still holds what it points at
    /// or into, with untyped memory: never an unreachable object.
    func testPODElementsThatMayBePointersHoldWithUntypedMemory() {
        XCTAssertEqual(unreachable(globalArrayOfOnePODValue(payload: 0)).groups, [])
    }

    /// A POD value whose reference is `unowned(unsafe)` inside it, as `Unmanaged`'s `_value`
    /// is, may carry a retained reference (`Unmanaged.passRetained`): an array of them holds what
    /// they point at, with untyped memory.
    func testAnArrayOfUnmanagedLikeValuesHoldsWhatTheyPointAt() {
        XCTAssertEqual(unreachable(globalArrayOfOnePODValue(payload: 0xFE)).groups, [])
    }

    /// A list of 50,000 nodes that nothing holds is one over-retained structure of 50,000 objects:
    /// the walks keep their own queues.
    func testALongUnreachableListIsOneStructure() {
        var encoder = Encoder()
        encoder.classType(name: Name.node, words: 1, fields: [(2, Encoder.symbolic(0), Name.next)])
        encoder.chunks(.heap, [(2, [Encoder.meta(0), Code.live, Code.relative + 4])], repeats: 50_000)
        let found = unreachable(encoder)
        XCTAssertEqual(lines(found), ["overRetained 1×, 50000 objects, 1200000 bytes:  App.Node"])
        XCTAssertEqual(found.objects, 50_000)
    }

    /// A ring of 50,000 nodes is one cycle, its path round all of them, shortened as long paths are.
    func testALongUnreachableRingIsOneCycle() {
        var encoder = Encoder()
        encoder.classType(name: Name.node, words: 1, fields: [(2, Encoder.symbolic(0), Name.next)])
        encoder.chunks(.heap, [(2, [Encoder.meta(0), Code.live, Code.relative + 4])], repeats: 49_999)
        encoder.chunks(.heap, [(2, [Encoder.meta(0), Code.live] + Encoder.object(0))])
        let found = unreachable(encoder)
        XCTAssertEqual(found.groups.map(\.shape), [.cycle])
        XCTAssertEqual(found.groups.map(\.objects), [50_000])
        XCTAssertEqual(found.groups.first?.path.count, 1_000)
    }

    /// Tarjan's components, on a graph given in compressed rows.
    func testStronglyConnectedComponents() {
        // 0 → 1 → 2 → 0, 2 → 3, 3 → 3, 4 alone.
        let offsets = [0, 1, 2, 4, 5, 5]
        let targets: [Int32] = [1, 2, 0, 3, 3]
        let components = RetainerSearch.stronglyConnectedComponents(offsets: offsets, targets: targets)
        XCTAssertEqual(components.count, 3)
        XCTAssertEqual(Set(components.component[0...2]).count, 1)
        XCTAssertNotEqual(components.component[3], components.component[0])
        // A component is numbered before those that reach it.
        XCTAssertLessThan(components.component[3], components.component[0])
        XCTAssertEqual(components.onCycle(offsets: offsets, targets: targets).filter { $0 }.count, 2)
        XCTAssertFalse(components.onCycle(offsets: offsets, targets: targets)[Int(components.component[4])])
    }
}
