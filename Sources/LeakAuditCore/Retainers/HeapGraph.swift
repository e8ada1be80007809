// The heap graph a retainer search walks: a node for each live Swift object (malloc's blocks, and
// objects met outside the walked heaps), its type and size, and the strong references each
// object's words hold, read from its type's layout.

extension RetainerSearch {
    /// Makes a node of every Swift object among malloc's blocks in use, so that objects no root
    /// reaches (tasks, cycles) are known too: at each block's start, or with `objectOffset` (a
    /// malloc interposer's header before each block, `checkHeapLayout`) that many bytes into it,
    /// or else at one of the other `headerOffsets` (the interposer's aligned blocks). Each of
    /// `sampled` (sorted) that lies in a block has its offset from the block's start kept in
    /// `sampleOffsets`, for the layout's check. Enumerating again replaces what it made.
    mutating func enumerateHeap(objectOffset: UInt64 = 0, sampled: [UInt64] = []) {
        // Before any type is read: a multi-payload enum's layout is in these sections.
        layout.multiPayloadEnumSections = foreignClasses.multiPayloadEnumSections
        layout.builtinTypeSections = foreignClasses.builtinTypeSections
        self.objectOffset = objectOffset
        (objects, nodeTypeIndexes, nodeSizes, largeSizes, streams, sampleOffsets) = ([], [], [], [:], [], [:])
        let offsets = objectOffset == 0 ? [0] : [objectOffset] + Self.headerOffsets.filter { $0 != objectOffset }
        // With a header, each object's block (its address less its offset): a free one is no object.
        var blockStarts: [UInt64] = []
        var ascending = true
        var nextSampled = 0
        heapWalk = MallocHeap.forEachBlock(in: memory) { block in
            while nextSampled < sampled.count, sampled[nextSampled] < block.address { nextSampled += 1 }
            while nextSampled < sampled.count, sampled[nextSampled] - block.address < UInt64(block.size) {
                sampleOffsets[sampled[nextSampled]] = sampled[nextSampled] - block.address
                nextSampled += 1
            }
            var found: (offset: UInt64, typeIndex: Int32)? = nil
            for offset in offsets where offset + 16 <= UInt64(block.size) {
                if let typeIndex = layout.objectTypeIndex(at: block.address + offset) {
                    found = (offset, typeIndex)
                    break
                }
            }
            guard let (offset, typeIndex) = found else {
                let start = block.address + objectOffset
                if objectOffset + 4 <= UInt64(block.size), let flags = memory.uint32(start), flags >> 16 == Self.stdioMagic {
                    streams.append(start)
                }
                return
            }
            if let last = objects.last, last >= block.address + offset { ascending = false }
            objects.append(block.address + offset)
            nodeTypeIndexes.append(typeIndex)
            appendSize(block.size - Int(offset))
            if objectOffset != 0 { blockStarts.append(block.address) }
        }
        walkedHeaps = heapWalk.walked
        freeBlocks = MallocHeap.freeBlocks(in: memory, walk: heapWalk)
        func isFree(_ node: Int) -> Bool {
            freeBlocks.addresses.contains(objectOffset == 0 ? objects[node] : blockStarts[node])
        }
        if !freeBlocks.addresses.isEmpty, objects.indices.contains(where: isFree) {
            // A free block whose stale words still read as an object: not one.
            let kept = objects.indices.filter { !isFree($0) }
            let sizes = kept.map { size(of: Int32($0)) }
            objects = kept.map { objects[$0] }
            nodeTypeIndexes = kept.map { nodeTypeIndexes[$0] }
            (nodeSizes, largeSizes) = ([], [:])
            for size in sizes { appendSize(size) }
        }
        if !ascending {
            // Regions out of order (never in a real snapshot): sorted, as the binary search needs.
            let order = objects.indices.sorted { objects[$0] < objects[$1] }
            objects = order.map { objects[$0] }
            nodeTypeIndexes = order.map { nodeTypeIndexes[$0] }
            let sizes = order.map { size(of: Int32($0)) }
            (nodeSizes, largeSizes) = ([], [:])
            for size in sizes { appendSize(size) }
        }
        parent = [Int32](repeating: Int32.min, count: objects.count)
        parentHold = [Int32](repeating: -1, count: objects.count)
        enumeratedCount = objects.count
        enumeratedOutsideHeaps = objects.indices.filter { !inWalkedHeap(objects[$0]) }.map(Int32.init)
    }

