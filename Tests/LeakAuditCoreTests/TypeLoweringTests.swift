import XCTest

@testable import LeakAuditCore

/// The type lowering (Retainers/TypeLowering.swift) on descriptors, field records, mangled names
/// and the `swift5_mpenum` and `swift5_builtin` records written by hand into one region, as a
/// compiler lays them out: substitutions resolved as Swift's demangler does, a `String`'s words,
/// and a multi-payload enum's tag where its fixed size puts it.
final class TypeLoweringTests: XCTestCase {
    /// One image's read-only data, built at `base`, each piece appended after the ones it
    /// points to.
    private struct Image {
        static let base: UInt64 = 0x5555_0000_0000
        var bytes: [UInt8] = []

        var end: UInt64 { Self.base + UInt64(bytes.count) }

        mutating func align(_ alignment: Int) {
            while bytes.count % alignment != 0 { bytes.append(0) }
        }

        mutating func uint32(_ value: UInt32) {
            bytes += withUnsafeBytes(of: value.littleEndian, Array.init)
        }

        mutating func uint16(_ value: UInt16) {
            bytes += withUnsafeBytes(of: value.littleEndian, Array.init)
        }

        /// A 32-bit relative pointer to `target` (0: none) at the current end.
        mutating func relative(_ target: UInt64?) {
            guard let target else { return uint32(0) }
            uint32(UInt32(bitPattern: Int32(truncatingIfNeeded: Int64(bitPattern: target &- end))))
        }

        mutating func cString(_ text: String) -> UInt64 {
            let address = end
            bytes += Array(text.utf8) + [0]
            return address
        }

        /// A mangled name: its text, each symbolic reference a 1 and a relative pointer to the
        /// descriptor.
        mutating func mangled(_ parts: [MangledPart]) -> UInt64 {
            let address = end
            for part in parts {
                switch part {
                case .text(let text): bytes += Array(text.utf8)
                case .reference(let descriptor):
                    bytes.append(1)
                    relative(descriptor)
                }
            }
            bytes.append(0)
            return address
        }

        /// A context descriptor: flags, parent, name, then (for a type) its access function,
        /// field descriptor and `extra` 32-bit words.
        mutating func descriptor(
            kind: UInt32, generic: Bool = false, parent: UInt64?, name: UInt64?, fields: UInt64? = nil,
            extra: [UInt32] = [], genericParameters: Int = 0
        ) -> UInt64 {
            align(4)
            let address = end
            uint32(kind | (generic ? 0x80 : 0))
            relative(parent)
            relative(name)
            if kind >= 16 {
                uint32(0)
                relative(fields)
                for word in extra { uint32(word) }
            }
            if generic {
                // The generic header: instantiation cache, pattern, then parameter, requirement,
                // key argument and extra argument counts, then each parameter's kind (key: 0x80).
                uint32(0)
                uint32(0)
                let count = UInt16(genericParameters)
                uint16(count)
                uint16(0)
                uint16(count)
                uint16(0)
                bytes += [UInt8](repeating: 0x80, count: genericParameters)
                align(4)
            }
            return address
        }

        /// A field descriptor's place, to be filled once its records' names are known.
        mutating func fieldDescriptor(_ records: [(flags: UInt32, type: UInt64?, name: UInt64)]) -> UInt64 {
            align(4)
            let address = end
            relative(nil)
            relative(nil)
            uint16(0)
            uint16(12)
            uint32(UInt32(records.count))
            for record in records {
                uint32(record.flags)
                relative(record.type)
                relative(record.name)
            }
            return address
        }

        func layout(
            multiPayloadEnums: Range<UInt64>? = nil, builtinTypes: Range<UInt64>? = nil
        ) -> SwiftLayout {
            let region = ProcessSnapshot.Region(
                start: Self.base, end: Self.base + UInt64((bytes.count + 4095) / 4096 * 4096), isWritable: false,
                isExecutable: false, path: "/app/App", copiedStart: Self.base, bytes: RegionBytes(copying: bytes))
            let layout = SwiftLayout(memory: SnapshotMemory(ProcessSnapshot(pid: 1, regions: [region], threads: [])))
            layout.multiPayloadEnumSections = multiPayloadEnums.map { [$0] } ?? []
            layout.builtinTypeSections = builtinTypes.map { [$0] } ?? []
            return layout
        }
    }

