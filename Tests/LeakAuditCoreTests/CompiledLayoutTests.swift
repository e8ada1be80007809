import XCTest

@testable import LeakAuditCore

#if canImport(Glibc)
    import Glibc
#endif

// Types the compiler lays out in this test bundle, read back by the type lowering from this
// process's own memory: their sizes and extra inhabitants (what their value witnesses say), and
// the words a value of each is read at.

final class CompiledReference {
    var value = 0
}

final class OtherReference {
    var value = 0
}

/// Two references: the tag in their common spare bits.
enum SpareReferences {
    case first(CompiledReference)
    case second(OtherReference)
}

/// The same with cases without payload: one more tag value.
enum SpareReferencesWithEmpty {
    case first(CompiledReference)
    case second(OtherReference)
    case none
    case unknown
}

/// Integers have no spare bits: a tag byte after the payload.
enum TaggedIntegers {
    case first(Int)
    case second(Int)
}

enum TaggedIntegersWithEmpty {
    case first(Int)
    case second(Int)
    case none
    case unknown
}

/// A generic enum is laid out without spare bits: a tag byte.
enum GenericEither<A, B> {
    case first(A)
    case second(B)
}

/// swift-nio's `_NIOAnyStorage`'s shape: an `Any` beside smaller payloads.
enum AnyStorage {
    case integers(TaggedIntegers)
    case reference(CompiledReference)
    case other(Any)
}

/// swift-nio's `NIOAny`: a struct of one multi-payload enum.
struct AnyBox {
    var storage: AnyStorage
}

/// Each enum's optional, then a word, so that the optional's size decides the word's offset.
struct OptionalHolders {
    var spare: SpareReferences?
    var spareWithEmpty: SpareReferencesWithEmpty?
    var tagged: TaggedIntegers?
    var taggedWithEmpty: TaggedIntegersWithEmpty?
    var either: GenericEither<Bool, CompiledReference>?
    var box: AnyBox?
    var last: Int
}

/// Ranges, as a URL's parse info keeps its components (`Range<String.Index>?`): two plain bounds
/// each, then a reference.
struct RangeHolders {
    var range: Range<Int>
    var text: Range<String.Index>?
    var closed: ClosedRange<UInt8>?
    var holder: CompiledReference
}

/// A struct whose extra inhabitants are its `String`'s (the first field with the most): a `nil`
/// of its optional writes that word only.
struct Labelled {
    var count: Int
    var label: String
    var holder: CompiledReference?
}

/// A struct whose extra inhabitants are its optional reference's, less the one its `nil` takes.
struct OptionalFirst {
    var holder: CompiledReference?
    var count: Int
}

/// A struct whose extra inhabitants are its `Bool`'s (254, more than the enum's 253).
struct Flagged {
    var flag: Bool
    var state: TaggedIntegersWithEmpty
    var holder: CompiledReference
}

/// OpenAPIKit's `JSONSchema` in small: a struct of warnings and a multi-payload enum whose large
/// cases are indirect, their boxes capturing a tuple of a nested generic struct and a struct
/// that holds an optional of the schema and an optional generic multi-payload enum of it.
struct MirrorSchema {
    var warnings: [String]
    var value: Kind

    enum Kind {
        case boolean(Core<BooleanFormat>)
        case string(Core<StringFormat>, String?)
        indirect case object(Core<ObjectFormat>, ObjectContext)
        indirect case array(Core<ArrayFormat>, ArrayContext)
        case fragment(Core<BooleanFormat>)
    }

    struct Core<Format> {
        var format: Format
        var title: String?
        var required: Bool
        var definitions: [String: MirrorSchema]
        var examples: [Any]
    }

    struct ObjectContext {
        var maxProperties: Int?
        var properties: [String: MirrorSchema]
        var additionalProperties: GenericEither<Bool, MirrorSchema>?
    }

    struct ArrayContext {
        var items: MirrorSchema?
        var maxItems: Int?
    }

    enum BooleanFormat { case generic, other }
    enum StringFormat {
        case generic, date
        case other(String)
    }
    enum ObjectFormat { case generic }
    enum ArrayFormat { case generic }
}

