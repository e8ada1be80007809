/// Reads Swift's runtime structures out of a process snapshot: which addresses are live heap
/// objects, their types' names, and which of their words are strong references and under which
/// name (stored property, array index, dictionary key, closure capture). The layouts are the Swift
/// runtime's (swift/ABI/Metadata.h, HeapObject.h, RefCount.h) on 64-bit Linux, without
/// Objective-C interoperability. Everything read comes from the target: a value that does not
/// fit the layout makes the address "not an object" or the word "not a reference", never a trap.
final class SwiftLayout {
    let memory: SnapshotMemory

    /// What is known about one heap object's type, cached per metadata pointer.
    struct ObjectType {
        enum Kind {
            /// A class instance: stored properties, then (for collection storage) elements.
            case classInstance
            /// A closure context (HeapLocalVariable metadata): captures from `firstCapture` on.
            case closureContext
            /// A box for a captured `var` (HeapGenericLocalVariable): the value at `firstCapture`.
            case box
            /// An async task: its frames are read word by word.
            case task
            /// Another runtime object (an error box, a job): read word by word.
            case other
        }
        var kind: Kind
        /// The type's name, module-qualified, generic arguments included.
        var name: String
        /// The class's instance size (the end of its stored properties); 0 when unknown.
        var instanceSize: Int
        /// Stored properties of the class and its superclasses, sorted by offset.
        var fields: [Field]
        /// Where a closure context's captures or a box's value start.
        var firstCapture: Int = 16
        /// Capture offsets that hold no strong reference (weak or unowned captures whose place
        /// is known); a non-owning capture whose place is not known is read as strong.
        var captureExclusions: [Range<Int>] = []
        /// Where a closure context's captures end, when its capture descriptor gives every
        /// capture's size; nil: unknown, the captures are read to the end of the malloc chunk.
        var capturesEnd: Int? = nil
        /// How the captures are read, from `firstCapture`, when every capture's type is lowered
        /// (an indirect enum case's box holds its payload so: `JSONSchema.Schema.object`'s
        /// tuple); nil: word by word, save the exclusions.
        var captureShape: ValueShape? = nil
        /// Swift collection storage, read element by element.
        var collection: Collection?
        /// A `ManagedBuffer` (or a subclass's) elements, allocated past its header: the
        /// element's type and where the first one starts. A deque's are read in its live slots
        /// (`TailElements.dequeHeader`); any other buffer does not record how many are
        /// initialized (its header, whose meaning the subclass chooses, may), so every slot that
        /// fits in the malloc block is read by the element's type: a slot never written, or one
        /// deinitialized, reads what was there before (when in doubt, reachable).
        var tailElements: TailElements? = nil
        /// The size of a box's value (0: unknown).
        var boxedSize: Int = 0
        /// How a box's value is read when its layout is known; nil: every word of it.
        var boxedShape: ValueShape? = nil
        /// The class descends from XCTest's `XCTestCase`: XCTest keeps each such object until
        /// the run ends, so what it holds outlives its test.
        var isTestCase = false
        /// A stored property is `Unmanaged` or a raw pointer (`Ownership.opaque`), or the
        /// collection's elements are POD values that may be (`TypeSummary.holds`).
        var hasOpaqueFields = false
        /// An error box (`swift_allocError`), whose value's type each box names: read by
        /// `errorBoxValue(at:)`.
        var isErrorBox = false
    }

    /// A `ManagedBuffer`'s elements, allocated past its header.
    struct TailElements {
        var element: TypeSummary
        /// Where the first slot starts in the object.
        var start: Int
        /// Where a deque's header lies in the object, when the buffer is a ring of slots
        /// (`_DequeBufferHeader`: its capacity, its count and its first slot, one word each, as the
        /// concurrency library's deque and swift-collections' `Deque` keep them): then only its
        /// `count` slots from its first slot on, round the ring, hold elements; the others hold
        /// the stale bytes of elements removed, which would name false holders.
        var dequeHeader: Int? = nil
    }

    struct Field {
        var offset: Int
        var name: String
        var ownership: Ownership
        /// The enum's context descriptor, when the property's type is an enum (or an optional
        /// one) of this or another image: its cases name a payload on the path.
        var enumDescriptor: UInt64? = nil
        /// The declared type is a Swift closure (or an optional one): its code, then its context.
        var isFunction = false
        /// How the property's value is read when its layout is known (a struct field by field,
        /// a multi-payload enum by its case, an existential by the type it holds); nil: every
        /// word of it.
        var shape: ValueShape? = nil
        /// The size the value was lowered to (0: not lowered), which must fit in its place.
        var shapeSize = 0
        /// Declared `var` (or unreadable): a `let` is never stored again once its object is made.
        var isVar = true
    }

    /// How a stored property holds what it points to.
    enum Ownership {
        case strong
        /// weak, unowned, unowned(unsafe), or a type that holds no reference at all (Bool, an
        /// integer, Date, a C function pointer, a struct or enum of such): never keeps an object
        /// alive, whatever its words read as.
        case notOwning
        /// `Unmanaged`, a raw or opaque pointer: holds no reference by its type, but may carry a
        /// retained one (`Unmanaged.passRetained(x).toOpaque()`). Never on a path while a strong
        /// one reaches the object; read last, with untyped memory, so that such an object is
        /// never called unreachable.
        case opaque
    }

    enum Collection {
        /// _ContiguousArrayStorage<Element>: `count` elements from offset 32.
        case array(element: TypeSummary)
        /// _DictionaryStorage<Key, Value> (or _SetStorage, `value` nil).
        case hashed(key: TypeSummary, value: TypeSummary?)
    }

    /// What a collection needs to know of a generic argument.
    struct TypeSummary {
        var name: String
        var stride: Int
        var isString: Bool
        var isInteger: Bool
        /// The enum's context descriptor, when the argument is an enum.
        var enumDescriptor: UInt64? = nil
        /// What a value's words may hold: `.strong`, any word may be a reference; `.opaque`, no
        /// strong reference (its value witnesses say it is POD: copied without a retain) but
        /// perhaps an `Unmanaged` or raw pointer, read with untyped memory; `.notOwning`, nothing
        /// (its fields are known and are plain values: integers, `Bool`, floating point), so
        /// neither its bits nor its padding are ever read.
        var holds: Ownership = .strong
        /// The type is an opaque existential (`any P` of protocols not bound to classes): a
        /// three-word buffer, then the dynamic type's metadata and witness tables.
        var isOpaqueExistential = false
        /// How a value is read when its layout is known (a struct field by field, a multi-payload
        /// enum by its case); nil: every word of it.
        var shape: ValueShape? = nil
    }