    private enum MangledPart {
        case text(String)
        case reference(UInt64)
    }

    /// A module `App`, a class `Ref` and a generic struct `Pair<A, B> { var first: A; var
    /// second: B }`.
    private struct Types {
        var image = Image()
        var module: UInt64 = 0
        var reference: UInt64 = 0
        var pair: UInt64 = 0

        init() {
            let moduleName = image.cString("App")
            module = image.descriptor(kind: 0, parent: nil, name: moduleName)
            let referenceName = image.cString("Ref")
            reference = image.descriptor(kind: 16, parent: module, name: referenceName)
            let first = image.cString("first")
            let second = image.cString("second")
            let firstType = image.mangled([.text("x")])
            let secondType = image.mangled([.text("q_")])
            let fields = image.fieldDescriptor([(0, firstType, first), (0, secondType, second)])
            let pairName = image.cString("Pair")
            pair = image.descriptor(
                kind: 17, generic: true, parent: module, name: pairName, fields: fields, extra: [2, 2],
                genericParameters: 2)
        }
    }

    /// The word offsets a value of `layout` at `address` is read at.
    private func offsets(_ layout: SwiftLayout.ValueLayout, _ swiftLayout: SwiftLayout, at address: UInt64 = 0) -> [Int] {
        var offsets: [Int] = []
        swiftLayout.referenceOffsets(layout.shape, at: address, span: layout.size, base: 0, into: &offsets)
        return offsets
    }

    func testSubstitutionsNameTheTypesTheDemanglerRegistered() throws {
        var types = Types()
        // `Pair<Ref, Ref>` spelt with a substitution: 0 is `Pair`, 1 is `Ref` (a symbolic
        // reference registers its type), so `AB` is `Ref`.
        let refRef = types.image.mangled([.reference(types.pair), .text("y"), .reference(types.reference), .text("ABG")])
        // `Pair` takes two arguments in all, its levels' lists together: three are not known.
        let twoSubstitutions = types.image.mangled([
            .reference(types.pair), .text("y"), .reference(types.reference), .text("_"), .text("AbBG"),
        ])
        // A substitution past those registered names nothing: not known.
        let outOfRange = types.image.mangled([.reference(types.pair), .text("y"), .reference(types.reference), .text("ACG")])
        // A bound generic type registers itself: `Pair<Pair<Ref, Ref>, Pair<Ref, Ref>>`, the
        // second argument spelt `AD` (3: the bound `Pair<Ref, Ref>`, after `Pair`, `Pair`, `Ref`).
        let nested = types.image.mangled([
            .reference(types.pair), .text("y"), .reference(types.pair), .text("y"), .reference(types.reference),
            .text("ACGADG"),
        ])
        let layout = types.image.layout()

        let pair = try XCTUnwrap(layout.layout(ofMangledType: refRef))
        XCTAssertEqual(pair.size, 16)
        XCTAssertEqual(offsets(pair, layout), [0, 8])
        XCTAssertNil(layout.layout(ofMangledType: twoSubstitutions))
        XCTAssertNil(layout.layout(ofMangledType: outOfRange))
        let pairs = try XCTUnwrap(layout.layout(ofMangledType: nested))
        XCTAssertEqual(pairs.size, 32)
        XCTAssertEqual(offsets(pairs, layout), [0, 8, 16, 24])
    }

    func testLowerCaseSubstitutionsAreFollowedByMoreAndCountsRepeatThem() throws {
        var types = Types()
        // `(Ref, Ref, Ref, Ref)`: `Ref` (registered as 0), then `A2aA`: twice `Ref` (a lower-case
        // letter: more follow), then once more.
        let four = types.image.mangled([.reference(types.reference), .text("_A2aAt")])
        let layout = types.image.layout()
        let tuple = try XCTUnwrap(layout.layout(ofMangledType: four))
        XCTAssertEqual(tuple.size, 32)
        XCTAssertEqual(offsets(tuple, layout), [0, 8, 16, 24])
    }