final class CompiledLayoutTests: XCTestCase {
    /// This process, read in place: every readable mapping but the kernel's own pages.
    private static func ownLayout() throws -> SwiftLayout {
        var regions = try XCTUnwrap(ProcessCopier.readMappings(getpid()))
        regions.removeAll { $0.path.hasPrefix("[v") }
        for index in regions.indices {
            let region = regions[index]
            let start = UnsafeRawPointer(bitPattern: UInt(region.start))
            regions[index].bytes = RegionBytes(UnsafeRawBufferPointer(start: start, count: Int(region.end - region.start))) {
                _ in
            }
        }
        let snapshot = ProcessSnapshot(pid: getpid(), regions: regions, threads: [])
        let layout = SwiftLayout(memory: SnapshotMemory(snapshot))
        let classes = ForeignClassSymbols.classes(in: ProcessInspection.modules(of: snapshot))
        layout.multiPayloadEnumSections = classes.multiPayloadEnumSections
        layout.builtinTypeSections = classes.builtinTypeSections
        return layout
    }

    private static func metadata(_ type: Any.Type) -> UInt64 {
        UInt64(UInt(bitPattern: unsafeBitCast(type, to: Int.self)))
    }

    /// The extra inhabitants a type's value witnesses give it.
    private static func extraInhabitants(_ type: Any.Type) -> Int {
        let metadata = UnsafeRawPointer(bitPattern: UInt(metadata(type)))!
        let witnesses = metadata.load(fromByteOffset: -8, as: UnsafeRawPointer.self)
        return Int(witnesses.load(fromByteOffset: 84, as: UInt32.self))
    }

    /// The layout the lowering gives a struct or enum from its descriptor.
    private func lowered(_ type: Any.Type, _ layout: SwiftLayout) throws -> SwiftLayout.ValueLayout {
        let metadata = UnsafeRawPointer(bitPattern: UInt(Self.metadata(type)))!
        let descriptor = UInt64(UInt(bitPattern: metadata.load(fromByteOffset: 8, as: UnsafeRawPointer.self)))
        return try XCTUnwrap(layout.layout(ofNominal: descriptor, arguments: []), "\(type)")
    }

    /// Whether what the lowering knows of extra inhabitants agrees with the compiler's count.
    private func assertAgrees(_ known: SwiftLayout.ExtraInhabitants, _ exact: Int, _ message: String) {
        switch known {
        case .exactly(let count): XCTAssertEqual(count, exact, message)
        case .atLeast(let count): XCTAssertLessThanOrEqual(count, exact, message)
        case .none: XCTAssertEqual(exact, 0, message)
        case .unknown: XCTFail("\(message): not known (the compiler gives \(exact))")
        }
    }

    func testAMultiPayloadEnumsSizeAndExtraInhabitantsAreTheCompilers() throws {
        let layout = try Self.ownLayout()
        let types: [(Any.Type, Int)] = [
            (SpareReferences.self, MemoryLayout<SpareReferences>.size),
            (SpareReferencesWithEmpty.self, MemoryLayout<SpareReferencesWithEmpty>.size),
            (TaggedIntegers.self, MemoryLayout<TaggedIntegers>.size),
            (TaggedIntegersWithEmpty.self, MemoryLayout<TaggedIntegersWithEmpty>.size),
            (AnyStorage.self, MemoryLayout<AnyStorage>.size),
            (AnyBox.self, MemoryLayout<AnyBox>.size),
        ]
        for (type, size) in types {
            let found = try lowered(type, layout)
            XCTAssertEqual(found.size, size, "\(type)")
            assertAgrees(found.extraInhabitants, Self.extraInhabitants(type), "\(type)")
        }
    }

    func testOptionalsOfMultiPayloadEnumsAreLoweredAtTheCompilersOffsets() throws {
        let layout = try Self.ownLayout()
        let found = try lowered(OptionalHolders.self, layout)
        XCTAssertEqual(found.size, MemoryLayout<OptionalHolders>.size)
        guard case .fields(let fields) = found.shape else { return XCTFail("\(found.shape)") }
        let offsets: [Int?] = [
            MemoryLayout<OptionalHolders>.offset(of: \.spare), MemoryLayout<OptionalHolders>.offset(of: \.spareWithEmpty),
            MemoryLayout<OptionalHolders>.offset(of: \.tagged), MemoryLayout<OptionalHolders>.offset(of: \.taggedWithEmpty),
            MemoryLayout<OptionalHolders>.offset(of: \.either),
            MemoryLayout<OptionalHolders>.offset(of: \.box), MemoryLayout<OptionalHolders>.offset(of: \.last),
        ]
        XCTAssertEqual(fields.map(\.offset), offsets.compactMap { $0 })
    }