    /// Adds the next node's size.
    private mutating func appendSize(_ size: Int) {
        if size >= Int(UInt32.max) { largeSizes[Int32(nodeSizes.count)] = size }
        nodeSizes.append(UInt32(clamping: size))
    }

    /// The node's size in bytes.
    // Inlined, as are the lookups below (`node(at:)`'s): the search's mutating methods call them
    // for most words they read, and each call copied the whole search (272 bytes) to pass it.
    @inline(__always) func size(of node: Int32) -> Int {
        let size = nodeSizes[Int(node)]
        return size == UInt32.max ? largeSizes[node] ?? Int(size) : Int(size)
    }

    /// The enumerated node at `address`, by binary search; nil when none starts there.
    @inline(__always) func enumeratedNode(at address: UInt64) -> Int32? {
        let low = Self.firstEnumerated(in: objects, count: enumeratedCount, above: address, including: true)
        return low < enumeratedCount && objects[low] == address ? Int32(low) : nil
    }

    /// The index of the first enumerated node (the first `count` of `objects`, in address order)
    /// that starts above `address`, or at it when `including`: `count` when none does. Static, on
    /// the table alone: a debug build copied the whole search (every table retained and released)
    /// for each lookup of a method of it, most of a debug replay's time.
    @inline(__always) private static func firstEnumerated(
        in objects: [UInt64], count: Int, above address: UInt64, including: Bool
    ) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if objects[middle] < address || (!including && objects[middle] == address) {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low
    }

    /// Whether `address` lies in the main arena's `malloc_state` (in the C library's data): its
    /// lists and `top` name chunks, whose addresses lie in the last word of the block before.
    func isMallocState(_ address: UInt64) -> Bool {
        guard let arena = freeBlocks.mainArena else { return false }
        return address >= arena && address - arena < MallocHeap.mallocStateSize
    }

    /// The enumerated node outside the walked heaps (a chunk malloc mapped on its own) at
    /// `address`, by binary search among those few; nil when none starts there.
    @inline(__always) private func enumeratedNodeOutsideHeaps(at address: UInt64) -> Int32? {
        var low = 0
        var high = enumeratedOutsideHeaps.count
        while low < high {
            let middle = (low + high) / 2
            if objects[Int(enumeratedOutsideHeaps[middle])] < address { low = middle + 1 } else { high = middle }
        }
        guard low < enumeratedOutsideHeaps.count else { return nil }
        let node = enumeratedOutsideHeaps[low]
        return objects[Int(node)] == address ? node : nil
    }

    /// Whether `address` lies in a heap whose chunks were walked.
    @inline(__always) func inWalkedHeap(_ address: UInt64) -> Bool {
        MallocHeap.contains(walkedHeaps, address)
    }

    /// The node of the live object that `address` points at or into: an enumerated object by the
    /// block it lies in (an interior pointer: an element's address in an array's storage), any
    /// other only at its start (`node(at:)`). Untyped memory, stacks and registers reach objects
    /// this way; a Swift reference always points at its object's start. (A block's last word is
    /// also where the next chunk starts: malloc's own lists name chunks, so the main arena's words
    /// are never read as roots, `isMallocState`.)
    mutating func node(atOrInside address: UInt64) -> Int32? {
        guard address > 0xFFFF else { return nil }
        guard inWalkedHeap(address) else { return address & 7 == 0 ? node(at: address) : nil }
        let low = Self.firstEnumerated(in: objects, count: enumeratedCount, above: address, including: false)
        guard low > 0 else { return nil }
        let node = Int32(low - 1)
        return address - objects[low - 1] < UInt64(size(of: node)) ? node : nil
    }