    /// Types read so far, by metadata address: an index into `typeTable`, or -1 for metadata that
    /// is not an object's.
    private var typeIndexes: [UInt64: Int32] = [:]
    private(set) var typeTable: [ObjectType] = []
    private var descriptorNames: [UInt64: String?] = [:]
    /// What a value of a mangled type can hold, by the name's address (`referenceKind`).
    private var holdsReference: [UInt64: Ownership] = [:]
    /// The loaded images' `swift5_mpenum` sections, where multi-payload enums keep their tags.
    var multiPayloadEnumSections: [Range<UInt64>] = []
    /// Each multi-payload enum's record in those sections, by the enum's context descriptor.
    var multiPayloadEnumRecords: [UInt64: UInt64]? = nil
    /// The loaded images' `swift5_builtin` sections, and each record's size and alignment there
    /// by its type's context descriptor.
    var builtinTypeSections: [Range<UInt64>] = []
    var builtinTypeLayouts: [UInt64: (size: Int, alignment: Int)]? = nil
    /// How values are read (ValueShapes.swift), by an enum's descriptor and by a type's metadata.
    var enumShapes: [UInt64: ValueShape?] = [:]
    var valueShapes: [UInt64: ValueShape?] = [:]
    /// Error boxes' values' types, by their metadata (nil: not readable).
    var errorValueTypes: [UInt64: TypeSummary?] = [:]
    /// How deep `shape(ofValueMetadata:)` is in generic arguments' metadata.
    var valueShapeDepth = 0
    /// Layouts lowered from mangled names (TypeLowering.swift), by the name's address and by a
    /// struct's or enum's descriptor, for types without generic arguments.
    var mangledLayouts: [UInt64: ValueLayout?] = [:]
    var descriptorLayouts: [UInt64: ValueLayout?] = [:]
    /// The types without generic arguments being lowered, and how many lowerings met one of
    /// them inside itself (a type that holds itself only through a box or a phantom argument:
    /// `JSONSchema`'s `JSONReference<JSONSchema>`); an answer cut so is not kept.
    var loweringInProgress: Set<UInt64> = []
    var loweringCuts = 0

    init(memory: SnapshotMemory) {
        self.memory = memory
    }

    // MARK: - Objects

    /// Bits of a native reference that carry no address: Swift's spare bits on x86_64 and
    /// aarch64 (multi-payload enums keep their tags there).
    static let pointerMask: UInt64 = 0x0FFF_FFFF_FFFF_FFF8

    /// The type of the live object at `address`, or nil when no live object starts there.
    func objectType(at address: UInt64) -> ObjectType? {
        objectTypeIndex(at: address).map { typeTable[Int($0)] }
    }

    /// The index in `typeTable` of the type of the live object at `address`, or nil when no live
    /// object starts there.
    func objectTypeIndex(at address: UInt64) -> Int32? {
        guard address & 7 == 0, address > 0xFFFF, memory.isWritable(address),
            let metadata = memory.word(address), metadata & 7 == 0, metadata > 0xFFFF,
            let refCounts = memory.word(address &+ 8), refCountsAreLive(refCounts, object: address)
        else { return nil }
        if let cached = typeIndexes[metadata] { return cached >= 0 ? cached : nil }
        guard let type = readType(metadata: metadata) else {
            typeIndexes[metadata] = -1
            return nil
        }
        let index = Int32(typeTable.count)
        typeTable.append(type)
        typeIndexes[metadata] = index
        return index
    }

    /// A live object's reference counts: not deinitializing, an unowned count of at least one,
    /// and a side table (when there is one) that points back at the object.
    private func refCountsAreLive(_ bits: UInt64, object: UInt64) -> Bool {
        if Self.isImmortal(refCounts: bits) { return true }
        if let sideTable = Self.sideTable(refCounts: bits) { return memory.word(sideTable) == object }
        let isDeiniting = bits & (1 << 32) != 0
        let unowned = (bits >> 1) & 0x7FFF_FFFF
        return !isDeiniting && unowned >= 1
    }

    /// Whether an object's reference-count word (RefCount.h, 64-bit) marks it immortal.
    static func isImmortal(refCounts bits: UInt64) -> Bool {
        bits == UInt64.max || bits & 0x7FFF_FFFF_FFFF_FFFF == 0x7FFF_FFFF_FFFF_FFFF
    }

    /// The side table an object's reference-count word names when its counts live there
    /// (UseSlowRC: the rest of the word is the table's address, shifted right by 3); nil when
    /// they are inline.
    static func sideTable(refCounts bits: UInt64) -> UInt64? {
        bits & (1 << 63) != 0 ? (bits << 3) & pointerMask : nil
    }

    private func readType(metadata: UInt64) -> ObjectType? {
        guard let kind = memory.word(metadata) else { return nil }
        switch kind {
        case 0: return readClass(metadata: metadata)
        case 0x400: return readClosureContext(metadata: metadata)
        case 0x500: return readBox(metadata: metadata)
        case 0x501:
            var type = ObjectType(kind: .other, name: "Swift.Error box", instanceSize: 0, fields: [])
            type.isErrorBox = true
            return type
        case 0x502: return ObjectType(kind: .task, name: "async task", instanceSize: 0, fields: [])
        case 0x503: return ObjectType(kind: .other, name: "job", instanceSize: 0, fields: [])
        default: return nil
        }
    }

    // MARK: - Classes

    private struct ClassDescriptor {
        var address: UInt64
        var flags: UInt32
        var name: String
        var fieldDescriptor: UInt64?
        var numFields: Int
        var fieldOffsetVectorOffset: Int
        var isGeneric: Bool
        var hasResilientSuperclass: Bool
        var metadataPositiveSize: Int
        var numImmediateMembers: Int
        var resilientBounds: UInt64?
    }

