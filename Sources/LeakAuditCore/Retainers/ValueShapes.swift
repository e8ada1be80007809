// How the words of a value (a struct, a multi-payload enum) are read for references when its
// layout is known: a struct field by field, a multi-payload enum by its case. A word that is no
// part of the current case's payload holds nothing (the stale bytes of a larger case written
// before), nor does a struct's field of a plain type, nor its padding. Where anything is not
// known, every word is read, as any untyped value is (when in doubt, reachable).

extension SwiftLayout {
    /// How a value's bytes are read.
    indirect enum ValueShape: Sendable {
        /// Every word may hold a reference: the layout is not known.
        case words
        /// The first `bytes` bytes, word by word (a reference, a `String`, a closure), nothing past.
        case prefix(bytes: Int)
        /// Nothing: a type that holds no reference.
        case nothing
        /// A struct's fields, by offset; each spans up to the next one (or the value's end).
        case fields([(offset: Int, shape: ValueShape)])
        /// A multi-payload enum, read by its case.
        case cases(MultiPayloadEnum)
        /// A multi-payload enum whose tag is in bytes after its largest payload: payload cases
        /// take tags from 0, cases without payload the rest.
        case taggedCases(tagOffset: Int, tagBytes: Int, payloads: [ValueShape])
        /// An opaque existential (`any P`, `Any`): read by the type it holds (its fourth word).
        case existential
        /// An enum of one payload whose cases without payload lie in the payload's extra
        /// inhabitants (an optional of a struct): nothing when the place holds one the payload
        /// itself does not use, else the payload's shape.
        case unlessInhabitant(InhabitantPlace, ValueShape)
    }

    /// A multi-payload enum whose tag lies in its payload's spare bits (no extra tag bytes):
    /// the `swift5_mpenum` record's mask, of which the payload tag takes the most significant bits
    /// it needs, as Swift's RemoteMirror reads it (`MultiPayloadEnumTypeInfo`).
    struct MultiPayloadEnum: Sendable {
        /// Where the tag's mask starts in the payload, and its bytes.
        var tagMaskOffset: Int
        var tagMask: [UInt8]
        /// Each payload case's shape, in case order (payload cases come first).
        var payloads: [ValueShape]
        /// The payloads' common spare bits, the record's whole mask: the tag takes some, and
        /// the enum's extra inhabitants set them all.
        var spareBits = 0
    }

    /// The byte offsets, from `base`, of the words that may hold a reference in the value of
    /// `shape` at `address`, which spans `span` bytes (the value's own and what may follow it up
    /// to the next field: a struct's padding, an enum's extra tag bytes).
    func referenceOffsets(_ shape: ValueShape, at address: UInt64, span: Int, base: Int, into offsets: inout [Int]) {
        switch shape {
        case .nothing:
            return
        case .words:
            appendWords(from: base, to: base + span, into: &offsets)
        case .prefix(let bytes):
            appendWords(from: base, to: base + Swift.min(bytes, span), into: &offsets)
        case .fields(let fields):
            for (index, field) in fields.enumerated() where field.offset < span {
                let end = index + 1 < fields.count ? Swift.min(fields[index + 1].offset, span) : span
                referenceOffsets(
                    field.shape, at: address &+ UInt64(field.offset), span: end - field.offset, base: base + field.offset,
                    into: &offsets)
            }
        case .cases(let layout):
            guard let tag = payloadTag(layout, at: address, span: span) else {
                appendWords(from: base, to: base + span, into: &offsets)
                return
            }
            // A tag past the payload cases is a case without payload (or an optional's `nil`):
            // its payload area holds the case's index, no reference.
            guard tag < layout.payloads.count else { return }
            referenceOffsets(layout.payloads[tag], at: address, span: span, base: base, into: &offsets)
        case .taggedCases(let tagOffset, let tagBytes, let payloads):
            guard tagOffset + tagBytes <= span, let bytes = memory.bytes(address &+ UInt64(tagOffset), count: tagBytes) else {
                appendWords(from: base, to: base + span, into: &offsets)
                return
            }
            let tag = bytes.reversed().reduce(0) { $0 << 8 | Int($1) }
            guard tag < payloads.count else { return }
            referenceOffsets(payloads[tag], at: address, span: tagOffset, base: base, into: &offsets)
        case .unlessInhabitant(let place, let payload):
            if holdsExtraInhabitant(place, at: address, span: span) { return }
            referenceOffsets(payload, at: address, span: span, base: base, into: &offsets)
        case .existential:
            // The buffer's three words, of which the held value uses those its size needs; the
            // type's metadata and witness tables after it are no heap objects. A nil optional
            // has no metadata.
            let buffer = Swift.min(span, 24)
            guard span >= 32, let metadata = memory.word(address &+ 24) else {
                appendWords(from: base, to: base + span, into: &offsets)
                return
            }
            if metadata == 0 { return }
            guard let contents = existentialContents(at: address) else {
                appendWords(from: base, to: base + buffer, into: &offsets)
                return
            }
            guard contents.holds != .notOwning else { return }
            appendWords(from: base, to: base + Swift.min(buffer, contents.words * 8), into: &offsets)
        }
    }