    func testARepeatedStandardTypeIsPushedAsManyTimes() throws {
        var types = Types()
        // `Pair<String, String>`: `S2S` is two Strings.
        let strings = types.image.mangled([.reference(types.pair), .text("yS2SG")])
        // `Pair<Int, String>` spelt plainly, for the String's words.
        let intString = types.image.mangled([.reference(types.pair), .text("ySiSSG")])
        let layout = types.image.layout()

        let pair = try XCTUnwrap(layout.layout(ofMangledType: strings))
        XCTAssertEqual(pair.size, 32)
        // A String's first word is its count and flags, never a reference: only its object word.
        XCTAssertEqual(offsets(pair, layout), [8, 24])
        let mixed = try XCTUnwrap(layout.layout(ofMangledType: intString))
        XCTAssertEqual(mixed.size, 24)
        XCTAssertEqual(offsets(mixed, layout), [16])
    }

    /// An enum `Choice { case a(Ref), case b(Int) }` whose `swift5_mpenum` record says its tag
    /// lies in the payload's spare bits (the word's top bit), with a `swift5_builtin` record of
    /// `builtinSize` bytes or none; and a value whose payload word points at an object with its
    /// top bit set, followed by the byte 0.
    private func choice(builtinSize: Int?) throws -> (layout: SwiftLayout, lowered: SwiftLayout.ValueLayout, value: UInt64) {
        var types = Types()
        let reference = types.image.mangled([.reference(types.reference)])
        let integer = types.image.mangled([.text("Si")])
        let a = types.image.cString("a")
        let b = types.image.cString("b")
        let fields = types.image.fieldDescriptor([(0, reference, a), (0, integer, b)])
        let name = types.image.cString("Choice")
        let choice = types.image.descriptor(kind: 18, parent: types.module, name: name, fields: fields, extra: [2, 0])
        // The record: its name, then 3 words (size and flags: spare bits used; the mask's offset
        // 7 and count 1; the mask, bit 7 of byte 7).
        let recordName = types.image.mangled([.reference(choice)])
        types.image.align(4)
        let record = types.image.end
        types.image.relative(recordName)
        types.image.uint32(3 << 16 | 1)
        types.image.uint32(7 << 16 | 1)
        types.image.bytes += [0x80, 0, 0, 0]
        let records = record..<types.image.end
        var builtins: Range<UInt64>? = nil
        if let builtinSize {
            types.image.align(4)
            let start = types.image.end
            types.image.relative(recordName)
            for word in [UInt32(builtinSize), 8, 16, 0] { types.image.uint32(word) }
            builtins = start..<types.image.end
        }
        types.image.align(8)
        let value = types.image.end
        types.image.bytes += [0x10, 0, 0, 0, 0x55, 0x55, 0, 0x80, 0, 0, 0, 0, 0, 0, 0, 0]
        let layout = types.image.layout(multiPayloadEnums: records, builtinTypes: builtins)
        let lowered = try XCTUnwrap(layout.layout(ofNominal: choice, arguments: []))
        XCTAssertNotNil(layout.shape(ofEnum: choice, depth: 0))
        return (layout, lowered, value)
    }

    func testAFixedSizePastThePayloadPutsTheTagInBytesOfItsOwn() throws {
        // 9 bytes: the tag is the byte after the payload (0: `a`, the reference), the record's
        // spare bit is the payload's own (here a stale top bit), as OpenAPIKit30's
        // `JSONSchema.Schema` (265 bytes, its tag at 264).
        let tagged = try choice(builtinSize: 9)
        XCTAssertEqual(tagged.lowered.size, 9)
        XCTAssertEqual(offsets(tagged.lowered, tagged.layout, at: tagged.value), [0])
        // 8 bytes: the record's spare bit is the tag (1: `b`, an integer, which holds nothing).
        let spare = try choice(builtinSize: 8)
        XCTAssertEqual(spare.lowered.size, 8)
        XCTAssertEqual(offsets(spare.lowered, spare.layout, at: spare.value), [])
        // No size recorded: the record alone.
        let recordOnly = try choice(builtinSize: nil)
        XCTAssertEqual(offsets(recordOnly.lowered, recordOnly.layout, at: recordOnly.value), [])
        // A size that fits neither reading is not known.
        XCTAssertNil(SwiftLayout.tagOffset(enumSize: 11, payloadSize: 8, alignment: 8))
        XCTAssertEqual(SwiftLayout.tagOffset(enumSize: 17, payloadSize: 9, alignment: 8), 16)
    }
}