    /// Class metadata (no Objective-C interop): kind, superclass, flags, instance address point,
    /// instance size, alignment mask, class size, class address point, description, ivar
    /// destroyer, then the class's members.
    private func classDescriptor(ofMetadata metadata: UInt64) -> ClassDescriptor? {
        guard let description = memory.word(metadata &+ 40), description & 3 == 0,
            let flags = memory.uint32(description), flags & 0x1F == 16
        else { return nil }
        let kindFlags = flags >> 16
        return ClassDescriptor(
            address: description, flags: flags, name: memory.relative(description &+ 8).flatMap { memory.cString($0) } ?? "",
            fieldDescriptor: memory.relative(description &+ 16),
            numFields: Int(memory.uint32(description &+ 36) ?? 0),
            fieldOffsetVectorOffset: Int(memory.uint32(description &+ 40) ?? 0),
            isGeneric: flags & 0x80 != 0,
            hasResilientSuperclass: kindFlags & (1 << 13) != 0,
            metadataPositiveSize: Int(memory.uint32(description &+ 28) ?? 0),
            numImmediateMembers: Int(memory.uint32(description &+ 32) ?? 0),
            resilientBounds: memory.relative(description &+ 24))
    }

    /// Where a class's immediate members (field offsets, generic arguments) start, in words from
    /// the metadata's address point.
    private func immediateMembersStart(_ descriptor: ClassDescriptor) -> Int? {
        if descriptor.hasResilientSuperclass {
            guard let bounds = descriptor.resilientBounds, let offset = memory.word(bounds) else { return nil }
            return Int(truncatingIfNeeded: Int64(bitPattern: offset)) / 8
        }
        return descriptor.metadataPositiveSize - descriptor.numImmediateMembers
    }

    private func readClass(metadata: UInt64) -> ObjectType? {
        guard let descriptor = classDescriptor(ofMetadata: metadata),
            let sizes = memory.word(metadata &+ 24)
        else { return nil }
        let instanceSize = Int(sizes & 0xFFFF_FFFF)
        guard instanceSize >= 16, instanceSize < 1 << 24 else { return nil }
        var fields: [Field] = []
        var isTestCase = false
        var tailElements: TailElements? = nil
        var current: UInt64? = metadata
        var depth = 0
        while let classMetadata = current, depth < 32, let classDescriptor = self.classDescriptor(ofMetadata: classMetadata) {
            let properties = storedProperties(of: classDescriptor, metadata: classMetadata)
            fields += properties
            if tailElements == nil, classDescriptor.isGeneric, classDescriptor.name == "ManagedBuffer",
                isStandardLibrary(classDescriptor)
            {
                tailElements = managedBufferElements(
                    classMetadata: classMetadata, descriptor: classDescriptor, instanceSize: instanceSize,
                    header: properties.first { $0.name == "header" }?.offset)
            }
            // By the harness's class itself, never by the name of a test's class.
            if depth > 0, !classDescriptor.isGeneric, classDescriptor.name == "XCTestCase",
                qualifiedName(descriptor: classDescriptor.address) == "XCTest.XCTestCase"
            {
                isTestCase = true
            }
            current = memory.word(classMetadata &+ 8).flatMap { $0 == 0 ? nil : $0 }
            depth += 1
        }
        fields.sort { $0.offset < $1.offset }
        // A property lowered larger than its place (up to the next property, or the instance's
        // end) was lowered wrongly: read it word by word.
        for index in fields.indices where fields[index].shapeSize > 0 {
            let end = index + 1 < fields.count ? fields[index + 1].offset : instanceSize
            if fields[index].offset + fields[index].shapeSize > end { fields[index].shape = nil }
        }
        let name = typeName(classMetadata: metadata, descriptor: descriptor)
        var type = ObjectType(kind: .classInstance, name: name, instanceSize: instanceSize, fields: fields)
        type.isTestCase = isTestCase
        type.hasOpaqueFields = fields.contains { $0.ownership == .opaque } || tailElements?.element.holds == .opaque
        type.tailElements = tailElements
        type.collection = collection(of: descriptor, metadata: metadata)
        // A collection's storage is named as the collection it stores.
        switch type.collection {
        case .array(let element)?:
            type.name = "[\(element.name)]"
            type.hasOpaqueFields = type.hasOpaqueFields || element.holds == .opaque
        case .hashed(let key, let value)?:
            type.name = value.map { "[\(key.name): \($0.name)]" } ?? "Set<\(key.name)>"
            type.hasOpaqueFields = type.hasOpaqueFields || key.holds == .opaque || value?.holds == .opaque
        case nil: break
        }
        return type
    }

    /// The stored properties a class declares itself, with their offsets from its metadata's field
    /// offset vector.
    private func storedProperties(of descriptor: ClassDescriptor, metadata: UInt64) -> [Field] {
        guard descriptor.numFields > 0, descriptor.numFields < 4096, let fieldDescriptor = descriptor.fieldDescriptor,
            let start = immediateMembersStart(descriptor)
        else { return [] }
        let vector =
            descriptor.hasResilientSuperclass
            ? metadata &+ UInt64(bitPattern: Int64((start &+ descriptor.fieldOffsetVectorOffset) &* 8))
            : metadata &+ UInt64(descriptor.fieldOffsetVectorOffset * 8)
        let records = fieldRecords(fieldDescriptor)
        // The class's generic arguments, for properties of a generic parameter's type.
        var arguments: [ValueLayout] = []
        if descriptor.isGeneric {
            for argument in genericArguments(classMetadata: metadata, descriptor: descriptor) {
                guard let layout = layout(ofMetadata: argument) else {
                    arguments = []
                    break
                }
                arguments.append(layout)
            }
        }
        var fields: [Field] = []
        for (index, record) in records.enumerated() where index < descriptor.numFields {
            guard let offset = memory.word(vector &+ UInt64(index * 8)), offset < 1 << 24 else { continue }
            var owning = ownership(ofMangledType: record.type)
            if owning == .strong { owning = referenceKind(ofMangledType: record.type) }
            var text = mangledCharacters(record.type) ?? ""
            while text.hasSuffix("Sg") { text.removeLast(2) }
            let enumDescriptor = enumDescriptor(ofMangledType: record.type)
            var field = Field(
                offset: Int(offset), name: record.name, ownership: owning, enumDescriptor: enumDescriptor,
                isFunction: text.hasSuffix("c"), shape: enumDescriptor.flatMap { shape(ofEnum: $0, depth: 0) },
                isVar: record.isVar)
            // A struct, tuple, enum or existential value, by its layout.
            if field.shape == nil, owning == .strong, let lowered = layout(ofMangledType: record.type, arguments: arguments) {
                switch lowered.shape {
                case .fields, .cases, .taggedCases, .existential, .nothing, .unlessInhabitant:
                    field.shape = lowered.shape
                    field.shapeSize = lowered.size
                case .words, .prefix:
                    break
                }
            }
            fields.append(field)
        }
        return fields
    }

