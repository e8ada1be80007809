import LeakAuditModel

// The heap walk from bytes to retainers, for the libFuzzer target (Fuzz/HeapGraphFuzzer,
// scripts/fuzz.sh) and its replay of a corpus: every byte is what a hostile target could have put
// in its memory, its registers or its module records.

/// Runs bytes through the heap walk as if they were a stopped target's copy (`ProcessSnapshot`):
/// the same search (`RetainerSearch.paths`) as a real run, and with `retainers(from:)` (in
/// Reporting/, where names are given) the same naming, with a symbolizer that opens no file.
///
/// The input describes a process with fixed regions (an image's code, type metadata and data, a
/// runtime library's code, malloc's `[heap]`, a thread arena's heap, mmapped chunks, memory
/// outside any heap, thread-local storage and a stack). Their words are *tokens*, mostly one byte
/// that stands for a value a Swift heap is made of: an object's address (absolute, or relative to
/// the object being written, so that a repeated chunk makes a chain), a type's metadata, a live or
/// dying reference count, a function's code. Types are built from short descriptions into real
/// runtime layouts (class metadata and descriptors with field records and mangled names, closure
/// contexts, boxes, tasks, collection storage, enums with payload cases), so that mutations reach
/// the search's deep code at once; patches then write any word or 32-bit value anywhere.
///
/// Layout: one byte of flags (bit 0: the outside region starts where `[heap]` ends; bit 1: the
/// thread arena's heap is its arena's first, with a `malloc_state`; bit 2: type metadata is
/// writable; bit 3: each object lies 16 bytes into its chunk's block, after a header of the block's
/// address and the object's size, as a malloc interposer lays them out), then sections until the input ends, each an opcode byte (modulo 10): 0 a type, 1 a
/// group of malloc chunks, 2 globals, 3 stack words, 4 a thread, 5 instances to search for, 6 word
/// patches, 7 32-bit patches, 8 a module record, 9 thread-local words. `Encoder` below writes it.
package enum HeapSnapshotReplay {
    /// Where each region starts (`Area` indexes); the stack is copied from 0x1000 above its start.
    enum Area: Int, CaseIterable {
        case code, types, data, runtime, heap, arena, mmapped, outside, threadLocal, sideTables, stack
    }

    static let starts: [UInt64] = [
        0x5555_0000_0000, 0x5555_0010_0000, 0x5555_0020_0000, 0x5555_0030_0000, 0x5555_1000_0000, 0x7F00_0000_0000,
        0x7F10_0000_0000, 0x7F20_0000_1000, 0x7F30_0000_0000, 0x7F40_0000_0000, 0x7FFE_0000_0000,
    ]
    static let imagePath = "/app/App"
    static let runtimePath = "/usr/lib/swift/linux/libswift_Concurrency.so"
    /// The closure code, thunk and async function pointer that tokens name.
    static let closureCode = starts[Area.code.rawValue] + 0x100
    static let thunkCode = starts[Area.code.rawValue] + 0x800
    static let runtimeCode = starts[Area.runtime.rawValue] + 0x100
    static let asyncFunctionPointer = starts[Area.types.rawValue] + 0x100
    /// The first word of an ICU `UnicodeString` (its vtable's address point) and of a C block on
    /// the heap (`_NSConcreteMallocBlock`) in the replayed process, which a real run finds in the
    /// libraries' symbols.
    static let unicodeStringVTable = starts[Area.types.rawValue] + 0x800
    static let mallocBlockClass = starts[Area.types.rawValue] + 0x900
    static let foreignClasses = ForeignClasses(unicodeStrings: [unicodeStringVTable], mallocBlocks: [mallocBlockClass])
    /// Type `t`'s 4 KiB slot: metadata at +0x10, descriptor at +0x200, field descriptor at +0x300,
    /// capture descriptor at +0x400, value witnesses at +0x500, strings from +0x600.
    static let typesBase = starts[Area.types.rawValue] + 0x1000
    static let typeSlotSize: UInt64 = 0x1000
    static let maximumTypes = 32
    static func metadata(ofType type: Int) -> UInt64 { typesBase + UInt64(type) * typeSlotSize + 0x10 }
    static func descriptor(ofType type: Int) -> UInt64 { typesBase + UInt64(type) * typeSlotSize + 0x200 }
    static let stackCopiedStart = starts[Area.stack.rawValue] + 0x1000
    static let defaultThreadPointer = starts[Area.threadLocal.rawValue] + 0x1000
    /// Bounds that keep a replay's memory and time small whatever the input says.
    static let maximumHeapBytes = 4 << 20
    static let maximumObjects = 200_000
    static let maximumThreads = 8
    static let maximumModules = 8
    static let maximumInstances = 256

    /// The type name the naming gives the instances searched for.
    package static let instanceTypeName = "App.Leaked"

    /// The process snapshot, module records and instances the input describes.
    static func decode(_ bytes: UnsafeRawBufferPointer) -> (
        snapshot: ProcessSnapshot, modules: [ModuleImage], instances: [UInt64]
    ) {
        var parser = Parser(bytes: bytes)
        let description = parser.description()
        var builder = Builder(description)
        return builder.build()
    }

    // MARK: - Tokens

    /// One word of the snapshot, as the input spells it.
    struct Token {
        var code: UInt8
        var payload: UInt64 = 0
    }

    /// Token codes (one byte; some take a payload).
    enum Code {
        static let zero: UInt8 = 0x00
        /// Reference counts: live (unowned count 1), live with strong references, immortal,
        /// deinitializing, unowned count 0, a side table that points back at the object.
        static let live: UInt8 = 0x01
        static let liveStrong: UInt8 = 0x02
        static let immortal: UInt8 = 0x03
        static let deiniting: UInt8 = 0x04
        static let noUnowned: UInt8 = 0x05
        static let sideTable: UInt8 = 0x06
        static let closureCode: UInt8 = 0x07
        static let asyncFunctionPointer: UInt8 = 0x08
        static let runtimeCode: UInt8 = 0x09
        static let thunkCode: UInt8 = 0x0A
        /// 0x0B...0x0F: `literals`.
        static let literals: [UInt64] = [1, 2, 0x20, 0x7FFF_FFFF_FFFF_FFFF, 0x8000_0000_0000_0000]
        /// 0x10...0x2F: type `code - 0x10`'s metadata.
        static let metadata: UInt8 = 0x10
        /// 0x30...0x37: the object `code - 0x33` places after the one being written (-3...+4).
        static let relative: UInt8 = 0x30
        /// 0x38...0x3F: the same, with spare bits set (an enum's tag).
        static let relativeTagged: UInt8 = 0x38
        /// 0x40...0x7F: object `code - 0x40`.
        static let object: UInt8 = 0x40
        /// 0x80...0xBF: the number `code - 0x80`.
        static let small: UInt8 = 0x80
        /// 0xC0...0xDF: the address `8 * (code - 0xC0)` bytes into the object being written.
        static let inside: UInt8 = 0xC0
        /// 0xE0...0xE7: the stack's copied start plus `32 * (code - 0xE0)`.
        static let stack: UInt8 = 0xE0
        /// Payload-carrying codes.
        static let stackSlot: UInt8 = 0xE8  // + 1 byte: the stack's copied start plus 8 × it
        static let threadPointer: UInt8 = 0xE9
        static let global: UInt8 = 0xEA  // + 1 byte: the data region's word
        static let typePart: UInt8 = 0xEB  // + 1 byte: a type (low 5 bits), a part of its slot (high 3)
        static let chunkHeader: UInt8 = 0xEC
        static let regionEdge: UInt8 = 0xED  // + 1 byte
        static let literal16: UInt8 = 0xEE
        static let literal32: UInt8 = 0xEF
        static let literal64: UInt8 = 0xF0
        /// A small native String "login" (two words), and a large one's two words.
        static let smallStringLow: UInt8 = 0xF1
        static let smallStringHigh: UInt8 = 0xF2
        static let largeStringCount: UInt8 = 0xF3
        static let objectWide: UInt8 = 0xF8  // + 2 bytes: any object index
        static let objectField: UInt8 = 0xF9  // + 1 byte: object's address + 16
    }

    /// How many payload bytes follow a token code.
    static func payloadBytes(_ code: UInt8) -> Int {
        switch code {
        case Code.stackSlot, Code.global, Code.typePart, Code.regionEdge, Code.objectField: 1
        case Code.literal16, Code.objectWide: 2
        case Code.literal32: 4
        case Code.literal64: 8
        default: 0
        }
    }

    // MARK: - The input, parsed

    struct TypeSpec {
        enum Kind: Int {
            case classInstance, genericClass, array, dictionary, set, closureContext, box, task, other, structure, enumeration,
                raw
        }
        var kind: Kind
        var variant: UInt8 = 0
        var name: [UInt8] = []
        var instanceSize: UInt32 = 16
        var superclass: Int? = nil
        var fields: [FieldSpec] = []
        /// Generic arguments, collection elements, a box's value: type indexes.
        var arguments: [Int] = []
        /// A closure context's or box's first capture offset; a value type's stride; a raw kind.
        var number: UInt32 = 0
    }

    struct FieldSpec {
        var offset: UInt32
        var mangled: MangledSpec
        var name: [UInt8]
    }

    /// A mangled type name: one of `mangledNames`, a symbolic reference to a type's descriptor
    /// (direct, optional, indirect or weak), or raw bytes.
    struct MangledSpec {
        var choice: UInt8
        var type: Int = 0
        var raw: [UInt8] = []
    }

    /// Mangled names 3...13 choose: weak, unowned, unowned(unsafe), Unmanaged, raw pointers, String,
    /// Int, a native object, an optional closure.
    static let mangledNames: [[UInt8]] = [
        "4main4NodeCSgXw", "4main4NodeCXo", "4main4NodeCXu", "s9UnmanagedVy4main4NodeCG", "Sv", "SpySiG",
        "s13OpaquePointerV", "SS", "Si", "Bo", "yycSg",
    ].map { Array($0.utf8) }

    static let names: [[UInt8]] = [
        "Node", "Model", "Screen", "Session", "next", "model", "onClose", "items", "state", "parent", "delegate", "cache",
        "String", "Int", "loading", "idle",
    ].map { Array($0.utf8) }

    struct ChunkSpec {
        /// The chunk's size: 16 × max(2, this).
        var units: Int
        var free: Bool
        var header: Token?
        var tokens: [Token]
    }

    struct ChunkGroup {
        var area: Area
        var repeats: Int
        var chunks: [ChunkSpec]
    }

    struct ThreadSpec {
        var instructionPointer: Token
        var stackPointer: Token
        var framePointer: Token
        var threadPointer: Token
        var name: [UInt8]
        var registers: [Token]
    }

    struct Patch {
        var area: Area
        var offset: Int
        var words: [Token]
        var values32: [UInt32]
    }

    struct Description {
        var flags: UInt8 = 0
        var types: [TypeSpec] = []
        var groups: [ChunkGroup] = []
        var globals: [Token] = []
        var stack: [Token] = []
        var threadLocal: [Token] = []
        var threads: [ThreadSpec] = []
        var instances: [Token] = []
        var patches: [Patch] = []
        var modules: [(start: Token, end: Token, name: [UInt8])] = []
    }

    /// Reads a `Description`; a section cut short by the input's end is dropped.
    struct Parser {
        let bytes: UnsafeRawBufferPointer
        var position = 0

        mutating func byte() -> UInt8? {
            guard position < bytes.count else { return nil }
            defer { position += 1 }
            return bytes[position]
        }

        mutating func integer(_ count: Int) -> UInt64? {
            var value: UInt64 = 0
            for index in 0..<count {
                guard let byte = byte() else { return nil }
                value |= UInt64(byte) << (8 * UInt64(index))
            }
            return value
        }

        mutating func token() -> Token? {
            guard let code = byte(), let payload = integer(HeapSnapshotReplay.payloadBytes(code)) else { return nil }
            return Token(code: code, payload: payload)
        }

        mutating func tokens() -> [Token]? {
            guard let count = byte() else { return nil }
            var tokens: [Token] = []
            for _ in 0..<count {
                guard let token = token() else { return nil }
                tokens.append(token)
            }
            return tokens
        }

        mutating func name() -> [UInt8]? {
            guard let choice = byte() else { return nil }
            guard choice >= 0xF0 else { return HeapSnapshotReplay.names[Int(choice) % HeapSnapshotReplay.names.count] }
            var raw: [UInt8] = []
            for _ in 0..<(choice & 0x0F) {
                guard let byte = byte() else { return nil }
                raw.append(byte)
            }
            return raw
        }

        mutating func typeIndex() -> Int? { byte().map { Int($0) % HeapSnapshotReplay.maximumTypes } }

        mutating func mangled() -> MangledSpec? {
            guard let choice = byte() else { return nil }
            var spec = MangledSpec(choice: choice % 16)
            switch spec.choice {
            case 0, 1, 2, 14:
                guard let type = typeIndex() else { return nil }
                spec.type = type
            case 15:
                guard let count = byte() else { return nil }
                for _ in 0..<(count % 33) {
                    guard let byte = byte() else { return nil }
                    spec.raw.append(byte)
                }
            default: break
            }
            return spec
        }

        mutating func area() -> Area? { byte().map { Area.allCases[Int($0) % Area.allCases.count] } }

        mutating func typeSpec() -> TypeSpec? {
            guard let kindByte = byte(), let kind = TypeSpec.Kind(rawValue: Int(kindByte) % 12), let variant = byte(),
                let name = name()
            else { return nil }
            var spec = TypeSpec(kind: kind, variant: variant, name: name)
            switch kind {
            case .classInstance, .genericClass:
                guard let size = byte(), let superclass = byte(), let count = byte() else { return nil }
                if size == 0xFF {
                    guard let raw = integer(4) else { return nil }
                    spec.instanceSize = UInt32(raw)
                } else {
                    spec.instanceSize = 16 + 8 * UInt32(size)
                }
                spec.superclass = superclass == 0xFF ? nil : Int(superclass) % HeapSnapshotReplay.maximumTypes
                for _ in 0..<(count % 17) {
                    guard let offset = byte(), let mangled = mangled(), let name = self.name() else { return nil }
                    spec.fields.append(FieldSpec(offset: UInt32(offset) * 8, mangled: mangled, name: name))
                }
                if kind == .genericClass {
                    guard let argument = typeIndex() else { return nil }
                    spec.arguments = [argument]
                }
            case .array, .set:
                guard let element = typeIndex() else { return nil }
                spec.arguments = [element]
            case .dictionary:
                guard let key = typeIndex(), let value = typeIndex() else { return nil }
                spec.arguments = [key, value]
            case .closureContext:
                guard let offset = byte(), let count = byte() else { return nil }
                spec.number = UInt32(offset)
                for _ in 0..<(count % 9) {
                    guard let mangled = mangled() else { return nil }
                    spec.fields.append(FieldSpec(offset: 0, mangled: mangled, name: []))
                }
            case .box:
                guard let offset = byte(), let boxed = typeIndex() else { return nil }
                spec.number = UInt32(offset)
                spec.arguments = [boxed]
            case .task:
                break
            case .other, .raw:
                guard let raw = integer(2) else { return nil }
                spec.number = UInt32(raw)
            case .structure:
                guard let stride = byte() else { return nil }
                spec.number = UInt32(stride)
                // Variant bit 6: field records follow (a count, then each a name and a type).
                if variant & 0x40 != 0 {
                    guard let count = byte() else { return nil }
                    for _ in 0..<(count % 9) {
                        guard let name = self.name(), let mangled = mangled() else { return nil }
                        spec.fields.append(FieldSpec(offset: 0, mangled: mangled, name: name))
                    }
                }
            case .enumeration:
                guard let count = byte() else { return nil }
                for _ in 0..<(count % 9) {
                    guard let name = self.name(), let payload = byte() else { return nil }
                    // A case without payload has no type; 0xFE: an `unowned(unsafe)` Node.
                    let mangled = MangledSpec(
                        choice: payload == 0xFF ? 13 : payload == 0xFE ? 5 : 0,
                        type: Int(payload) % HeapSnapshotReplay.maximumTypes)
                    spec.fields.append(FieldSpec(offset: 0, mangled: mangled, name: name))
                }
            }
            return spec
        }

        mutating func chunkGroup() -> ChunkGroup? {
            guard let area = area(), let repeatByte = byte() else { return nil }
            var repeats = Int(repeatByte) + 1
            if repeatByte == 0xFF {
                guard let raw = integer(2) else { return nil }
                repeats = Int(raw) + 1
            }
            guard let count = byte() else { return nil }
            var chunks: [ChunkSpec] = []
            for _ in 0..<(count % 9) {
                guard let units = byte(), let flags = byte() else { return nil }
                var header: Token? = nil
                if flags & 2 != 0 {
                    guard let token = token() else { return nil }
                    header = token
                }
                guard let tokens = tokens() else { return nil }
                chunks.append(ChunkSpec(units: Swift.max(2, Int(units)), free: flags & 1 != 0, header: header, tokens: tokens))
            }
            return ChunkGroup(area: area, repeats: repeats, chunks: chunks)
        }

        mutating func description() -> Description {
            var description = Description()
            description.flags = byte() ?? 0
            while let opcode = byte() {
                switch opcode % 10 {
                case 0:
                    guard let type = typeSpec() else { return description }
                    if description.types.count < HeapSnapshotReplay.maximumTypes { description.types.append(type) }
                case 1:
                    guard let group = chunkGroup() else { return description }
                    description.groups.append(group)
                case 2:
                    guard let tokens = tokens() else { return description }
                    description.globals += tokens
                case 3:
                    guard let tokens = tokens() else { return description }
                    description.stack += tokens
                case 4:
                    guard let instructionPointer = token(), let stackPointer = token(), let framePointer = token(),
                        let threadPointer = token(), let name = name(), let registers = tokens()
                    else { return description }
                    if description.threads.count < HeapSnapshotReplay.maximumThreads {
                        description.threads.append(
                            ThreadSpec(
                                instructionPointer: instructionPointer, stackPointer: stackPointer, framePointer: framePointer,
                                threadPointer: threadPointer, name: name, registers: registers))
                    }
                case 5:
                    guard let tokens = tokens() else { return description }
                    description.instances += tokens
                case 6:
                    guard let area = area(), let offset = integer(2), let words = tokens() else { return description }
                    description.patches.append(Patch(area: area, offset: Int(offset) * 8, words: words, values32: []))
                case 7:
                    guard let area = area(), let offset = integer(2), let count = byte() else { return description }
                    var values: [UInt32] = []
                    for _ in 0..<(count % 9) {
                        guard let value = integer(4) else { return description }
                        values.append(UInt32(value))
                    }
                    description.patches.append(Patch(area: area, offset: Int(offset) * 4, words: [], values32: values))
                case 8:
                    guard let start = token(), let end = token(), let name = name() else { return description }
                    if description.modules.count < HeapSnapshotReplay.maximumModules {
                        description.modules.append((start, end, name))
                    }
                default:
                    guard let tokens = tokens() else { return description }
                    description.threadLocal += tokens
                }
            }
            return description
        }
    }

    // MARK: - The snapshot, built

    /// Bytes of one region under construction, growing as they are written.
    struct Draft {
        var bytes: [UInt8] = []
        let limit: Int

        mutating func write(_ value: UInt64, count: Int, at offset: Int) {
            guard offset >= 0, offset + count <= limit else { return }
            if bytes.count < offset + count { bytes += [UInt8](repeating: 0, count: offset + count - bytes.count) }
            for index in 0..<count { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(index))) }
        }

        mutating func word(_ value: UInt64, at offset: Int) { write(value, count: 8, at: offset) }
        mutating func uint32(_ value: UInt32, at offset: Int) { write(UInt64(value), count: 4, at: offset) }

        /// A relative pointer at `offset` (of a region starting at `base`) to `target`.
        mutating func relative(to target: UInt64?, at offset: Int, base: UInt64) {
            guard let target else { return }
            let distance = Int64(bitPattern: target &- (base + UInt64(offset)))
            uint32(UInt32(truncatingIfNeeded: distance), at: offset)
        }

        mutating func pad(to count: Int) {
            if bytes.count < count { bytes += [UInt8](repeating: 0, count: Swift.min(count, limit) - bytes.count) }
        }
    }

    struct Builder {
        let description: Description
        var drafts: [Draft]
        /// Every object's address, in the order the input lays them out.
        var objects: [UInt64] = []
        /// Where each object's chunk is: its group, chunk, region and offset.
        var placements: [(group: Int32, chunk: Int32, area: UInt8, offset: Int32)] = []
        var outsideStart = HeapSnapshotReplay.starts[Area.outside.rawValue]
        var sideTables: [Int: UInt64] = [:]

        init(_ description: Description) {
            self.description = description
            drafts = Area.allCases.map { area in
                switch area {
                case .heap, .arena, .mmapped, .outside: Draft(limit: HeapSnapshotReplay.maximumHeapBytes + 0x1000)
                case .types: Draft(limit: 0x1000 + HeapSnapshotReplay.maximumTypes * 0x1000)
                case .stack, .data, .threadLocal: Draft(limit: 0x10000)
                case .sideTables: Draft(limit: 16 * HeapSnapshotReplay.maximumObjects)
                case .code, .runtime: Draft(limit: 0x1000)
                }
            }
        }

        func start(_ area: Area) -> UInt64 {
            area == .outside ? outsideStart : HeapSnapshotReplay.starts[area.rawValue]
        }

        /// Where the first chunk of a heap goes: after a thread arena's heap_info (and, in its
        /// first heap, its malloc_state).
        func firstChunk(_ area: Area) -> Int {
            guard area == .arena else { return 0 }
            return description.flags & 2 != 0 ? 0x900 : 48
        }

        mutating func build() -> (snapshot: ProcessSnapshot, modules: [ModuleImage], instances: [UInt64]) {
            layOutChunks()
            writeTypes()
            writeChunks()
            for (index, token) in description.globals.prefix(0x2000).enumerated() {
                drafts[Area.data.rawValue].word(value(of: token), at: index * 8)
            }
            drafts[Area.data.rawValue].pad(to: 0x100)
            for (index, token) in description.threadLocal.prefix(0x400).enumerated() {
                drafts[Area.threadLocal.rawValue].word(value(of: token), at: index * 8)
            }
            drafts[Area.threadLocal.rawValue].pad(to: 0x2000)
            for (index, token) in description.stack.prefix(0x1E00).enumerated() {
                drafts[Area.stack.rawValue].word(value(of: token), at: index * 8)
            }
            drafts[Area.stack.rawValue].pad(to: 0x200)
            drafts[Area.code.rawValue].pad(to: 0x1000)
            drafts[Area.runtime.rawValue].pad(to: 0x1000)
            for patch in description.patches {
                for (index, token) in patch.words.enumerated() {
                    drafts[patch.area.rawValue].word(value(of: token), at: patch.offset + index * 8)
                }
                for (index, value) in patch.values32.enumerated() {
                    drafts[patch.area.rawValue].uint32(value, at: patch.offset + index * 4)
                }
            }
            return (ProcessSnapshot(pid: 1, regions: regions(), threads: threads()), modules(), instances())
        }

        // Chunks: placed first, so that every token can name any object.

        mutating func layOutChunks() {
            var cursors = Area.allCases.map { firstChunk($0) }
            outer: for (groupIndex, group) in description.groups.enumerated() where !group.chunks.isEmpty {
                let area: Area = [.heap, .arena, .mmapped, .outside][group.area.rawValue % 4]
                for _ in 0..<group.repeats {
                    for (chunkIndex, chunk) in group.chunks.enumerated() {
                        let size = 16 * chunk.units
                        guard objects.count < HeapSnapshotReplay.maximumObjects,
                            cursors[area.rawValue] + size + 32 <= HeapSnapshotReplay.maximumHeapBytes
                        else { continue outer }
                        placements.append(
                            (Int32(groupIndex), Int32(chunkIndex), UInt8(area.rawValue), Int32(cursors[area.rawValue])))
                        cursors[area.rawValue] += size
                        objects.append(0)
                    }
                }
            }
            // The outside region may start right where [heap] ends.
            if description.flags & 1 != 0 {
                let heapEnd = cursors[Area.heap.rawValue] + 32
                outsideStart = HeapSnapshotReplay.starts[Area.heap.rawValue] + UInt64((heapEnd + 0xFFF) & ~0xFFF)
            }
            for (index, placement) in placements.enumerated() {
                objects[index] = start(Area.allCases[Int(placement.area)]) + UInt64(placement.offset) + 16 + objectOffset
            }
        }

        /// How many bytes into its chunk's block each object lies: 16 after a malloc interposer's
        /// header (flag bit 3), else 0.
        var objectOffset: UInt64 { description.flags & 8 != 0 ? 16 : 0 }

        mutating func writeChunks() {
            var previousInUse = [Bool](repeating: true, count: Area.allCases.count)
            var ends = Area.allCases.map { firstChunk($0) }
            for (index, placement) in placements.enumerated() {
                let chunk = description.groups[Int(placement.group)].chunks[Int(placement.chunk)]
                let area = Int(placement.area)
                let offset = Int(placement.offset)
                let size = 16 * chunk.units
                var header = UInt64(size)
                switch Area.allCases[area] {
                case .mmapped: header |= 2
                case .outside: header |= 1
                default: header |= previousInUse[area] ? 1 : 0
                }
                previousInUse[area] = !chunk.free
                if let token = chunk.header { header = value(of: token, object: index) }
                drafts[area].word(header, at: offset + 8)
                // A chunk in use also has the next one's first word (its prev_size), unless mmapped.
                var usable = Area.allCases[area] == .mmapped ? size - 16 : size - 8
                if objectOffset != 0 {
                    // The interposer's header: the block's address and the size asked for.
                    usable -= Int(objectOffset)
                    drafts[area].word(objects[index] - objectOffset, at: offset + 16)
                    drafts[area].word(UInt64(usable), at: offset + 24)
                }
                for (word, token) in chunk.tokens.prefix(usable / 8).enumerated() {
                    drafts[area].word(value(of: token, object: index), at: offset + 16 + Int(objectOffset) + 8 * word)
                }
                ends[area] = offset + size
            }
            // The top chunk ends a main or thread arena's heap.
            for area in [Area.heap, .arena] where ends[area.rawValue] > firstChunk(area) {
                drafts[area.rawValue].word(32 | (previousInUse[area.rawValue] ? 1 : 0), at: ends[area.rawValue] + 8)
                ends[area.rawValue] += 32
            }
            for area in [Area.heap, .arena, .mmapped, .outside] where ends[area.rawValue] > firstChunk(area) {
                drafts[area.rawValue].pad(to: ends[area.rawValue])
            }
            let arena = drafts[Area.arena.rawValue].bytes.count
            if arena > 0 {
                // heap_info: its arena, then its size.
                let start = HeapSnapshotReplay.starts[Area.arena.rawValue]
                drafts[Area.arena.rawValue].word(description.flags & 2 != 0 ? start + 48 : 0x7F00_0800_0000, at: 0)
                drafts[Area.arena.rawValue].word(UInt64(arena), at: 16)
            }
        }

        // Types: each in its slot, as the runtime lays out metadata and descriptors.

        mutating func writeTypes() {
            let base = HeapSnapshotReplay.starts[Area.types.rawValue]
            // Module descriptors "App" (at 0) and "Swift" (at 0x20), their names, an async function
            // pointer.
            drafts[Area.types.rawValue].relative(to: base + 0x40, at: 8, base: base)
            drafts[Area.types.rawValue].relative(to: base + 0x48, at: 0x28, base: base)
            drafts[Area.types.rawValue].write(0x0070_7041, count: 4, at: 0x40)  // "App"
            drafts[Area.types.rawValue].write(0x0074_6669_7753, count: 6, at: 0x48)  // "Swift"
            drafts[Area.types.rawValue].word(HeapSnapshotReplay.closureCode, at: 0x100)
            drafts[Area.types.rawValue].pad(to: 0x1000)
            for (index, type) in description.types.enumerated() { writeType(type, index: index) }
        }

        mutating func writeType(_ type: TypeSpec, index: Int) {
            let base = HeapSnapshotReplay.starts[Area.types.rawValue]
            let slot = 0x1000 + index * 0x1000
            let metadataOffset = slot + 0x10
            let descriptorOffset = slot + 0x200
            let fieldsOffset = slot + 0x300
            var pool = slot + 0x600
            var draft = drafts[Area.types.rawValue]
            defer { drafts[Area.types.rawValue] = draft }
            func address(_ offset: Int) -> UInt64 { base + UInt64(offset) }
            func string(_ bytes: [UInt8]) -> UInt64? {
                guard pool + bytes.count + 1 <= slot + 0x1000 else { return nil }
                for (offset, byte) in bytes.enumerated() { draft.write(UInt64(byte), count: 1, at: pool + offset) }
                draft.write(0, count: 1, at: pool + bytes.count)
                defer { pool += bytes.count + 1 }
                return address(pool)
            }
            func mangled(_ spec: MangledSpec) -> UInt64? {
                let target = HeapSnapshotReplay.descriptor(ofType: spec.type)
                switch spec.choice {
                case 0, 1, 14:
                    // A symbolic reference: 1, then a relative pointer to the descriptor.
                    guard
                        let start = string(
                            [1, 0, 0, 0, 0] + (spec.choice == 1 ? [0x53, 0x67] : spec.choice == 14 ? [0x58, 0x77] : []))
                    else { return nil }
                    draft.relative(to: target, at: Int(start - base) + 1, base: base)
                    return start
                case 2:
                    // Indirect: 2, then a relative pointer to a word holding the descriptor.
                    guard let start = string([2, 0, 0, 0, 0]) else { return nil }
                    draft.relative(to: target + 0x3F0, at: Int(start - base) + 1, base: base)
                    return start
                case 15: return string(spec.raw)
                default:
                    return string(HeapSnapshotReplay.mangledNames[(Int(spec.choice) - 3) % HeapSnapshotReplay.mangledNames.count])
                }
            }
            let variant = type.variant
            var kind: UInt64 = 0
            // Value witnesses: size, stride and flags, named by the word before the metadata. A
            // struct or enum of variant bit 0 is POD; any other type is not.
            let isValue = type.kind == .structure || type.kind == .enumeration
            // A raw kind 0x303 is an existential; of variant bit 0, opaque (`any P`): a container
            // of five words.
            let isOpaqueExistential = type.kind == .raw && type.number == 0x303 && variant & 1 != 0
            let stride: UInt64 = type.kind == .structure ? UInt64(type.number) : isOpaqueExistential ? 40 : 8
            draft.word(address(slot + 0x500), at: slot + 0x08)
            draft.word(stride, at: slot + 0x500 + 64)
            draft.word(stride, at: slot + 0x500 + 72)
            draft.uint32(isValue && type.variant & 1 != 0 ? 0 : SwiftLayout.nonPODFlag, at: slot + 0x500 + 80)
            // The descriptor's word, for indirect references.
            draft.word(address(descriptorOffset), at: descriptorOffset + 0x3F0)
            switch type.kind {
            case .classInstance, .genericClass, .array, .dictionary, .set:
                var fields = type.fields
                var instanceSize = type.instanceSize
                var arguments = type.arguments
                var name = type.name
                var generic = type.kind != .classInstance
                let standard = type.kind != .classInstance && type.kind != .genericClass
                switch type.kind {
                case .array:
                    name = Array("_ContiguousArrayStorage".utf8)
                    instanceSize = 32
                    fields = []
                case .dictionary, .set:
                    name = Array((type.kind == .set ? "_SetStorage" : "_DictionaryStorage").utf8)
                    instanceSize = type.kind == .set ? 56 : 64
                    let layout: [(String, UInt32)] =
                        [("_count", 16), ("_capacity", 24), ("_scale", 32), ("_age", 36), ("_seed", 40)]
                        + [(type.kind == .set ? "_rawElements" : "_rawKeys", 48)]
                        + (type.kind == .set ? [] : [("_rawValues", 56)])
                    fields = layout.map { FieldSpec(offset: $0.1, mangled: MangledSpec(choice: 12), name: Array($0.0.utf8)) }
                default: break
                }
                if variant & 2 != 0 { generic.toggle() }
                if !generic { arguments = [] }
                let resilient = variant & 1 != 0
                let superclass: UInt64 =
                    variant & 0x80 != 0 ? address(metadataOffset) : type.superclass.map(HeapSnapshotReplay.metadata(ofType:)) ?? 0
                // Metadata: kind, superclass, sizes, description; generic arguments at word 6, field
                // offsets at word 8.
                draft.word(superclass, at: metadataOffset + 8)
                draft.word(UInt64(instanceSize) | 7 << 32, at: metadataOffset + 24)
                draft.word(address(descriptorOffset) + (variant & 0x40 != 0 ? 2 : 0), at: metadataOffset + 40)
                for (position, argument) in arguments.prefix(2).enumerated() {
                    draft.word(HeapSnapshotReplay.metadata(ofType: argument), at: metadataOffset + 48 + 8 * position)
                }
                for (position, field) in fields.enumerated() {
                    draft.word(UInt64(field.offset), at: metadataOffset + 64 + 8 * position)
                }
                // Descriptor: flags, parent, name, fields, bounds, sizes, generic header.
                var flags: UInt32 = variant & 4 != 0 ? 17 : 16
                if generic { flags |= 0x80 }
                if resilient { flags |= 1 << 29 }
                draft.uint32(flags, at: descriptorOffset)
                let parent = standard != (variant & 0x20 != 0) ? base + 0x20 : base
                draft.relative(to: parent, at: descriptorOffset + 4, base: base)
                draft.relative(to: string(name), at: descriptorOffset + 8, base: base)
                draft.relative(to: address(fieldsOffset), at: descriptorOffset + 16, base: base)
                let members = 2 + fields.count
                if resilient {
                    draft.word(48, at: slot + 0x1F0)
                    draft.relative(to: address(slot + 0x1F0), at: descriptorOffset + 24, base: base)
                }
                draft.uint32(UInt32(6 + members), at: descriptorOffset + 28)
                draft.uint32(UInt32(members), at: descriptorOffset + 32)
                draft.uint32(UInt32(fields.count + (variant & 8 != 0 ? 100 : 0)), at: descriptorOffset + 36)
                draft.uint32(resilient ? 2 : 8, at: descriptorOffset + 40)
                draft.write(UInt64(arguments.count), count: 2, at: descriptorOffset + 52)
                for position in arguments.indices { draft.write(0x80, count: 1, at: descriptorOffset + 60 + position) }
                // Field descriptor: records of flags, mangled type and name.
                let recordSize = variant & 0x10 != 0 ? 16 : 12
                draft.uint32(UInt32(recordSize) << 16, at: fieldsOffset + 8)
                draft.uint32(UInt32(fields.count), at: fieldsOffset + 12)
                for (position, field) in fields.enumerated() {
                    let record = fieldsOffset + 16 + position * recordSize
                    draft.relative(to: mangled(field.mangled), at: record + 4, base: base)
                    draft.relative(to: string(field.name), at: record + 8, base: base)
                }
            case .closureContext:
                kind = 0x400
                draft.uint32(type.number, at: metadataOffset + 8)
                if !type.fields.isEmpty || variant & 1 != 0 {
                    let captures = slot + 0x400
                    draft.word(address(captures), at: metadataOffset + 16)
                    draft.uint32(UInt32(type.fields.count), at: captures)
                    for (position, capture) in type.fields.enumerated() {
                        draft.relative(to: mangled(capture.mangled), at: captures + 12 + 4 * position, base: base)
                    }
                }
            case .box:
                kind = 0x500
                draft.uint32(type.number, at: metadataOffset + 8)
                draft.word(type.arguments.first.map(HeapSnapshotReplay.metadata(ofType:)) ?? 0, at: metadataOffset + 16)
            case .task:
                kind = 0x502
            case .other:
                kind = [0x501, 0x503][Int(type.number % 2)]
            case .raw:
                kind = UInt64(type.number)
                if kind == 0x303 {
                    // Existential metadata: flags (bit 31: not bound to classes, when opaque; the
                    // variant's bits 1...2 a special protocol, bit 3 a superclass constraint), then
                    // how many protocols (the variant's bits 4...7), each this type's descriptor.
                    let flags =
                        (isOpaqueExistential ? 0x8000_0000 : 0) | UInt32((variant >> 1) & 3) << 24
                        | (variant & 8 != 0 ? 0x4000_0000 : 0)
                    draft.uint32(flags, at: metadataOffset + 8)
                    draft.uint32(UInt32(variant >> 4), at: metadataOffset + 12)
                    for position in 0..<Int(variant >> 4) {
                        draft.word(address(descriptorOffset), at: metadataOffset + 16 + 8 * position)
                    }
                }
            case .structure, .enumeration:
                kind = type.kind == .structure ? 0x200 : 0x201
                draft.word(address(descriptorOffset), at: metadataOffset + 8)
                draft.uint32(type.kind == .structure ? 17 : 18, at: descriptorOffset)
                draft.relative(to: variant & 0x20 != 0 ? base + 0x20 : base, at: descriptorOffset + 4, base: base)
                draft.relative(to: string(type.name), at: descriptorOffset + 8, base: base)
                draft.relative(to: address(fieldsOffset), at: descriptorOffset + 16, base: base)
                draft.uint32(12 << 16, at: fieldsOffset + 8)
                draft.uint32(UInt32(type.fields.count), at: fieldsOffset + 12)
                if type.kind == .structure { draft.uint32(UInt32(type.fields.count), at: descriptorOffset + 20) }
                for (position, field) in type.fields.enumerated() {
                    let record = fieldsOffset + 16 + position * 12
                    if field.mangled.choice != 13 { draft.relative(to: mangled(field.mangled), at: record + 4, base: base) }
                    draft.relative(to: string(field.name), at: record + 8, base: base)
                }
            }
            draft.word(kind, at: metadataOffset)
        }

        // Tokens, evaluated.

        /// The value of `token` in the word of object `object` (the first object outside chunks).
        mutating func value(of token: Token, object: Int = 0) -> UInt64 {
            let code = token.code
            func objectAddress(_ index: Int) -> UInt64 { index >= 0 && index < objects.count ? objects[index] : 0 }
            switch code {
            case Code.zero: return 0
            case Code.live: return 3
            case Code.liveStrong: return 0x0000_0002_0000_0003
            case Code.immortal: return UInt64.max
            case Code.deiniting: return 1 << 32 | 3
            case Code.noUnowned: return 0x0000_0002_0000_0000
            case Code.sideTable:
                let table = HeapSnapshotReplay.starts[Area.sideTables.rawValue] + UInt64(sideTables.count) * 16
                if let known = sideTables[object] { return (known >> 3) | 1 << 63 }
                drafts[Area.sideTables.rawValue].word(objectAddress(object), at: sideTables.count * 16)
                sideTables[object] = table
                return (table >> 3) | 1 << 63
            case Code.closureCode: return HeapSnapshotReplay.closureCode
            case Code.asyncFunctionPointer: return HeapSnapshotReplay.asyncFunctionPointer
            case Code.runtimeCode: return HeapSnapshotReplay.runtimeCode
            case Code.thunkCode: return HeapSnapshotReplay.thunkCode
            case 0x0B...0x0F: return Code.literals[Int(code - 0x0B)]
            case 0x10...0x2F: return HeapSnapshotReplay.metadata(ofType: Int(code - 0x10))
            case 0x30...0x37: return objectAddress(object + Int(code) - 0x33)
            case 0x38...0x3F:
                let address = objectAddress(object + Int(code) - 0x3B)
                return address == 0 ? 0 : address | 0x8000_0000_0000_0001
            case 0x40...0x7F: return objectAddress(Int(code - 0x40))
            case 0x80...0xBF: return UInt64(code - 0x80)
            case 0xC0...0xDF: return objectAddress(object) &+ 8 * UInt64(code - 0xC0)
            case 0xE0...0xE7: return HeapSnapshotReplay.stackCopiedStart + 32 * UInt64(code - 0xE0)
            case Code.stackSlot: return HeapSnapshotReplay.stackCopiedStart + 8 * token.payload
            case Code.threadPointer: return HeapSnapshotReplay.defaultThreadPointer
            case Code.global: return HeapSnapshotReplay.starts[Area.data.rawValue] + 8 * token.payload
            case Code.typePart:
                // A type's slot (the payload's low 5 bits) at one of its structures' offsets.
                let offsets: [UInt64] = [0, 0x10, 0x18, 0x28, 0x200, 0x300, 0x400, 0x500]
                return HeapSnapshotReplay.typesBase + (token.payload & 31) * HeapSnapshotReplay.typeSlotSize
                    + offsets[Int(token.payload >> 5)]
            case Code.chunkHeader:
                guard object < placements.count else { return 0 }
                return UInt64(16 * description.groups[Int(placements[object].group)].chunks[Int(placements[object].chunk)].units)
                    | 1
            case Code.regionEdge:
                // A region's first or last word, or one past it.
                let area = Area.allCases[Int(token.payload) % Area.allCases.count]
                let length = UInt64(drafts[area.rawValue].bytes.count)
                return [start(area), start(area) &+ length &- 8, start(area) &+ length][
                    Int(token.payload) / Area.allCases.count % 3]
            case Code.literal16, Code.literal32, Code.literal64: return token.payload
            case Code.smallStringLow: return 0x6E69_676F_6C  // "login"
            case Code.smallStringHigh: return 0xE500_0000_0000_0000
            case Code.largeStringCount: return 0xD000_0000_0000_0008
            case Code.objectWide: return objectAddress(Int(token.payload))
            case Code.objectField:
                let address = objectAddress(Int(token.payload))
                return address == 0 ? 0 : address + 16
            default: return UInt64(code) << 56
            }
        }

        // The snapshot's parts.

        func regions() -> [ProcessSnapshot.Region] {
            var regions: [ProcessSnapshot.Region] = []
            for area in Area.allCases {
                let bytes = drafts[area.rawValue].bytes
                guard !bytes.isEmpty else { continue }
                let start = start(area)
                let copiedStart = area == .stack ? HeapSnapshotReplay.stackCopiedStart : start
                let path: String
                switch area {
                case .code, .types, .data: path = HeapSnapshotReplay.imagePath
                case .runtime: path = HeapSnapshotReplay.runtimePath
                case .heap: path = "[heap]"
                case .stack: path = "[stack]"
                default: path = ""
                }
                regions.append(
                    ProcessSnapshot.Region(
                        start: start, end: copiedStart + UInt64(bytes.count),
                        isWritable: !(area == .code || area == .runtime || (area == .types && description.flags & 4 == 0)),
                        isExecutable: area == .code || area == .runtime, path: path,
                        fileOffset: area == .types ? 0x10_0000 : 0, copiedStart: copiedStart, bytes: RegionBytes(copying: bytes)))
            }
            return regions
        }

        mutating func threads() -> [ProcessSnapshot.Thread] {
            guard !description.threads.isEmpty else {
                return [
                    ProcessSnapshot.Thread(
                        id: 1, name: "main", instructionPointer: HeapSnapshotReplay.closureCode + 0x10,
                        stackPointer: HeapSnapshotReplay.stackCopiedStart, framePointer: 0,
                        threadPointer: HeapSnapshotReplay.defaultThreadPointer, registers: [])
                ]
            }
            var threads: [ProcessSnapshot.Thread] = []
            for (index, spec) in description.threads.enumerated() {
                threads.append(
                    ProcessSnapshot.Thread(
                        id: Int32(index + 1), name: String(decoding: spec.name, as: UTF8.self),
                        instructionPointer: value(of: spec.instructionPointer), stackPointer: value(of: spec.stackPointer),
                        framePointer: value(of: spec.framePointer), threadPointer: value(of: spec.threadPointer),
                        registers: spec.registers.map { value(of: $0) }))
            }
            return threads
        }

        mutating func modules() -> [ModuleImage] {
            let image = HeapSnapshotReplay.starts[Area.code.rawValue]
            let runtime = HeapSnapshotReplay.starts[Area.runtime.rawValue]
            var modules = [
                ModuleImage(
                    path: HeapSnapshotReplay.imagePath, buildID: [], loadBias: image, start: image,
                    end: HeapSnapshotReplay.starts[Area.data.rawValue] + UInt64(drafts[Area.data.rawValue].bytes.count)),
                ModuleImage(
                    path: HeapSnapshotReplay.runtimePath, buildID: [], loadBias: runtime, start: runtime, end: runtime + 0x1000),
            ]
            for module in description.modules {
                let start = value(of: module.start)
                modules.append(
                    ModuleImage(
                        path: "/" + String(decoding: module.name, as: UTF8.self), buildID: [], loadBias: start, start: start,
                        end: value(of: module.end)))
            }
            return modules
        }

        mutating func instances() -> [UInt64] {
            guard description.instances.isEmpty else {
                return description.instances.prefix(HeapSnapshotReplay.maximumInstances).map { value(of: $0) }
            }
            // Unnamed: the first objects and the last, as a ledger would list live instances.
            return Array(objects.prefix(8)) + (objects.count > 8 ? [objects[objects.count - 1]] : [])
        }
    }

    // MARK: - Symbols

    /// Names for the input's fixed code and data addresses, as the real symbolizer would read
    /// them from the image: a closure, a thunk, a runtime function, a global and an async
    /// function pointer. Nothing else has a name.
    struct FixedSymbolizer: AddressSymbolizer {
        func symbolize(_ returnAddress: UInt64) -> [SymbolizedFrame] {
            let code = HeapSnapshotReplay.starts[Area.code.rawValue]
            let call = returnAddress &- 1
            var function: String? = nil
            if call >= code && call < code + 0x800 {
                function = "closure #1 in App.Screen.init() -> App.Screen"
            } else if call >= code + 0x800 && call < code + 0x1000 {
                function = "reabstraction thunk helper from @escaping @callee_guaranteed () -> () to @escaping () -> ()"
            } else if call >= HeapSnapshotReplay.runtimeCode && call < HeapSnapshotReplay.runtimeCode + 0x100 {
                function = "partial function for swift_task_switch"
            }
            return [SymbolizedFrame(address: returnAddress, function: function)]
        }

        func variable(at address: UInt64) -> String? {
            let data = HeapSnapshotReplay.starts[Area.data.rawValue]
            if address >= data && address < data + 8 { return "App.store : App.Store" }
            if address >= data + 8 && address < data + 16 { return "static App.Screen.shared : App.Screen" }
            if address == HeapSnapshotReplay.asyncFunctionPointer {
                return "async function pointer to closure #2 in App.Screen.load() async -> ()"
            }
            return nil
        }

        func closureParameters(at address: UInt64) -> [(name: String, type: String?)] {
            address == HeapSnapshotReplay.closureCode ? [("model", "App.Model"), ("screen", nil)] : []
        }

        var problems: [String] { [] }
    }
}