    /// Whether the value at `address` holds, at `place`, an extra inhabitant its own type does
    /// not take: a case without payload of the enum around it. False when that cannot be read.
    private func holdsExtraInhabitant(_ place: InhabitantPlace, at address: UInt64, span: Int) -> Bool {
        let bytes: Int
        switch place.kind {
        case .pointer: bytes = 8
        case .counting(let count, _), .tag(let count, _): bytes = count
        }
        guard place.offset >= 0, place.offset + bytes <= span, bytes <= 8,
            let read = memory.bytes(address &+ UInt64(place.offset), count: bytes)
        else { return false }
        let value = read.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let index: UInt64
        switch place.kind {
        case .pointer:
            guard value < UInt64(Self.pointerInhabitants) else { return false }
            index = value
        case .counting(_, let first):
            guard value >= UInt64(first) else { return false }
            index = value - UInt64(first)
        case .tag(let count, let tags):
            guard value >= UInt64(tags) else { return false }
            index = (UInt64(1) << (8 * UInt64(count))) - 1 - value
        }
        return index >= UInt64(place.taken)
    }

    /// The 8-aligned word offsets in `start..<end`.
    private func appendWords(from start: Int, to end: Int, into offsets: inout [Int]) {
        var offset = (start + 7) & ~7
        while offset + 8 <= end {
            offsets.append(offset)
            offset += 8
        }
    }

    /// The payload tag of the enum value at `address`: its mask's bits, least significant first;
    /// nil when the mask does not fit in the value's span or cannot be read.
    private func payloadTag(_ layout: MultiPayloadEnum, at address: UInt64, span: Int) -> Int? {
        guard layout.tagMaskOffset + layout.tagMask.count <= span,
            let bytes = memory.bytes(address &+ UInt64(layout.tagMaskOffset), count: layout.tagMask.count)
        else { return nil }
        var tag = 0
        var bit = 0
        for (index, mask) in layout.tagMask.enumerated() where mask != 0 {
            for position in 0..<8 where mask & (1 << position) != 0 {
                if bytes[index] & (1 << position) != 0 { tag |= 1 << bit }
                bit += 1
            }
        }
        return tag
    }

    // MARK: - Shapes from metadata and descriptors

    /// The shape of a value of the type whose metadata is at `metadata`: a struct by its fields
    /// (offsets from its metadata's field offset vector), a multi-payload enum by its case; nil
    /// when neither is known (every word is read).
    func shape(ofValueMetadata metadata: UInt64) -> ValueShape? {
        if let known = valueShapes[metadata] { return known }
        valueShapes[metadata] = .some(nil)
        // Generic arguments' metadata may nest (a hostile snapshot's, without end).
        guard valueShapeDepth < Self.metadataDepth else { return nil }
        valueShapeDepth += 1
        defer { valueShapeDepth -= 1 }
        var result: ValueShape? = nil
        // An optional's metadata is an enum's of a kind of its own (0x202): `ContiguousArray<NIOAny?>`'s
        // elements are read by it.
        if let kind = memory.word(metadata), let descriptor = memory.word(metadata &+ 8),
            kind == 0x200 || kind == 0x201 || kind == 0x202,
            let arguments = genericArgumentLayouts(valueMetadata: metadata, descriptor: descriptor)
        {
            if kind != 0x200 {
                result = shape(ofEnum: descriptor, depth: 0, arguments: arguments)
                // An enum the record does not read (its tag in bytes after its payloads), lowered
                // from its cases when that gives the size its value witnesses say.
                if result == nil, let lowered = layout(ofNominal: descriptor, arguments: arguments),
                    lowered.size == valueSize(metadata)
                {
                    switch lowered.shape {
                    case .words: break
                    default: result = lowered.shape
                    }
                }
            } else {
                result = shape(ofStruct: descriptor, metadata: metadata, arguments: arguments)
            }
        }
        valueShapes[metadata] = .some(result)
        return result
    }