    func nodeType(_ node: Int32) -> SwiftLayout.ObjectType {
        layout.typeTable[Int(nodeTypeIndexes[Int(node)])]
    }

    /// The node of the live object at `address`, adding it on first sight; nil when none starts there.
    mutating func node(at address: UInt64) -> Int32? {
        // Most words read are no object's address (a number, code, read-only data): told apart
        // before any table is searched, and never remembered (objectTypeIndex says no to them too).
        guard address & 7 == 0, address > 0xFFFF else { return nil }
        // In a walked heap, every object is among the enumerated ones. Most words that get this
        // far point elsewhere (code, metadata, strings), and the few heaps are searched before
        // the many objects.
        if inWalkedHeap(address) { return enumeratedNode(at: address) }
        if let node = enumeratedNodeOutsideHeaps(at: address) { return node }
        guard memory.isWritable(address) else { return nil }
        if let known = otherNodes[address] { return known >= 0 ? known : nil }
        guard let typeIndex = layout.objectTypeIndex(at: address) else {
            otherNodes[address] = -1
            return nil
        }
        let type = layout.typeTable[Int(typeIndex)]
        let index = Int32(objects.count)
        objects.append(address)
        nodeTypeIndexes.append(typeIndex)
        // Once the paths are found (their tables released), a node met by the dominator tree
        // needs none.
        if parent.count == index {
            parent.append(Int32.min)
            parentHold.append(-1)
        }
        appendSize(extent(of: address, fallback: type.instanceSize))
        otherNodes[address] = index
        return index
    }

    /// How many bytes the object at `address` spans: its malloc chunk's usable size when its header
    /// reads as one, else `fallback`.
    private func extent(of address: UInt64, fallback: Int) -> Int {
        guard let header = memory.word(address &- 8) else { return fallback }
        let size = header & ~7
        guard size >= 32, size & 15 == 0, size < 1 << 36, memory.word(address &- 16 &+ size &- 8) != nil else {
            return fallback
        }
        // An mmapped chunk (bit 1) has no neighbour whose first word it may use.
        let usable = header & 2 != 0 ? Int(size) - 16 : Int(size) - 8
        return Swift.max(usable, fallback)
    }