    /// An indirect case's box is read by its capture's layout, up to the capture's end: the
    /// tuple lowers, its optionals of multi-payload enums among it.
    func testAnIndirectCasesBoxIsReadByItsCapturesLayout() throws {
        let core = MirrorSchema.Core(
            format: MirrorSchema.ObjectFormat.generic, title: nil, required: true, definitions: [:], examples: [])
        let leaf = MirrorSchema(
            warnings: [],
            value: .boolean(
                MirrorSchema.Core(
                    format: .generic, title: "leaf", required: false, definitions: [:], examples: [])))
        let context = MirrorSchema.ObjectContext(maxProperties: 3, properties: ["leaf": leaf], additionalProperties: nil)
        let arrayCore = MirrorSchema.Core(
            format: MirrorSchema.ArrayFormat.generic, title: nil, required: true, definitions: [:], examples: [])
        for value in [
            MirrorSchema.Kind.object(core, context), .array(arrayCore, MirrorSchema.ArrayContext(items: nil, maxItems: 1)),
        ] {
            let layout = try Self.ownLayout()
            // The box's address is the payload's first word, the tag in its spare bits.
            let word = withUnsafeBytes(of: value) { $0.load(as: UInt64.self) }
            let box = word & 0x00FF_FFFF_FFFF_FFF8
            let type = try XCTUnwrap(layout.objectType(at: box), "\(value)")
            XCTAssertEqual(type.kind, .closureContext)
            XCTAssertNotNil(type.captureShape, "\(value)")
            let size = 16 + MemoryLayout<(MirrorSchema.Core<MirrorSchema.ObjectFormat>, MirrorSchema.ObjectContext)>.size
            if case .object = value { XCTAssertEqual(type.capturesEnd, size) }
            withExtendedLifetime(value) {}
        }
    }

    func testAStructsExtraInhabitantsAreItsFieldsWithTheMost() throws {
        let layout = try Self.ownLayout()
        let types: [(Any.Type, Int)] = [
            (Labelled.self, MemoryLayout<Labelled>.size), (OptionalFirst.self, MemoryLayout<OptionalFirst>.size),
            (Flagged.self, MemoryLayout<Flagged>.size), (MirrorSchema.self, MemoryLayout<MirrorSchema>.size),
        ]
        for (type, size) in types {
            let found = try lowered(type, layout)
            XCTAssertEqual(found.size, size, "\(type)")
            XCTAssertNotNil(found.inhabitants, "\(type)")
            assertAgrees(found.extraInhabitants, Self.extraInhabitants(type), "\(type)")
        }
    }

    /// The words read of two optionals written over stale words (each the address of a live
    /// object): none of the `nil`, whose case writes only its payload's extra inhabitant, and
    /// the reference of the other.
    private func assertNilReadsNothing<Payload>(_ value: Payload, holderAt holder: Int, _ layout: SwiftLayout) throws {
        let optional = try XCTUnwrap(
            layout.layout(ofNominal: Self.descriptor(Optional<Int>.self), arguments: [try lowered(Payload.self, layout)]))
        XCTAssertEqual(optional.size, MemoryLayout<Payload?>.size, "\(Payload.self)")
        let stride = MemoryLayout<Payload?>.stride
        let stale = CompiledReference()
        let slots = Self.staleSlots(byteCount: 2 * stride, pointingAt: stale)
        defer { slots.deallocate() }
        let typed = slots.bindMemory(to: Payload?.self, capacity: 2)
        typed.initialize(to: nil)
        (typed + 1).initialize(to: value)
        defer { typed.deinitialize(count: 2) }
        let address = UInt64(UInt(bitPattern: slots))
        var offsets: [Int] = []
        layout.referenceOffsets(optional.shape, at: address, span: optional.size, base: 0, into: &offsets)
        XCTAssertEqual(offsets, [], "\(Payload.self)")
        offsets = []
        layout.referenceOffsets(optional.shape, at: address + UInt64(stride), span: optional.size, base: 0, into: &offsets)
        XCTAssertTrue(offsets.contains(holder), "\(Payload.self): \(offsets)")
        // The same read by the optional's metadata (its own kind, 0x202), as an array's elements are.
        let summary = try XCTUnwrap(layout.summary(ofTypeMetadata: Self.metadata(Payload?.self)), "\(Payload.self)")
        let shape = try XCTUnwrap(summary.shape, "\(Payload.self)")
        offsets = []
        layout.referenceOffsets(shape, at: address, span: optional.size, base: 0, into: &offsets)
        XCTAssertEqual(offsets, [], "\(Payload.self) by its metadata")
        offsets = []
        layout.referenceOffsets(shape, at: address + UInt64(stride), span: optional.size, base: 0, into: &offsets)
        XCTAssertTrue(offsets.contains(holder), "\(Payload.self) by its metadata: \(offsets)")
    }