    /// The size a type's value witnesses give its values.
    func valueSize(_ metadata: UInt64) -> Int? {
        guard let valueWitnesses = memory.word(metadata &- 8), let size = memory.word(valueWitnesses &+ 64), size < 1 << 20
        else { return nil }
        return Int(size)
    }

    /// The layouts of a generic struct's or enum's arguments, which follow its descriptor in
    /// its metadata (none when it is not generic); nil when one is not known.
    func genericArgumentLayouts(valueMetadata metadata: UInt64, descriptor: UInt64) -> [ValueLayout]? {
        guard let flags = memory.uint32(descriptor) else { return nil }
        guard flags & 0x80 != 0 else { return [] }
        guard let count = memory.uint16(descriptor &+ 28 &+ 8), count < 16 else { return nil }
        var arguments: [ValueLayout] = []
        for index in 0..<UInt64(count) {
            guard let parameter = memory.byte(descriptor &+ 28 &+ 16 &+ index), parameter & 0x80 != 0,
                let argument = memory.word(metadata &+ 16 &+ index &* 8), let layout = layout(ofMetadata: argument)
            else { return nil }
            arguments.append(layout)
        }
        return arguments
    }

    /// A struct's fields: each field's offset (32 bits each, in the field offset vector, which
    /// starts `FieldOffsetVectorOffset` words into the metadata) and its type's shape.
    private func shape(ofStruct descriptor: UInt64, metadata: UInt64, arguments: [ValueLayout]) -> ValueShape? {
        guard let flags = memory.uint32(descriptor), flags & 0x1F == 17, let fieldDescriptor = memory.relative(descriptor &+ 16),
            let count = memory.uint32(descriptor &+ 20), count > 0, count < 1024,
            let vectorOffset = memory.uint32(descriptor &+ 24), vectorOffset > 0, vectorOffset < 1 << 16
        else { return nil }
        let records = fieldRecords(fieldDescriptor)
        guard records.count == Int(count) else { return nil }
        var fields: [(offset: Int, shape: ValueShape)] = []
        var sizes: [Int?] = []
        for (index, record) in records.enumerated() {
            guard let offset = memory.uint32(metadata &+ UInt64(vectorOffset) &* 8 &+ UInt64(index) &* 4), offset < 1 << 20
            else { return nil }
            fields.append((Int(offset), shape(ofMangledType: record.type, indirect: false, depth: 0, arguments: arguments)))
            sizes.append(layout(ofMangledType: record.type, arguments: arguments)?.size)
        }
        // Offsets must ascend (a field spans up to the next); else the layout is not understood.
        guard zip(fields, fields.dropFirst()).allSatisfy({ $0.offset <= $1.offset }) else { return nil }
        // A field lowered larger than its place (up to the next field, or the value's end) was
        // lowered wrongly: read it word by word.
        let end = valueSize(metadata) ?? Int.max
        for index in fields.indices {
            let place = (index + 1 < fields.count ? fields[index + 1].offset : end) - fields[index].offset
            if let size = sizes[index], size > place { fields[index].shape = .words }
        }
        if fields.allSatisfy({ if case .words = $0.shape { return true } else { return false } }) { return nil }
        return .fields(fields)
    }

    /// The shape of a stored value of the mangled type at `address`: nothing for a type that
    /// holds no reference (or a weak or unowned one), one word for a reference (and an indirect
    /// case's box), the bytes of a `String`, an array, a dictionary or set, a closure; a
    /// multi-payload enum by its case; else every word.
    private func shape(ofMangledType address: UInt64?, indirect: Bool, depth: Int, arguments: [ValueLayout] = [])
        -> ValueShape
    {
        if indirect { return .prefix(bytes: 8) }
        guard let address else { return .words }
        if referenceKind(ofMangledType: address) == .notOwning { return .nothing }
        if let descriptor = enumDescriptor(ofMangledType: address), depth < 4,
            let shape = shape(ofEnum: descriptor, depth: depth + 1)
        {
            return shape
        }
        // A struct, tuple, enum or existential whose layout is known from its type's name (and
        // the generic arguments of the value that holds it).
        if let lowered = layout(ofMangledType: address, arguments: arguments) {
            switch lowered.shape {
            case .words: break
            default: return lowered.shape
            }
        }
        if let size = captureSize(ofMangledType: address) { return .prefix(bytes: size) }
        guard var text = mangledCharacters(address) else { return .words }
        if text.hasSuffix("Sg") { text.removeLast(2) }
        if text == "SS" { return ValueLayout.stringShape }
        // Array, Dictionary, Set: one reference to their storage.
        if (text.hasPrefix("Say") || text.hasPrefix("SD") || text.hasPrefix("Sh")) && text.hasSuffix("G") {
            return .prefix(bytes: 8)
        }
        return .words
    }