    /// A field descriptor's records: (name, mangled type name address, whether it is a `var`:
    /// its flags' `IsVar`, which a `let` lacks).
    func fieldRecords(_ descriptor: UInt64) -> [(name: String, type: UInt64?, isVar: Bool)] {
        guard let sizes = memory.uint32(descriptor &+ 8), let count = memory.uint32(descriptor &+ 12), count < 4096
        else { return [] }
        let recordSize = UInt64(sizes >> 16)
        guard recordSize >= 12 else { return [] }
        return (0..<UInt64(count)).map { index in
            let record = descriptor &+ 16 &+ index &* recordSize
            let name = memory.relative(record &+ 8).flatMap { memory.cString($0) } ?? "field \(index)"
            // Unreadable flags read as a `var`: nothing is taken to be constant that is not.
            let isVar = memory.uint32(record).map { $0 & 0x2 != 0 } ?? true
            return (name, memory.relative(record &+ 4), isVar)
        }
    }

    /// Whether a stored property or capture of the mangled type at `address` owns what it points
    /// to. The mangled name may hold symbolic references (a byte 1...0x17 and 4 bytes, or
    /// 0x18...0x1F and 8): only its own characters are read.
    func ownership(ofMangledType address: UInt64?) -> Ownership {
        guard let characters = mangledCharacters(address) else { return .strong }
        var text = characters
        // An optional's suffix does not change the ownership of what it wraps.
        if text.hasSuffix("Sg") { text.removeLast(2) }
        if text.hasSuffix("Xw") || text.hasSuffix("Xo") || text.hasSuffix("Xu") { return .notOwning }
        for prefix in ["s9UnmanagedV", "Sp", "SP", "Sv", "SV", "s13OpaquePointerV"] where text.hasPrefix(prefix) {
            return .opaque
        }
        return .strong
    }

    /// What a value of the mangled type at `address` can hold: `.notOwning` for one of the
    /// standard library's plain values (Bool, integers, floating point), a C or thin function
    /// pointer (code only), a weak or unowned reference, and a struct or enum named by its
    /// descriptor whose fields or payloads all hold nothing; `.opaque` for an `Unmanaged` or raw
    /// pointer, or such a struct or enum that holds one and nothing strong; `.strong` for anything
    /// not known to hold less (a class, an existential, a closure, a generic parameter, a type
    /// without reflection records). An optional holds what its wrapped type holds.
    func referenceKind(ofMangledType address: UInt64?, depth: Int = 0) -> Ownership {
        guard let address, depth < 8 else { return .strong }
        if let known = holdsReference[address] { return known }
        // A type that refers to itself (an indirect enum) can hold a reference.
        holdsReference[address] = .strong
        let answer = computeReferenceKind(address, depth: depth)
        holdsReference[address] = answer
        return answer
    }

    /// The standard library's plain values, as mangled: Bool, Int, UInt, Double, Float and the
    /// sized integers and floats.
    private static let plainStandardTypes: Set<String> = [
        "Sb", "Si", "Su", "Sd", "Sf", "s4Int8V", "s5Int16V", "s5Int32V", "s5Int64V", "s5UInt8V", "s6UInt16V", "s6UInt32V",
        "s6UInt64V", "s7Float16V", "s7Float80V", "SO",
    ]

    private func computeReferenceKind(_ address: UInt64, depth: Int) -> Ownership {
        let own = ownership(ofMangledType: address)
        guard own == .strong, var text = mangledCharacters(address) else {
            // An `unowned(unsafe)` reference inside a value may be a retained one: `Unmanaged`
            // keeps its object so (`_value`), and an array of them holds what they point at.
            var text = mangledCharacters(address) ?? ""
            if text.hasSuffix("Sg") { text.removeLast(2) }
            return text.hasSuffix("Xu") ? .opaque : own
        }
        while text.hasSuffix("Sg") { text.removeLast(2) }
        if Self.plainStandardTypes.contains(text) || Self.isBuiltinNumber(text) { return .notOwning }
        if text.hasSuffix("XC") || text.hasSuffix("Xf") { return .notOwning }
        if Self.isPlainTuple(text) { return .notOwning }
        // A nominal type by its descriptor: a struct by its fields, an enum by its payloads.
        guard text == "#", let descriptor = symbolicReference(at: address) else { return .strong }
        return referenceKind(ofValueDescriptor: descriptor, depth: depth)
    }

    /// The standard library's types that hold no reference, as the demangler names them: those of
    /// `plainStandardTypes` (`Swift.Int`, `Swift.ObjectIdentifier` …), `Unicode.Scalar` and `()`.
    private static let plainDemangledTypes: Set<String> = Set(
        plainStandardTypes.compactMap { demangleSwiftSymbol("$s" + $0 + "D") } + ["Swift.Unicode.Scalar", "()"])

    /// Whether a mangled tuple type (an enum case's labelled payload, `case constant(index:
    /// UInt32)`, is one: `s6UInt32V5index_t`) names only types that hold no reference. Labels may be
    /// spelt with word substitutions and element types with substitutions of earlier ones, so the
    /// name is read by the runtime's demangler, never by hand; a name it cannot read, or with a
    /// symbolic reference (`#`), is not known plain.
    private static func isPlainTuple(_ text: String) -> Bool {
        guard text.hasSuffix("t"), text.utf8.count <= 160,
            text.utf8.allSatisfy({
                $0 == UInt8(ascii: "_") || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
            }),
            let demangled = demangleSwiftSymbol("$s" + text + "D"), demangled.first == "("
        else { return false }
        return isPlainDemangledType(Substring(demangled))
    }

    /// A demangled type: a tuple of plain elements (each `label: Type` or `Type`), or a plain type,
    /// optional or not.
    private static func isPlainDemangledType(_ type: Substring) -> Bool {
        var type = type
        while type.hasSuffix("?") { type = type.dropLast() }
        guard type.first == "(", type.last == ")" else { return plainDemangledTypes.contains(String(type)) }
        let inside = type.dropFirst().dropLast()
        if inside.isEmpty { return true }
        // Elements are separated by ", " outside brackets.
        var elements: [Substring] = []
        var depth = 0
        var start = inside.startIndex
        var index = inside.startIndex
        while index < inside.endIndex {
            switch inside[index] {
            case "(", "[", "<": depth += 1
            case ")", "]", ">": depth -= 1
            case "," where depth == 0:
                elements.append(inside[start..<index])
                start = inside.index(after: index)
            default: break
            }
            index = inside.index(after: index)
        }
        elements.append(inside[start...])
        return elements.allSatisfy { element in
            var element = element.drop { $0 == " " }
            // A label: an identifier, then ": ".
            if let colon = element.firstRange(of: ": "),
                element[..<colon.lowerBound].allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" })
            {
                element = element[colon.upperBound...]
            }
            return isPlainDemangledType(element)
        }
    }