    /// `byteCount` bytes whose every word is `stale`'s address, as a freed object's would leave
    /// them, for a value to be written over.
    private static func staleSlots(byteCount: Int, pointingAt stale: AnyObject) -> UnsafeMutableRawPointer {
        let slots = UnsafeMutableRawPointer.allocate(byteCount: byteCount, alignment: 16)
        for word in 0..<(byteCount / 8) {
            slots.storeBytes(
                of: UInt(bitPattern: Unmanaged.passUnretained(stale).toOpaque()), toByteOffset: word * 8, as: UInt.self)
        }
        return slots
    }

    private static func descriptor(_ type: Any.Type) -> UInt64 {
        let metadata = UnsafeRawPointer(bitPattern: UInt(metadata(type)))!
        return UInt64(UInt(bitPattern: metadata.load(fromByteOffset: 8, as: UnsafeRawPointer.self)))
    }

    /// A range is its two bounds: a value of ranges and optional ranges lowers to the compiler's
    /// size, and of one written over stale words (each a live object's address) only its
    /// reference is read, none of the padding after an optional range's tag byte.
    func testRangesAreTheirTwoBoundsAndHoldNothing() throws {
        let layout = try Self.ownLayout()
        let found = try lowered(RangeHolders.self, layout)
        XCTAssertEqual(found.size, MemoryLayout<RangeHolders>.size)
        let stale = CompiledReference()
        let holder = CompiledReference()
        let stride = MemoryLayout<RangeHolders>.stride
        let slot = Self.staleSlots(byteCount: stride, pointingAt: stale)
        defer { slot.deallocate() }
        let text = "a range of text"
        for value in [
            RangeHolders(range: 1..<2, text: nil, closed: nil, holder: holder),
            RangeHolders(range: 3..<4, text: text.startIndex..<text.endIndex, closed: 5...6, holder: holder),
        ] {
            let typed = slot.bindMemory(to: RangeHolders.self, capacity: 1)
            typed.initialize(to: value)
            var offsets: [Int] = []
            layout.referenceOffsets(
                found.shape, at: UInt64(UInt(bitPattern: slot)), span: found.size, base: 0, into: &offsets)
            XCTAssertEqual(offsets, [MemoryLayout<RangeHolders>.offset(of: \.holder)!], "\(value)")
            typed.deinitialize(count: 1)
        }
        withExtendedLifetime(stale) {}
    }

    func testANilOptionalOfAStructReadsNothingOfTheWordsItLeaves() throws {
        let layout = try Self.ownLayout()
        let reference = CompiledReference()
        try assertNilReadsNothing(
            Labelled(count: 1, label: "label", holder: reference), holderAt: MemoryLayout<Labelled>.offset(of: \.holder)!,
            layout)
        try assertNilReadsNothing(OptionalFirst(holder: reference, count: 2), holderAt: 0, layout)
        try assertNilReadsNothing(
            Flagged(flag: true, state: .none, holder: reference), holderAt: MemoryLayout<Flagged>.offset(of: \.holder)!,
            layout)
        try assertNilReadsNothing(AnyBox(storage: .reference(reference)), holderAt: 0, layout)
        try assertNilReadsNothing(
            MirrorSchema(
                warnings: ["warning"],
                value: .fragment(
                    MirrorSchema.Core(
                        format: .generic, title: nil, required: true,
                        definitions: [
                            "a": MirrorSchema(
                                warnings: [],
                                value: .fragment(
                                    MirrorSchema.Core(format: .other, title: nil, required: true, definitions: [:], examples: []))
                            )
                        ],
                        examples: []))), holderAt: 0, layout)
    }
}