    /// Calls `body` with each object the node holds strongly, and how; with `opaque`, also each
    /// object that an `Unmanaged` or raw-pointer property points at or into; with `letsOnly`, only
    /// what a class instance's `let` properties hold.
    mutating func forEachReference(
        of node: Int32, opaque: Bool = false, letsOnly: Bool = false, _ body: (inout Self, Int32, Hold, UInt64?) -> Void
    ) {
        let address = objects[Int(node)]
        let end = size(of: node)
        guard wordsLeftToRead >= end / 8 else {
            ranOutOfWords = true
            return
        }
        wordsLeftToRead -= end / 8
        let type = nodeType(node)
        // A collection's elements, a closure's captures and a box's value can all be stored again.
        if letsOnly && (type.kind != .classInstance || type.collection != nil) { return }
        // `key`: a dictionary value's key, named in its hold (`.value(key:)`) only when the value
        // holds an object, since most values hold none.
        func visit(
            _ search: inout Self, offset: Int, hold: Hold, closureAllowed: Bool = true, enumDescriptor: UInt64? = nil,
            isFunction: Bool = false, interior: Bool = false, key: (address: UInt64, type: SwiftLayout.TypeSummary)? = nil
        ) {
            guard let word = search.memory.word(address &+ UInt64(offset)) else { return }
            let target = word & SwiftLayout.pointerMask
            guard let targetNode = interior ? search.node(atOrInside: target) : search.node(at: target) else { return }
            // A collection's storage never holds itself: a value that referred to it, stored into
            // it, would have made it shared, and the write would have copied it. Such a word is
            // stale bytes of an element (padding, a smaller enum case's unused payload). Nor does a
            // closure context: its captures are values computed before it was allocated, and a
            // closure that refers to itself does so through a box or an object, never its own
            // context; such a word is a stale one past its captures (malloc rounds a block up).
            if targetNode == node, type.collection != nil || type.kind == .closureContext { return }
            var hold = hold
            if let key { hold = .value(key: search.describeKey(at: key.address, key.type)) }
            if let enumDescriptor, let (type, name) = search.layout.payloadCase(ofEnum: enumDescriptor, holding: target) {
                switch hold {
                case .property(let property, _): hold = .property(property, enumCase: EnumCase(type: type, name: name))
                case .element(let index, _): hold = .element(index, enumCase: EnumCase(type: type, name: name))
                default: break
                }
            }
            // A function value is two words, its code (or async function pointer), then its
            // context; the code names the closure.
            var closure: UInt64? = nil
            if closureAllowed, search.nodeType(targetNode).kind == .closureContext {
                if offset >= 24, let function = search.memory.word(address &+ UInt64(offset - 8)),
                    search.isImageConstant(function)
                {
                    closure = function
                }
            } else if closureAllowed, isFunction, case .property = hold, offset >= 24,
                let function = search.memory.word(address &+ UInt64(offset - 8)), search.isCode(function)
            {
                // A closure that captures one object takes that object as its context: the
                // property holds the closure, and the closure the object.
                closure = function
            }
            body(&search, targetNode, hold, closure)
        }
        switch type.kind {
        case .classInstance:
            let fieldsEnd = Swift.min(type.instanceSize, end)
            // Field by field (sorted by offset), each word from 16 on read as part of the last
            // field that starts at or before it; one copy of each field's description, not one a
            // word.
            let fields = type.fields
            for fieldIndex in fields.indices {
                // Where the field ends (the next field's offset, or the instance's end): a
                // reference is a whole word of one field, so a word that runs past its field (a
                // Bool's word, a 17-byte instance's last) is bytes of another field, padding or
                // malloc's slack, never a reference.
                let fieldStart = fields[fieldIndex].offset
                let fieldEnd = fieldIndex + 1 < fields.count ? Swift.min(fields[fieldIndex + 1].offset, fieldsEnd) : fieldsEnd
                guard fieldStart < fieldEnd else { continue }
                // Its first word: the first of 16, 24, 32… at or past its start.
                var offset = fieldStart <= 16 ? 16 : 16 + (fieldStart - 16 + 7) / 8 * 8
                guard fieldEnd - offset >= 8 else { continue }
                let field = fields[fieldIndex]
                guard !(letsOnly && field.isVar) else { continue }
                guard field.ownership == .strong || (opaque && field.ownership == .opaque) else { continue }
                let hold = Hold.property(field.name)
                // The words a field of known layout (a multi-payload enum) holds references in.
                var shapedOffsets: [Int]? = nil
                if field.ownership == .strong, let shape = field.shape {
                    var offsets: [Int] = []
                    layout.referenceOffsets(
                        shape, at: address &+ UInt64(field.offset), span: fieldEnd - field.offset, base: field.offset,
                        into: &offsets)
                    shapedOffsets = offsets
                }
                while fieldEnd - offset >= 8 {
                    defer { offset += 8 }
                    if let shapedOffsets, !shapedOffsets.contains(offset) { continue }
                    if field.ownership == .strong {
                        visit(
                            &self, offset: offset, hold: hold, enumDescriptor: field.enumDescriptor,
                            isFunction: field.isFunction)
                    } else {
                        visit(&self, offset: offset, hold: hold, closureAllowed: false, interior: true)
                    }
                }
            }
            switch type.collection {
            case .array(let element)?:
                let stride = element.stride
                guard stride > 0, end > 32, let count = memory.word(address &+ 16), count < 1 << 32,
                    Self.isRead(element, opaque: opaque)
                else { break }
                let capacity = (end - 32) / stride
                for index in 0..<Swift.min(Int(count), capacity) {
                    let start = 32 + index * stride
                    guard let (words, interior) = valueWords(element, at: address &+ UInt64(start), opaque: opaque) else {
                        continue
                    }
                    for word in words {
                        visit(
                            &self, offset: start + word, hold: .element(index), closureAllowed: !interior,
                            enumDescriptor: element.enumDescriptor, interior: interior)
                    }
                }
            case .hashed(let key, let value)?:
                guard Self.isRead(key, opaque: opaque) || value.map({ Self.isRead($0, opaque: opaque) }) == true else { break }
                forEachHashedBucket(address: address, type: type, end: end, key: key, value: value) {
                    search, keyOffset, valueOffset in
                    if let valueOffset, let value,
                        let (words, interior) = search.valueWords(value, at: address &+ UInt64(valueOffset), opaque: opaque)
                    {
                        for word in words {
                            visit(
                                &search, offset: valueOffset + word, hold: .value(key: nil), closureAllowed: !interior,
                                interior: interior, key: (address &+ UInt64(keyOffset), key))
                        }
                    }
                    guard let (words, interior) = search.valueWords(key, at: address &+ UInt64(keyOffset), opaque: opaque)
                    else { return }
                    for word in words {
                        visit(&search, offset: keyOffset + word, hold: .member, closureAllowed: !interior, interior: interior)
                    }
                }
            case nil:
                break
            }
            if let tail = type.tailElements, Self.isRead(tail.element, opaque: opaque) {
                let (element, start) = (tail.element, tail.start)
                // A deque's ring: its `count` slots from its first slot, round the ring, when the
                // header says so within the block; every slot of the block otherwise.
                let slots = end > start ? (end - start) / element.stride : 0
                var ring: (first: Int, count: Int, capacity: Int)? = nil
                if let header = tail.dequeHeader, let capacity = memory.word(address &+ UInt64(header)),
                    let count = memory.word(address &+ UInt64(header + 8)),
                    let first = memory.word(address &+ UInt64(header + 16)), capacity > 0, capacity <= slots,
                    count <= capacity, first < capacity
                {
                    ring = (Int(first), Int(count), Int(capacity))
                }
                for index in 0..<(ring?.count ?? slots) {
                    let position = ring.map { ($0.first + index) % $0.capacity } ?? index
                    let slot = start + position * element.stride
                    if let (words, interior) = valueWords(element, at: address &+ UInt64(slot), opaque: opaque) {
                        for word in words {
                            visit(
                                &self, offset: slot + word, hold: .element(index), closureAllowed: !interior,
                                enumDescriptor: element.enumDescriptor, interior: interior)
                        }
                    }
                }
            }
        case .closureContext:
            let capturesEnd = type.capturesEnd.map { Swift.min($0, end) } ?? end
            if let shape = type.captureShape {
                for offset in shapedOffsets(shape, of: address, from: type.firstCapture, to: capturesEnd) {
                    visit(&self, offset: offset, hold: .capture)
                }
                break
            }
            var offset = type.firstCapture
            while offset + 8 <= capturesEnd {
                if !type.captureExclusions.contains(where: { $0.contains(offset) }) {
                    visit(&self, offset: offset, hold: .capture)
                }
                offset += 8
            }
        case .box:
            let valueEnd = type.boxedSize > 0 ? Swift.min(end, type.firstCapture + type.boxedSize) : end
            if let shape = type.boxedShape {
                for offset in shapedOffsets(shape, of: address, from: type.firstCapture, to: valueEnd) {
                    visit(&self, offset: offset, hold: .boxedValue)
                }
                break
            }
            var offset = type.firstCapture
            while offset + 8 <= valueEnd {
                visit(&self, offset: offset, hold: .boxedValue)
                offset += 8
            }
        case .task, .other:
            if type.isErrorBox, let value = layout.errorBoxValue(at: address) {
                // Its value's words only, read by what its type holds: past its size lie stale
                // bytes (a case without payload is a few bytes, malloc's block is larger).
                let valueEnd = Swift.min(end, value.offset + value.size)
                guard valueEnd > value.offset else { break }
                switch value.type.holds {
                case .notOwning:
                    break
                case .opaque:
                    guard opaque else { break }
                    var offset = value.offset
                    while offset + 8 <= valueEnd {
                        visit(&self, offset: offset, hold: .word, closureAllowed: false, interior: true)
                        offset += 8
                    }
                case .strong:
                    for offset in shapedOffsets(value.type.shape ?? .words, of: address, from: value.offset, to: valueEnd) {
                        visit(&self, offset: offset, hold: .word)
                    }
                }
                break
            }
            var offset = 16
            while offset + 8 <= end {
                visit(&self, offset: offset, hold: .word)
                offset += 8
            }
        }
    }