    /// Builtin integers and floats (`Bi64_`, `Bf64_`, `Bw`): the stored values of the standard
    /// library's numbers and `Bool`.
    private static func isBuiltinNumber(_ text: String) -> Bool {
        if text == "Bw" { return true }
        guard text.count > 3, text.hasPrefix("Bi") || text.hasPrefix("Bf"), text.hasSuffix("_") else { return false }
        return text.dropFirst(2).dropLast().allSatisfy(\.isNumber)
    }

    /// What a struct's fields or an enum's payloads (the context descriptor at `descriptor`) can
    /// hold, the most any of them can; `.strong` for any other descriptor.
    private func referenceKind(ofValueDescriptor descriptor: UInt64, depth: Int) -> Ownership {
        guard let flags = memory.uint32(descriptor) else { return .strong }
        let kind = flags & 0x1F
        guard kind == 17 || kind == 18, let fields = memory.relative(descriptor &+ 16) else { return .strong }
        var most = Ownership.notOwning
        // An enum's cases without payload have no type; a struct's records all have one.
        for record in fieldRecords(fields) {
            guard let type = record.type else {
                if kind == 17 { return .strong }
                continue
            }
            switch referenceKind(ofMangledType: type, depth: depth + 1) {
            case .strong: return .strong
            case .opaque: most = .opaque
            case .notOwning: break
            }
        }
        return most
    }