    /// A multi-payload enum's shape, when its `swift5_mpenum` record says its tag lies in its
    /// payload's spare bits and nothing else is needed to read it: every payload case's payload
    /// known not to be empty (an empty payload is not counted as one, which would move the
    /// others' tags), no extra tag bytes (the mask holds every tag the cases need), and, with
    /// cases without payload, enough payload bits besides the spare ones (at least 32) that one
    /// tag value covers them all. Nil otherwise (every word is read).
    func shape(ofEnum descriptor: UInt64, depth: Int, arguments: [ValueLayout] = []) -> ValueShape? {
        // A generic enum's payloads depend on its arguments: not kept by descriptor.
        guard arguments.isEmpty else {
            return multiPayloadShape(descriptor, arguments: arguments) {
                shape(ofMangledType: $0, indirect: $1, depth: depth, arguments: arguments)
            }
        }
        if let known = enumShapes[descriptor] { return known }
        enumShapes[descriptor] = .some(nil)
        let result = multiPayloadShape(descriptor) { shape(ofMangledType: $0, indirect: $1, depth: depth) }
        enumShapes[descriptor] = .some(result)
        return result
    }

    /// A multi-payload enum's shape by the record, each payload's shape from `payloadShape`
    /// (its mangled type, and whether the case is indirect); nil when the record does not read
    /// it or every payload is read word by word.
    func multiPayloadShape(
        _ descriptor: UInt64, arguments: [ValueLayout] = [], payloadShape: (UInt64, Bool) -> ValueShape
    ) -> ValueShape? {
        // An enum whose size its image records is read by the record only when that size agrees
        // with it (its lowering says): else its tag takes bytes of its own (`multiPayload`).
        if builtinTypeLayout(of: descriptor) != nil {
            guard let lowered = layout(ofNominal: descriptor, arguments: arguments) else { return nil }
            switch lowered.shape {
            case .cases: break
            case .words: return nil
            default: return lowered.shape
            }
        }
        guard let layout = multiPayloadEnum(descriptor, payloadShape: payloadShape) else { return nil }
        if layout.payloads.allSatisfy({ if case .words = $0 { return true } else { return false } }) { return nil }
        return .cases(layout)
    }