    /// The byte offsets, from the object at `address`, of the words that may hold a reference in
    /// the value of `shape` that starts `start` bytes into it and spans to `end`.
    private func shapedOffsets(_ shape: SwiftLayout.ValueShape, of address: UInt64, from start: Int, to end: Int) -> [Int] {
        var offsets: [Int] = []
        layout.referenceOffsets(shape, at: address &+ UInt64(start), span: end - start, base: start, into: &offsets)
        return offsets
    }

    /// The byte offsets of the words of a collection's value at `address` (of `summary`'s type)
    /// that are read, and how (`reading`); nil: none. An opaque existential (`any P`) is read by
    /// the type it holds (`SwiftLayout.existentialContents`): its buffer's first word when that
    /// is a reference or a box, the inline value's words by what its type holds, never the
    /// buffer's bytes past the value (stale) nor the metadata and witness tables after it. A
    /// value that may hold a strong reference is read by its shape when its layout is known (a
    /// struct field by field, a multi-payload enum by its case), never its padding nor the bytes
    /// its current case does not use.
    private func valueWords(_ summary: SwiftLayout.TypeSummary, at address: UInt64, opaque: Bool) -> (WordOffsets, Bool)? {
        if summary.isOpaqueExistential, let contents = layout.existentialContents(at: address) {
            return Self.reading(contents.holds, opaque: opaque).map { (WordOffsets(count: contents.words), $0) }
        }
        guard let reading = Self.reading(summary.holds, opaque: opaque) else { return nil }
        if summary.holds == .strong, let shape = summary.shape {
            var offsets: [Int] = []
            layout.referenceOffsets(shape, at: address, span: summary.stride, base: 0, into: &offsets)
            return (WordOffsets(count: offsets.count, listed: offsets), reading)
        }
        return (WordOffsets(count: summary.stride / 8), reading)
    }