    /// A mangled name's characters, each symbolic reference replaced by `#`.
    func mangledCharacters(_ address: UInt64?) -> String? {
        guard let address else { return nil }
        var result: [UInt8] = []
        var position = address
        while result.count < 512, let byte = memory.byte(position), byte != 0 {
            switch byte {
            case 0x01...0x17:
                result.append(UInt8(ascii: "#"))
                position &+= 5
            case 0x18...0x1F:
                result.append(UInt8(ascii: "#"))
                position &+= 9
            default:
                result.append(byte)
                position &+= 1
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    // MARK: - Enums

    /// The context descriptor a mangled type name refers to directly (a symbolic reference, then
    /// nothing or an optional's `Sg`), when it is an enum's.
    func enumDescriptor(ofMangledType address: UInt64?) -> UInt64? {
        guard let address else { return nil }
        let rest = [memory.byte(address &+ 5), memory.byte(address &+ 6), memory.byte(address &+ 7)]
        guard rest[0] == 0 || (rest[0] == UInt8(ascii: "S") && rest[1] == UInt8(ascii: "g") && rest[2] == 0),
            let descriptor = symbolicReference(at: address), let flags = memory.uint32(descriptor), flags & 0x1F == 18
        else { return nil }
        return descriptor
    }

    /// The context descriptor that the symbolic reference at `address` refers to: 1 then a
    /// relative pointer to the descriptor, or 2 then a relative pointer to a word holding it.
    func symbolicReference(at address: UInt64) -> UInt64? {
        guard let marker = memory.byte(address), marker == 1 || marker == 2, let target = memory.relative(address &+ 1)
        else { return nil }
        return marker == 1 ? target : memory.word(target)
    }

    /// The case of the enum described at `descriptor` whose payload is the class of `object` (or
    /// one of its superclasses): `(enum's name, case name)`; nil when no case, or more than one,
    /// has that class as its whole payload.
    func payloadCase(ofEnum descriptor: UInt64, holding object: UInt64) -> (type: String, name: String)? {
        var classes: Set<UInt64> = []
        var metadata = memory.word(object)
        // Counted by steps, not classes: a superclass chain can lead back to a class already seen.
        var depth = 0
        while let current = metadata, current != 0, depth < 32, memory.word(current) == 0,
            let description = memory.word(current &+ 40)
        {
            classes.insert(description)
            metadata = memory.word(current &+ 8)
            depth += 1
        }
        guard let fields = memory.relative(descriptor &+ 16) else { return nil }
        var matches: [String] = []
        for record in fieldRecords(fields) {
            guard let mangled = record.type, memory.byte(mangled &+ 5) == 0, let payload = symbolicReference(at: mangled)
            else { continue }
            if classes.contains(payload) { matches.append(record.name) }
        }
        guard matches.count == 1 else { return nil }
        return (qualifiedName(descriptor: descriptor), matches[0])
    }

    // MARK: - Closure contexts and boxes

    /// HeapLocalVariable metadata: kind, offset to the first capture (32 bits), capture
    /// descriptor (NumCaptureTypes, NumMetadataSources, NumBindings, then one mangled type per
    /// capture).
    private func readClosureContext(metadata: UInt64) -> ObjectType? {
        guard let offset = memory.uint32(metadata &+ 8), offset >= 16, offset < 4096 else { return nil }
        var type = ObjectType(kind: .closureContext, name: "closure context", instanceSize: 0, fields: [])
        type.firstCapture = Int(offset)
        guard let descriptor = memory.word(metadata &+ 16), descriptor != 0,
            let count = memory.uint32(descriptor), count < 1024, let bindings = memory.uint32(descriptor &+ 8)
        else { return type }
        // Captures are laid out in order, each 8-byte aligned here: a reference or a plain
        // 64-bit integer takes 8 bytes, a Swift closure 16 (its code, then its context). Past the
        // first capture of another size (an existential, a struct), places are unknown, and a
        // non-owning capture there cannot be told apart: its word is read as any other, so that
        // what it points at is held rather than lost (when in doubt, reachable).
        var position = Int(offset)
        var placesKnown = true
        for index in 0..<UInt64(count) {
            let mangled = memory.relative(descriptor &+ 12 &+ index &* 4)
            // An `Unmanaged` or raw-pointer capture (opaque) is read as a strong one.
            let holdsNothing = ownership(ofMangledType: mangled) == .notOwning
            let size = captureSize(ofMangledType: mangled)
            if holdsNothing && placesKnown && size == 8 {
                type.captureExclusions.append(position..<position + 8)
            }
            if placesKnown, let size { position += size } else { placesKnown = false }
        }
        // The chunk's bytes past the last capture are malloc's slack, which keeps whatever the
        // chunk's previous object left there: read as captures, a stale word would hold an object
        // nothing holds (a leak missed, a false holder). The generic bindings a context may keep
        // are not among the captures: with any, where the captures end is not known.
        if placesKnown && count > 0 && bindings == 0 { type.capturesEnd = position }
        // Captures of any type (a struct, a tuple: an indirect case's payload), each at its
        // alignment, when every one's layout is known: read by it, never its padding, its
        // unused words nor the chunk's slack.
        if count > 0, count < 64, bindings == 0 {
            var fields: [(offset: Int, shape: ValueShape)] = []
            var end = 0
            for index in 0..<UInt64(count) {
                guard let capture = layout(ofMangledType: memory.relative(descriptor &+ 12 &+ index &* 4)),
                    capture.alignment > 0
                else {
                    fields = []
                    break
                }
                end = (end + capture.alignment - 1) / capture.alignment * capture.alignment
                fields.append((end, capture.shape))
                end += capture.size
            }
            if fields.count == Int(count) {
                type.captureShape = .fields(fields)
                type.capturesEnd = type.firstCapture + end
            }
        }
        return type
    }

    /// The bytes a closure capture of the mangled type at `address` takes, when known without
    /// its metadata: a reference (strong, weak, unowned, possibly optional; a symbolic reference
    /// only when it names a class) 8, a plain 64-bit integer or `Double` 8, a Swift closure 16.
    func captureSize(ofMangledType address: UInt64?) -> Int? {
        guard let address, var text = mangledCharacters(address) else { return nil }
        if ["Si", "Su", "Sd", "s5Int64V", "s6UInt64V"].contains(text) { return 8 }
        if text.hasSuffix("Xw") || text.hasSuffix("Xo") || text.hasSuffix("Xu") { return 8 }
        if text.hasSuffix("Sg") { text.removeLast(2) }
        if text == "Bb" || text == "Bo" || (text.hasSuffix("C") && !text.contains("#")) { return 8 }
        if text == "#" {
            // A class's context descriptor (kind 16); a struct or enum has a size of its own.
            guard let descriptor = symbolicReference(at: address), let flags = memory.uint32(descriptor), flags & 0x1F == 16
            else { return nil }
            return 8
        }
        // A thick function type (`yyc`, async `YAc`); a C or thin one ends otherwise (`XC`, `Xf`).
        if text.hasSuffix("c") { return 16 }
        if isThickImplFunction(text) { return 16 }
        return nil
    }

    /// Whether `text` ends with the mangling of a SIL function type that a closure context
    /// captures a Swift closure as (`SiIegd_`, `ytIeghHr_`): `I`, optionally `e` (escaping), a
    /// thick callee convention (`g` guaranteed, `x` owned, `y` unowned), then parameter and
    /// result conventions and `h` (sendable) or `H` (async) only, and `_`. A thin function (`t`),
    /// a C function or block, a method or a witness (an upper-case representation) is not one.
    private func isThickImplFunction(_ text: String) -> Bool {
        guard text.hasSuffix("_"), let marker = text.lastIndex(of: "I") else { return false }
        var attributes = text[text.index(after: marker)...].dropLast()
        if attributes.first == "e" { attributes = attributes.dropFirst() }
        guard let callee = attributes.first, "gxy".contains(callee) else { return false }
        return attributes.allSatisfy { ("a"..."z").contains($0) || $0 == "H" }
    }

    /// HeapGenericLocalVariable (a box): kind, value offset (32 bits), boxed type's metadata.
    private func readBox(metadata: UInt64) -> ObjectType? {
        guard let offset = memory.uint32(metadata &+ 8), offset >= 16, offset < 4096 else { return nil }
        var type = ObjectType(kind: .box, name: "captured variable", instanceSize: 0, fields: [])
        type.firstCapture = Int(offset)
        if let boxed = memory.word(metadata &+ 16), let summary = summary(ofTypeMetadata: boxed) {
            type.name = "captured \(summary.name)"
            type.boxedSize = summary.stride
            type.boxedShape = summary.shape
        }
        return type
    }

    // MARK: - Collections

    private func collection(of descriptor: ClassDescriptor, metadata: UInt64) -> Collection? {
        guard descriptor.isGeneric, isStandardLibrary(descriptor) else { return nil }
        let arguments = genericArguments(classMetadata: metadata, descriptor: descriptor)
        switch descriptor.name {
        case "_ContiguousArrayStorage":
            guard let element = arguments.first, let summary = summary(ofTypeMetadata: element) else { return nil }
            return .array(element: summary)
        case "_DictionaryStorage":
            guard arguments.count >= 2, let key = summary(ofTypeMetadata: arguments[0]),
                let value = summary(ofTypeMetadata: arguments[1])
            else { return nil }
            return .hashed(key: key, value: value)
        case "_SetStorage":
            guard let element = arguments.first, let summary = summary(ofTypeMetadata: element) else { return nil }
            return .hashed(key: summary, value: nil)
        default:
            return nil
        }
    }

    /// The element type of a `ManagedBuffer<Header, Element>` (its second generic argument) and
    /// where its elements start: past the instance (the header, the last stored property; a
    /// subclass may add none), at the element's alignment, as `ManagedBuffer` places them. The
    /// standard library's own buffers are such subclasses (the concurrency library's deque, which
    /// keeps an `AsyncStream`'s elements not yet consumed), and so are other packages' deques and
    /// ring buffers: what only their elements hold would otherwise read as retained by nothing.
    /// A header of type `_DequeBufferHeader` (at `header`, the offset of `ManagedBuffer`'s
    /// `header` property) marks a deque's ring of slots (`TailElements.dequeHeader`).
    private func managedBufferElements(
        classMetadata: UInt64, descriptor: ClassDescriptor, instanceSize: Int, header: Int?
    ) -> TailElements? {
        let arguments = genericArguments(classMetadata: classMetadata, descriptor: descriptor)
        guard arguments.count == 2, let valueWitnesses = memory.word(arguments[1] &- 8),
            let flags = memory.uint32(valueWitnesses &+ 80), let element = summary(ofTypeMetadata: arguments[1]),
            element.stride > 0
        else { return nil }
        let alignment = Int(flags & 0xFF) + 1
        var elements = TailElements(element: element, start: (instanceSize + alignment - 1) / alignment * alignment)
        if let header, let headerType = summary(ofTypeMetadata: arguments[0]), headerType.stride == 24,
            headerType.name == "_DequeBufferHeader" || headerType.name.hasSuffix("._DequeBufferHeader")
        {
            elements.dequeHeader = header
        }
        return elements
    }

    private func isStandardLibrary(_ descriptor: ClassDescriptor) -> Bool {
        guard let parent = memory.relativeIndirectable(descriptor.address &+ 4),
            let flags = memory.uint32(parent), flags & 0x1F == 0
        else { return false }
        return memory.relative(parent &+ 8).flatMap { memory.cString($0) } == "Swift"
    }

    /// The type arguments of a generic class's metadata (witness tables left out).
    private func genericArguments(classMetadata metadata: UInt64, descriptor: ClassDescriptor) -> [UInt64] {
        guard descriptor.isGeneric, let start = immediateMembersStart(descriptor) else { return [] }
        // The generic header follows the 44 bytes of a class descriptor's own fields.
        let header = descriptor.address &+ 44
        guard let parameterCount = memory.uint16(header &+ 8), parameterCount < 64 else { return [] }
        var arguments: [UInt64] = []
        var slot = 0
        for index in 0..<UInt64(parameterCount) {
            guard let parameter = memory.byte(header &+ 16 &+ index) else { break }
            guard parameter & 0x80 != 0 else { continue }  // no key argument
            if let argument = memory.word(metadata &+ UInt64(bitPattern: Int64((start &+ slot) &* 8))) {
                arguments.append(argument)
            }
            slot += 1
        }
        return arguments
    }

    /// A type's name, stride and whether it is a String or an integer, from its metadata.
    func summary(ofTypeMetadata metadata: UInt64) -> TypeSummary? {
        guard let valueWitnesses = memory.word(metadata &- 8), let stride = memory.word(valueWitnesses &+ 72),
            stride < 1 << 20
        else { return nil }
        let name = typeName(metadata: metadata, depth: 0)
        let isEnum = memory.word(metadata) == 0x201
        return TypeSummary(
            name: name, stride: Int(stride), isString: name == "Swift.String",
            isInteger: ["Swift.Int", "Swift.UInt", "Swift.Int64", "Swift.Int32", "Swift.UInt64", "Swift.UInt32"].contains(name),
            enumDescriptor: isEnum ? memory.word(metadata &+ 8) : nil,
            holds: referenceKind(ofValueMetadata: metadata, valueWitnesses: valueWitnesses),
            isOpaqueExistential: isOpaqueExistential(metadata: metadata) && stride >= 32,
            shape: shape(ofValueMetadata: metadata))
    }

    /// Whether the metadata is an opaque existential's: kind 0x303, flags not class-bound (bit
    /// 31) and no special protocol (bits 24...29: `any Error` is one reference to a box).
    func isOpaqueExistential(metadata: UInt64) -> Bool {
        guard memory.word(metadata) == 0x303, let flags = memory.uint32(metadata &+ 8) else { return false }
        return flags & 0x8000_0000 != 0 && (flags >> 24) & 0x3F == 0
    }

    /// The value in the error box at `address` (`swift_allocError`, without Objective-C: the heap
    /// object's header, the value's type and its `Error` witness table, then the value at the next
    /// multiple of its alignment): where it starts, its size and what its type holds. Nil when
    /// its type cannot be read. Past its size lie its padding and malloc's slack, stale bytes (a
    /// static `any Error` of a case without payload, swift-nio's `ChannelError._outputClosed`).
    func errorBoxValue(at address: UInt64) -> (offset: Int, size: Int, type: TypeSummary)? {
        guard let metadata = memory.word(address &+ 16), metadata & 7 == 0, metadata > 0xFFFF,
            let valueWitnesses = memory.word(metadata &- 8), let flags = memory.uint32(valueWitnesses &+ 80),
            let size = valueSize(metadata)
        else { return nil }
        let type: TypeSummary?
        if let known = errorValueTypes[metadata] {
            type = known
        } else {
            type = summary(ofTypeMetadata: metadata)
            errorValueTypes[metadata] = .some(type)
        }
        guard let type else { return nil }
        let alignMask = Int(flags & 0xFF)
        return ((32 + alignMask) & ~alignMask, size, type)
    }

    /// `ValueWitnessFlags.IsNonInline`: a value too large for an existential's buffer, kept in a
    /// box the buffer's first word points at.
    static let nonInlineFlag: UInt32 = 0x2_0000

    /// What the opaque existential container at `address` holds, by the metadata of the type in
    /// it (its fourth word): a class instance or a boxed value, one reference in its first word;
    /// a value inline, the words it spans and what its type holds. Nil when that metadata cannot
    /// be read or does not fit (then every word is read).
    func existentialContents(at address: UInt64) -> (words: Int, holds: Ownership)? {
        guard let metadata = memory.word(address &+ 24), metadata & 7 == 0, metadata > 0xFFFF, let kind = memory.word(metadata)
        else { return nil }
        if kind == 0 { return (1, .strong) }
        guard let valueWitnesses = memory.word(metadata &- 8), let size = memory.word(valueWitnesses &+ 64),
            let flags = memory.uint32(valueWitnesses &+ 80)
        else { return nil }
        if flags & Self.nonInlineFlag != 0 { return (1, .strong) }
        guard size <= 24 else { return nil }
        return (Int((size + 7) / 8), referenceKind(ofValueMetadata: metadata, valueWitnesses: valueWitnesses))
    }

    /// `ValueWitnessFlags.IsNonPOD`: the type's copies retain (or otherwise need its witnesses).
    static let nonPODFlag: UInt32 = 0x1_0000

    /// What a value of the type whose metadata is at `metadata` can hold: a POD type (copied bit
    /// for bit, destroyed by doing nothing, so it holds no strong reference) holds nothing when it
    /// is a struct or enum whose fields are known to be plain, else perhaps an `Unmanaged` or raw
    /// pointer (`.opaque`); any other type may hold a reference in any word.
    func referenceKind(ofValueMetadata metadata: UInt64, valueWitnesses: UInt64) -> Ownership {
        guard let flags = memory.uint32(valueWitnesses &+ 80), flags & Self.nonPODFlag == 0, let kind = memory.word(metadata)
        else { return .strong }
        guard kind == 0x200 || kind == 0x201, let descriptor = memory.word(metadata &+ 8),
            referenceKind(ofValueDescriptor: descriptor, depth: 0) == .notOwning
        else { return .opaque }
        return .notOwning
    }

    // MARK: - Names

    /// The name of the type whose metadata is at `metadata`, module-qualified, with generic
    /// arguments.
    /// The most metadata one type's name reads: its generic arguments nest at most 6 deep, but
    /// a target's metadata may name 63 arguments at each level (63⁶ names), so the whole name
    /// has a budget too; what lies past it reads `?`.
    static let typeNameBudget = 256

    func typeName(metadata: UInt64, depth: Int = 0) -> String {
        var budget = Self.typeNameBudget
        return typeName(metadata: metadata, depth: depth, budget: &budget)
    }

    private func typeName(metadata: UInt64, depth: Int, budget: inout Int) -> String {
        budget -= 1
        guard depth < 6, budget >= 0, let kind = memory.word(metadata) else { return "?" }
        switch kind {
        case 0:
            guard let descriptor = classDescriptor(ofMetadata: metadata) else { return "?" }
            return typeName(classMetadata: metadata, descriptor: descriptor, depth: depth, budget: &budget)
        case 0x200, 0x201, 0x202:
            guard let description = memory.word(metadata &+ 8) else { return "?" }
            let base = qualifiedName(descriptor: description)
            guard let flags = memory.uint32(description), flags & 0x80 != 0 else { return base }
            // Struct and enum descriptors have 28 bytes of their own fields before the generic
            // header; their arguments follow the description in the metadata.
            let header = description &+ 28
            guard let parameterCount = memory.uint16(header &+ 8), parameterCount < 16 else { return base }
            var arguments: [String] = []
            var slot: UInt64 = 0
            for index in 0..<UInt64(parameterCount) {
                guard let parameter = memory.byte(header &+ 16 &+ index), parameter & 0x80 != 0 else { continue }
                if let argument = memory.word(metadata &+ 16 &+ slot * 8) {
                    arguments.append(typeName(metadata: argument, depth: depth + 1, budget: &budget))
                }
                slot += 1
            }
            return decorated(base, arguments)
        case 0x301: return "(tuple)"
        case 0x302: return "(function)"
        case 0x303:
            // Existential metadata: kind, flags (bit 31 clear: class-bound), protocol count.
            guard let flags = memory.uint32(metadata &+ 8), let protocols = memory.uint32(metadata &+ 12) else { return "?" }
            if protocols == 0 { return flags & 0x8000_0000 == 0 ? "Swift.AnyObject" : "Any" }
            // The protocols follow the header (and the superclass constraint, when there is one).
            guard protocols < 8 else { return "(existential)" }
            let first = metadata &+ (flags & 0x4000_0000 != 0 ? 24 : 16)
            let names = (0..<UInt64(protocols)).compactMap { index -> String? in
                guard let reference = memory.word(first &+ index &* 8), reference & 1 == 0, reference != 0 else { return nil }
                let name = qualifiedName(descriptor: reference)
                return name == "?" ? nil : name
            }
            return names.count == Int(protocols) ? "any " + names.joined(separator: " & ") : "(existential)"
        default: return "?"
        }
    }

    private func typeName(classMetadata: UInt64, descriptor: ClassDescriptor) -> String {
        var budget = Self.typeNameBudget
        return typeName(classMetadata: classMetadata, descriptor: descriptor, depth: 0, budget: &budget)
    }

    private func typeName(classMetadata: UInt64, descriptor: ClassDescriptor, depth: Int, budget: inout Int) -> String {
        let base = qualifiedName(descriptor: descriptor.address)
        guard descriptor.isGeneric else { return base }
        var arguments: [String] = []
        for argument in genericArguments(classMetadata: classMetadata, descriptor: descriptor) {
            arguments.append(typeName(metadata: argument, depth: depth + 1, budget: &budget))
        }
        return decorated(base, arguments)
    }

    private func decorated(_ base: String, _ arguments: [String]) -> String {
        switch (base, arguments.count) {
        case ("Swift.Optional", 1): return arguments[0] + "?"
        case ("Swift.Array", 1): return "[\(arguments[0])]"
        case ("Swift.Dictionary", 2): return "[\(arguments[0]): \(arguments[1])]"
        case (_, 0): return base
        default: return base + "<" + arguments.joined(separator: ", ") + ">"
        }
    }

    /// `Module.Outer.Name` from a context descriptor and its parents; anonymous contexts (private
    /// declarations) and extensions add nothing.
    func qualifiedName(descriptor: UInt64) -> String {
        if let cached = descriptorNames[descriptor] { return cached ?? "?" }
        var parts: [String] = []
        var current: UInt64? = descriptor
        var depth = 0
        while let context = current, depth < 16, let flags = memory.uint32(context) {
            let kind = flags & 0x1F
            // Modules, protocols (3) and types (16 and up) have names; anonymous contexts and extensions do not.
            if kind == 0 || kind == 3 || kind >= 16, let name = memory.relative(context &+ 8).flatMap({ memory.cString($0) }) {
                parts.append(name)
            }
            current = memory.relativeIndirectable(context &+ 4)
            depth += 1
        }
        let name = parts.isEmpty ? nil : parts.reversed().joined(separator: ".")
        descriptorNames[descriptor] = .some(name)
        return name ?? "?"
    }

    // MARK: - Strings

    /// The Swift String whose 16 bytes are at `address`: small strings inline, native large
    /// strings from their storage object; nil for other representations.
    func string(at address: UInt64) -> String? {
        guard let countAndFlags = memory.word(address), let object = memory.word(address &+ 8) else { return nil }
        let discriminator = UInt8(truncatingIfNeeded: object >> 56)
        if discriminator & 0x20 != 0 {
            // Small: up to 15 UTF-8 bytes in the two words, the count in the discriminator's low nibble.
            let count = Int(discriminator & 0x0F)
            guard let bytes = memory.bytes(address, count: 16) else { return nil }
            return String(validating: bytes.prefix(count), as: UTF8.self)
        }
        // Large native: storage object at the address bits, UTF-8 after its 32-byte header.
        let count = Int(countAndFlags & 0x0000_FFFF_FFFF_FFFF)
        guard count <= 256, let bytes = memory.bytes((object & Self.pointerMask) &+ 32, count: count) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }
}