    /// The record's reading of a multi-payload enum whose tag lies in its payloads' spare bits.
    func multiPayloadEnum(_ descriptor: UInt64, payloadShape: (UInt64, Bool) -> ValueShape) -> MultiPayloadEnum? {
        guard let record = multiPayloadEnumRecord(of: descriptor), let flags = memory.uint32(descriptor),
            flags & 0x1F == 18, let fieldDescriptor = memory.relative(descriptor &+ 16),
            let payloadWord = memory.uint32(descriptor &+ 20), let emptyCases = memory.uint32(descriptor &+ 24),
            let sizeFlags = memory.uint32(record &+ 4), sizeFlags & 1 != 0,
            let maskPlace = memory.uint32(record &+ 8)
        else { return nil }
        let payloadCases = Int(payloadWord & 0xFF_FFFF)
        let contentWords = Int(sizeFlags >> 16)
        let maskOffset = Int(maskPlace >> 16)
        let maskCount = Int(maskPlace & 0xFFFF)
        guard payloadCases >= 2, payloadCases < 1 << 16, maskCount > 0, maskCount <= 256,
            contentWords >= 2 + (maskCount + 3) / 4,
            let mask = memory.bytes(record &+ 12, count: maskCount)
        else { return nil }
        // Field records: the payload cases first, then the others.
        guard let sizes = memory.uint32(fieldDescriptor &+ 8), let count = memory.uint32(fieldDescriptor &+ 12),
            Int(count) == payloadCases + Int(emptyCases), sizes >> 16 >= 12
        else { return nil }
        var payloads: [ValueShape] = []
        for index in 0..<payloadCases {
            let entry = fieldDescriptor &+ 16 &+ UInt64(index) &* UInt64(sizes >> 16)
            guard let recordFlags = memory.uint32(entry), let type = memory.relative(entry &+ 4),
                !isEmptyPayload(type)
            else { return nil }
            payloads.append(payloadShape(type, recordFlags & 1 != 0))
        }
        let spareBits = mask.reduce(0) { $0 + $1.nonzeroBitCount }
        var tagValues = payloadCases - 1
        if emptyCases > 0 {
            // The payload's bits that are not spare number at least those of the mask's bytes.
            guard (maskOffset + maskCount) * 8 - spareBits >= 32 else { return nil }
            tagValues += 1
        }
        let tagBits = Int.bitWidth - tagValues.leadingZeroBitCount
        guard tagBits <= spareBits, tagBits <= 16 else { return nil }
        // The tag takes the most significant spare bits it needs.
        var tagMask = mask
        var kept = 0
        for index in tagMask.indices.reversed() {
            for position in (0..<8).reversed() where tagMask[index] & (1 << position) != 0 {
                if kept < tagBits { kept += 1 } else { tagMask[index] &= ~(1 << position) }
            }
        }
        return MultiPayloadEnum(tagMaskOffset: maskOffset, tagMask: tagMask, payloads: payloads, spareBits: spareBits)
    }

    /// Whether a payload's mangled type may be empty (zero-sized): `()`, or a struct without
    /// stored properties. Such a case is no payload case to the tag.
    private func isEmptyPayload(_ address: UInt64) -> Bool {
        guard let text = mangledCharacters(address) else { return true }
        if text == "yt" { return true }
        guard text == "#", let descriptor = symbolicReference(at: address), let flags = memory.uint32(descriptor)
        else { return false }
        guard flags & 0x1F == 17 else { return false }
        return memory.uint32(descriptor &+ 20) == 0
    }

    /// The size and alignment the image's `swift5_builtin` record gives the type described at
    /// `descriptor` (each record: its mangled name, a symbolic reference to the descriptor, then
    /// size, alignment and flags, stride and extra inhabitants, 32 bits each); nil without one.
    func builtinTypeLayout(of descriptor: UInt64) -> (size: Int, alignment: Int)? {
        if let layouts = builtinTypeLayouts { return layouts[descriptor] }
        var layouts: [UInt64: (size: Int, alignment: Int)] = [:]
        for section in builtinTypeSections {
            var record = section.lowerBound
            var seen = 0
            while record &+ 20 <= section.upperBound, seen < 1 << 16 {
                if let name = memory.relative(record), memory.byte(name &+ 5) == 0, let type = symbolicReference(at: name),
                    let size = memory.uint32(record &+ 4), size < 1 << 20, let flags = memory.uint32(record &+ 8)
                {
                    layouts[type] = (Int(size), Int(flags & 0xFFFF))
                }
                record = record &+ 20
                seen += 1
            }
        }
        builtinTypeLayouts = layouts
        return layouts[descriptor]
    }

    /// The `swift5_mpenum` record of the enum described at `descriptor`: each record is a
    /// mangled name (a symbolic reference to the enum's descriptor) and its contents, whose first
    /// word gives their size in 32-bit words (upper half) and flags (lower half).
    func multiPayloadEnumRecord(of descriptor: UInt64) -> UInt64? {
        if let records = multiPayloadEnumRecords { return records[descriptor] }
        var records: [UInt64: UInt64] = [:]
        for section in multiPayloadEnumSections {
            var record = section.lowerBound
            var seen = 0
            while record &+ 8 <= section.upperBound, seen < 1 << 16, let sizeFlags = memory.uint32(record &+ 4) {
                let contentWords = UInt64(sizeFlags >> 16)
                guard contentWords > 0 else { break }
                if let name = memory.relative(record), memory.byte(name &+ 5) == 0,
                    let enumDescriptor = symbolicReference(at: name)
                {
                    records[enumDescriptor] = record
                }
                record = record &+ 4 &+ contentWords &* 4
                seen += 1
            }
        }
        multiPayloadEnumRecords = records
        return records[descriptor]
    }
}