    /// The byte offsets of a value's words that are read: the first `count` words, or those
    /// `listed` (a value read by its shape); no array for the first kind, the most frequent.
    struct WordOffsets: Sequence, IteratorProtocol {
        var count: Int
        var listed: [Int]? = nil
        private var index = 0

        init(count: Int, listed: [Int]? = nil) {
            self.count = count
            self.listed = listed
        }

        mutating func next() -> Int? {
            guard index < count else { return nil }
            defer { index += 1 }
            return listed?[index] ?? index * 8
        }
    }

    /// Whether any of a collection's values of `summary`'s type may be read.
    private static func isRead(_ summary: SwiftLayout.TypeSummary, opaque: Bool) -> Bool {
        summary.isOpaqueExistential || reading(summary.holds, opaque: opaque) != nil
    }

    /// Whether a collection's values that hold `holds` are read, and how (true: each word at or
    /// into an object; false: at its start; nil: not read): a value that may hold a strong
    /// reference always, at the start; a POD value that may be an `Unmanaged` or raw pointer only
    /// with `opaque` (with untyped memory), at or into; plain values never, whatever their bits
    /// and padding read as.
    private static func reading(_ holds: SwiftLayout.Ownership, opaque: Bool) -> Bool? {
        switch holds {
        case .strong: return false
        case .opaque: return opaque ? true : nil
        case .notOwning: return nil
        }
    }

    /// The occupied buckets of a native dictionary or set: the storage's `_scale` gives the
    /// bucket count, a bitmap after its stored properties marks the occupied ones, and `_rawKeys`
    /// and `_rawValues` (a set's `_rawElements`) point into the same object. Only occupied buckets are read: the others
    /// hold whatever was there before.
    private mutating func forEachHashedBucket(
        address: UInt64, type: SwiftLayout.ObjectType, end: Int, key: SwiftLayout.TypeSummary,
        value: SwiftLayout.TypeSummary?, _ body: (inout Self, Int, Int?) -> Void
    ) {
        func field(_ name: String) -> Int? { type.fields.first { $0.name == name }?.offset }
        guard let scaleOffset = field("_scale"), let keysOffset = field("_rawKeys") ?? field("_rawElements"),
            let scale = memory.byte(address &+ UInt64(scaleOffset)), scale < 40,
            let rawKeys = memory.word(address &+ UInt64(keysOffset))
        else { return }
        let buckets = 1 << Int(scale)
        // Every bucket's key (and value) must fit in the object: a damaged scale reads nothing.
        guard buckets <= end / Swift.max(1, key.stride + (value?.stride ?? 0)) else { return }
        let bitmap = (type.instanceSize + 7) & ~7
        let keysStart = Int(truncatingIfNeeded: Int64(bitPattern: rawKeys &- address))
        var valuesStart: Int? = nil
        if value != nil {
            guard let valuesOffset = field("_rawValues"), let rawValues = memory.word(address &+ UInt64(valuesOffset)) else {
                return
            }
            valuesStart = Int(truncatingIfNeeded: Int64(bitPattern: rawValues &- address))
        }
        // Subtracted, not added: the offsets come from the storage and may be near Int.max.
        guard keysStart >= bitmap, keysStart <= end - buckets * key.stride else { return }
        if let valuesStart, let value {
            guard valuesStart >= bitmap, valuesStart <= end - buckets * value.stride else { return }
        }
        for bucket in 0..<buckets {
            guard let word = memory.word(address &+ UInt64(bitmap + (bucket / 64) * 8)) else { return }
            guard word & (1 << UInt64(bucket % 64)) != 0 else { continue }
            body(&self, keysStart + bucket * key.stride, valuesStart.map { $0 + bucket * (value?.stride ?? 0) })
        }
    }

    /// A dictionary key as the path shows it: a string quoted, an integer as is.
    private func describeKey(at address: UInt64, _ key: SwiftLayout.TypeSummary) -> String? {
        if key.isString { return layout.string(at: address).map { "\"\($0)\"" } }
        if key.isInteger, let value = memory.word(address) {
            return key.stride == 8 ? String(Int64(bitPattern: value)) : String(value & 0xFFFF_FFFF)
        }
        return nil
    }

    /// Whether `address` lies in a mapping of an image's file: code, or an async function's
    /// descriptor (an async closure's "function" points at one, in read-only or relocated data).
    private func isImageConstant(_ address: UInt64) -> Bool {
        guard let index = memory.snapshot.regionIndex(containing: address) else { return false }
        return memory.snapshot.regions[index].path.hasPrefix("/")
    }

    /// Whether `address` lies in code: a mapped, executable region of the snapshot.
    func isCode(_ address: UInt64) -> Bool {
        guard let index = memory.snapshot.regionIndex(containing: address) else { return false }
        return memory.snapshot.regions[index].isExecutable
    }
}
