// A value's layout from its type's mangled name, as Swift's RemoteMirror lowers a type from a
// process's reflection records (TypeLowering.cpp): a struct's fields one after the other, each at
// its alignment; a tuple's elements the same; an enum from its cases (a single payload's extra
// inhabitants, a multi-payload enum's spare bits or extra tag bytes); references, strings,
// collections, closures and existentials by their known sizes; ranges as their two bounds. A
// generic parameter (`x`, `q_`) takes its argument's layout, from the metadata of the value that
// holds it or from the mangled name's own arguments (`Foo<Int>`). Anything not known for certain
// (a type without reflection records, a C type, a function inside a tuple, an extra inhabitant
// count that decides a size and is not known) makes the whole value unknown: its words are read
// as before, every one (when in doubt, reachable).

extension SwiftLayout {
    /// What is known of a type's extra inhabitants (bit patterns no value uses, which an enum
    /// around it takes for its cases without payload, so that it needs no tag byte).
    enum ExtraInhabitants: Equatable, Sendable {
        /// None: an enum around it adds tag bytes.
        case none
        case exactly(Int)
        /// At least this many (a pointer's, a String's: more than any enum needs here).
        case atLeast(Int)
        case unknown

        /// Whether `cases` cases without payload fit in them; nil when that is not known.
        func hold(_ cases: Int) -> Bool? {
            switch self {
            case .none: return cases == 0
            case .exactly(let count): return cases <= count
            case .atLeast(let count): return cases <= count ? true : nil
            case .unknown: return nil
            }
        }

        /// Those left once `cases` of them are taken.
        func removing(_ cases: Int) -> ExtraInhabitants {
            switch self {
            case .none, .unknown: return self
            case .exactly(let count): return count > cases ? .exactly(count - cases) : .none
            case .atLeast(let count): return count > cases ? .atLeast(count - cases) : .unknown
            }
        }

        /// A struct's or tuple's: those of the field that has the most.
        static func most(_ first: ExtraInhabitants, _ second: ExtraInhabitants) -> ExtraInhabitants {
            switch (first, second) {
            case (.unknown, _), (_, .unknown): return .unknown
            case (.none, let other), (let other, .none): return other
            case (.exactly(let a), .exactly(let b)): return .exactly(Swift.max(a, b))
            case (.exactly(let a), .atLeast(let b)), (.atLeast(let a), .exactly(let b)), (.atLeast(let a), .atLeast(let b)):
                return .atLeast(Swift.max(a, b))
            }
        }
    }

    /// A value's size, alignment, extra inhabitants and how its words are read.
    struct ValueLayout: Sendable {
        var size: Int
        var alignment: Int
        var extraInhabitants: ExtraInhabitants
        var shape: ValueShape
        /// Where its extra inhabitants lie, when known: an enum's case without payload (an
        /// optional's `nil`) stored there is told from a value, whose other bytes it leaves as
        /// they were.
        var inhabitants: InhabitantPlace? = nil

        /// A strong reference (a class instance, an array, a dictionary, a set, an indirect
        /// case's box): the words below 4096 are its extra inhabitants (Linux's least valid
        /// pointer), extra inhabitant `i` the word `i`.
        static let reference = ValueLayout(
            size: 8, alignment: 8, extraInhabitants: .exactly(pointerInhabitants), shape: .prefix(bytes: 8),
            inhabitants: InhabitantPlace(offset: 0, kind: .pointer))
        /// A raw or `Unmanaged` pointer: may carry a retained reference, read as one.
        static let pointer = ValueLayout(size: 8, alignment: 8, extraInhabitants: .unknown, shape: .prefix(bytes: 8))
        /// A thick closure: its code (whose pointer has a reference's extra inhabitants), then
        /// its context.
        static let closure = ValueLayout(
            size: 16, alignment: 8, extraInhabitants: .exactly(pointerInhabitants), shape: .prefix(bytes: 16),
            inhabitants: InhabitantPlace(offset: 0, kind: .pointer))
        /// A `String` or `Character`: its count and flags, never a reference, then its object
        /// (a small string's bytes, or its storage), which has a reference's extra inhabitants.
        /// A case of an enum around it that does not use it (`case other(String)`, `case
        /// generic`) writes only the object word's extra inhabitant and leaves the first word as
        /// it was.
        static let string = ValueLayout(
            size: 16, alignment: 8, extraInhabitants: .exactly(pointerInhabitants), shape: stringShape,
            inhabitants: InhabitantPlace(offset: 8, kind: .pointer))
        static let stringShape = ValueShape.fields([(offset: 0, shape: .nothing), (offset: 8, shape: .prefix(bytes: 8))])

        /// A generic argument whose layout is not known (one that refers to the type being
        /// lowered): a field or payload of its type is not known either, a collection of it is.
        static let unknownArgument = ValueLayout(size: -1, alignment: 1, extraInhabitants: .unknown, shape: .words)
        var isUnknownArgument: Bool { size < 0 }

        static func plain(_ size: Int, extraInhabitants: ExtraInhabitants = .none) -> ValueLayout {
            ValueLayout(size: size, alignment: Swift.max(1, size), extraInhabitants: extraInhabitants, shape: .nothing)
        }

        /// A `Bool`, or an enum of `cases` cases without payload: its byte (or two) counts its
        /// cases, and the values from `cases` on are its extra inhabitants.
        static func counting(_ size: Int, cases: Int) -> ValueLayout {
            var layout = plain(size, extraInhabitants: .exactly((1 << (8 * size)) - cases))
            layout.inhabitants = InhabitantPlace(offset: 0, kind: .counting(bytes: size, first: cases))
            return layout
        }
    }

    /// A pointer's extra inhabitants (a reference's, a function's, a type's metadata's): the
    /// values below Linux's least valid pointer, 4096, as the compiler counts them.
    static let pointerInhabitants = 4096

    /// Where a value keeps its extra inhabitants, how they are told from its values, and how
    /// many of them the enums it is made of took (an optional's `nil` takes the first).
    struct InhabitantPlace: Sendable {
        enum Kind: Sendable {
            /// A pointer's word: extra inhabitant `i` is the value `i`, below 4096.
            case pointer
            /// A little-endian number of `bytes` bytes whose values from `first` on are extra
            /// inhabitants (`first + i`): a `Bool`'s byte, an enum's without payload.
            case counting(bytes: Int, first: Int)
            /// A multi-payload enum's tag bytes, whose values from `tags` on are extra
            /// inhabitants, counting down from all ones (`~i`).
            case tag(bytes: Int, tags: Int)
        }

        var offset: Int
        var kind: Kind
        var taken = 0
    }

    /// The most nested types one lowering reads, and the most nominal types it lowers. Each
    /// struct a field's type nests takes two steps (its name, then its descriptor), and a
    /// standard library number named by descriptor two more (`UInt8`, then `Builtin.Int8`):
    /// swift-nio's `NIOPooledRecvBufferAllocator` reaches `_UInt24._backing`'s `Builtin.Int8` at
    /// depth 10.
    static let loweringDepth = 24
    static let loweringBudget = 512
    /// The most generic arguments' metadata nested in one value's, read for their shapes.
    static let metadataDepth = 8

    /// The layout of a value of the mangled type at `address`, whose generic parameters (depth 0)
    /// are `arguments`; nil when any part of it is not known.
    func layout(ofMangledType address: UInt64?, arguments: [ValueLayout] = []) -> ValueLayout? {
        var budget = Self.loweringBudget
        return layout(ofMangledType: address, arguments: arguments, depth: 0, budget: &budget)
    }

    private func layout(ofMangledType address: UInt64?, arguments: [ValueLayout], depth: Int, budget: inout Int)
        -> ValueLayout?
    {
        guard let address, depth < Self.loweringDepth else { return nil }
        if arguments.isEmpty, let known = mangledLayouts[address] { return known }
        let cuts = loweringCuts
        let result = parseLayout(address, arguments: arguments, depth: depth, budget: &budget)
        // Only a complete answer is kept: one cut short by the budget, or by a type met inside
        // itself, may be known elsewhere.
        if arguments.isEmpty, loweringCuts == cuts, result != nil || budget > 0 { mangledLayouts[address] = .some(result) }
        return result
    }

    /// The layout of a value of the type whose metadata is at `metadata` (a generic argument):
    /// size, alignment and extra inhabitants from its value witnesses, exact; read by its shape.
    func layout(ofMetadata metadata: UInt64) -> ValueLayout? {
        guard let valueWitnesses = memory.word(metadata &- 8), let size = memory.word(valueWitnesses &+ 64),
            size < 1 << 20, let flags = memory.uint32(valueWitnesses &+ 80),
            let extraInhabitants = memory.uint32(valueWitnesses &+ 84), let kind = memory.word(metadata)
        else { return nil }
        let count = Int(extraInhabitants)
        var layout = ValueLayout(
            size: Int(size), alignment: Int(flags & 0xFF) + 1, extraInhabitants: count == 0 ? .none : .exactly(count),
            shape: .words)
        switch kind {
        case 0:
            layout.shape = .prefix(bytes: 8)
            layout.inhabitants = InhabitantPlace(offset: 0, kind: .pointer)
        case 0x200, 0x201, 0x202:
            if let shape = shape(ofValueMetadata: metadata) {
                layout.shape = shape
            } else if referenceKind(ofValueMetadata: metadata, valueWitnesses: valueWitnesses) == .notOwning {
                layout.shape = .nothing
            }
            // Where its extra inhabitants lie, from its lowering when that agrees with its
            // value witnesses (an optional of it is then told `nil` by them).
            if let descriptor = memory.word(metadata &+ 8),
                let arguments = genericArgumentLayouts(valueMetadata: metadata, descriptor: descriptor),
                let lowered = self.layout(ofNominal: descriptor, arguments: arguments), lowered.size == layout.size,
                lowered.extraInhabitants == layout.extraInhabitants
            {
                layout.inhabitants = lowered.inhabitants
            }
        case 0x303 where isOpaqueExistential(metadata: metadata):
            layout.shape = .existential
            layout.inhabitants = InhabitantPlace(offset: 24, kind: .pointer)
        default:
            break
        }
        return layout
    }

    // MARK: - Mangled names

    /// What the parser keeps on its stack: mangled names are postfix, each operator taking what
    /// came before it (Swift's Demangler works the same way).
    private enum Term {
        case type(ValueLayout)
        /// A type whose layout is not known (a generic parameter without an argument): enough
        /// for a collection's argument, which does not change its layout.
        case unknownType
        /// A nominal type's descriptor, its generic arguments (if any) still to come.
        case nominal(UInt64)
        /// One of the standard library's generic types, its arguments still to come.
        case standardGeneric(StandardGeneric)
        case protocolDescriptor(UInt64)
        /// `y`: the start of a list of generic arguments, or an empty list.
        case listStart
        /// `_`: after a tuple's first element or a protocol list's first protocol.
        case firstElement
        /// A tuple element's label.
        case label
    }

    /// The most copies one repeated substitution pushes (`S2S`, `A3B`).
    private static let maximumRepeats = 64

    private enum StandardGeneric {
        /// Array, ContiguousArray, Dictionary, Set: one reference to their storage.
        case collection
        case optional
        /// UnsafePointer, UnsafeMutablePointer, Unmanaged.
        case pointer
        /// Range, ClosedRange: two bounds, the lower one first.
        case range
    }

    /// The standard library's types that the parser knows by their `s<length><name><kind>` name.
    private static let namedStandardTypes: [String: ValueLayout] = [
        "4Int8V": .plain(1), "5UInt8V": .plain(1), "5Int16V": .plain(2), "6UInt16V": .plain(2), "5Int32V": .plain(4),
        "6UInt32V": .plain(4), "5Int64V": .plain(8), "6UInt64V": .plain(8), "13OpaquePointerV": .pointer,
    ]

    private static let namedStandardGenerics: [String: StandardGeneric] = [
        "15ContiguousArrayV": .collection, "9UnmanagedV": .pointer,
    ]

    private func parseLayout(_ address: UInt64, arguments: [ValueLayout], depth: Int, budget: inout Int) -> ValueLayout? {
        // A thick closure (`yyc`, `SiSSYaKc`, optional or not): the function grammar is not read.
        if captureSize(ofMangledType: address) == 16 { return .closure }
        var stack: [Term] = []
        // What Swift's demangler registers as it goes, for `A…` to refer back to: symbolic
        // references, bound generic types, optionals, named standard library types and every
        // identifier (a tuple label too), in that order (Demangler.cpp's `addSubstitution`).
        var substitutions: [Term] = []
        var position = address
        var steps = 0

        func lowered(_ term: Term?) -> ValueLayout? {
            switch term {
            case .type(let layout)?: return layout
            case .nominal(let descriptor)?:
                return layout(ofNominal: descriptor, arguments: [], depth: depth + 1, budget: &budget)
            default: return nil
            }
        }
        func popType() -> ValueLayout? { lowered(stack.popLast()) }
        /// Pushes `term` `count` times; false when that is too many.
        func push(_ term: Term, count: Int) -> Bool {
            guard count >= 1, count <= Self.maximumRepeats, stack.count + count <= 256 else { return false }
            stack.append(contentsOf: repeatElement(term, count: count))
            return true
        }
        /// `A`: substitutions by index, each a letter (lower case: more follow), a count of
        /// repeats before it, or `<n>_` for an index past 25 (Demangler.cpp's
        /// `demangleMultiSubstitutions`).
        func pushSubstitutions() -> Bool {
            var repeats = 1
            var counted: Int? = nil
            while let code = next() {
                position &+= 1
                switch code {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
                    let isLast = code <= UInt8(ascii: "Z")
                    let index = Int(code - (isLast ? UInt8(ascii: "A") : UInt8(ascii: "a")))
                    guard index < substitutions.count, push(substitutions[index], count: repeats) else { return false }
                    if isLast { return true }
                    repeats = 1
                    counted = nil
                case UInt8(ascii: "_"):
                    let index = (counted ?? -1) + 27
                    return index < substitutions.count && push(substitutions[index], count: 1)
                case 0x30...0x39:
                    counted = number(from: Int(code - 0x30), below: 10_000)
                    repeats = counted ?? 1
                default:
                    return false
                }
            }
            return false
        }
        func next() -> UInt8? { memory.byte(position).flatMap { $0 == 0 ? nil : $0 } }
        func isDigit(_ byte: UInt8?) -> Bool { byte.map { (0x30...0x39).contains($0) } ?? false }
        /// The decimal number whose digits follow, `initial` its value so far, read while it is
        /// below `limit` (a hostile name's digits do not overflow it).
        func number(from initial: Int = 0, below limit: Int) -> Int {
            var value = initial
            while let digit = next(), isDigit(digit), value < limit {
                value = value * 10 + Int(digit - 0x30)
                position &+= 1
            }
            return value
        }

        while let byte = next() {
            steps += 1
            guard steps < 256 else { return nil }
            position &+= 1
            switch byte {
            case 0x01, 0x02:
                guard let descriptor = symbolicReference(at: position &- 1), let flags = memory.uint32(descriptor) else {
                    return nil
                }
                position &+= 4
                let term: Term
                switch flags & 0x1F {
                case 3: term = .protocolDescriptor(descriptor)
                case 16, 17, 18: term = .nominal(descriptor)
                default: return nil
                }
                stack.append(term)
                substitutions.append(term)
            case UInt8(ascii: "S"):
                // `S<count><type>` pushes a standard type `count` times (`S2S`: two Strings).
                let count = isDigit(next()) ? number(below: 10_000) : 1
                guard let code = next() else { return nil }
                position &+= 1
                let term: Term
                switch code {
                case UInt8(ascii: "i"), UInt8(ascii: "u"), UInt8(ascii: "d"): term = .type(.plain(8))
                case UInt8(ascii: "f"): term = .type(.plain(4))
                case UInt8(ascii: "b"): term = .type(.counting(1, cases: 2))
                case UInt8(ascii: "S"), UInt8(ascii: "J"): term = .type(.string)
                case UInt8(ascii: "a"), UInt8(ascii: "D"), UInt8(ascii: "h"): term = .standardGeneric(.collection)
                case UInt8(ascii: "q"): term = .standardGeneric(.optional)
                case UInt8(ascii: "p"), UInt8(ascii: "P"): term = .standardGeneric(.pointer)
                case UInt8(ascii: "n"), UInt8(ascii: "N"): term = .standardGeneric(.range)
                case UInt8(ascii: "v"), UInt8(ascii: "V"): term = .type(.pointer)
                case UInt8(ascii: "g") where count == 1:
                    guard let wrapped = popType(), let optional = singlePayload(wrapped, emptyCases: 1) else { return nil }
                    term = .type(optional)
                    substitutions.append(term)
                default: return nil
                }
                guard push(term, count: count) else { return nil }
            case UInt8(ascii: "A"):
                guard pushSubstitutions() else { return nil }
            case UInt8(ascii: "s"):
                // `s<length><name><kind>`: a standard library type spelled out.
                let length = number(below: 100)
                guard length > 0, let bytes = memory.bytes(position, count: length + 1) else { return nil }
                position &+= UInt64(length + 1)
                let name = "\(length)" + String(decoding: bytes, as: UTF8.self)
                let term: Term
                if let known = Self.namedStandardTypes[name] {
                    term = .type(known)
                } else if let generic = Self.namedStandardGenerics[name] {
                    term = .standardGeneric(generic)
                } else {
                    return nil
                }
                stack.append(term)
                // The name's identifier, then the type.
                substitutions.append(.label)
                substitutions.append(term)
            case UInt8(ascii: "y"):
                stack.append(.listStart)
            case UInt8(ascii: "_"):
                stack.append(.firstElement)
            case UInt8(ascii: "G"):
                // The arguments back to the list's start, a nested type's parents' first, each
                // level after `_` (`JSONSchema.CoreContext<Format>` is `…y_…G`): its descriptor
                // counts them all, and its fields name the outermost level's by `x`, `q_`.
                var terms: [Term] = []
                argumentsLoop: while true {
                    switch stack.last {
                    case .listStart?: break argumentsLoop
                    case .firstElement?: stack.removeLast()
                    case .type?, .nominal?, .unknownType?:
                        guard terms.count < 16, let term = stack.popLast() else { return nil }
                        terms.append(term)
                    default: return nil
                    }
                }
                stack.removeLast()
                terms.reverse()
                let bound: ValueLayout
                switch stack.popLast() {
                // A collection or pointer is one word whatever its arguments.
                case .standardGeneric(.collection)?: bound = .reference
                case .standardGeneric(.pointer)?: bound = .pointer
                case .standardGeneric(.optional)?:
                    guard terms.count == 1, let wrapped = lowered(terms[0]),
                        let optional = singlePayload(wrapped, emptyCases: 1)
                    else { return nil }
                    bound = optional
                case .standardGeneric(.range)?:
                    guard terms.count == 1, let bounds = lowered(terms[0]) else { return nil }
                    bound = aggregate([bounds, bounds])
                case .nominal(let descriptor)?:
                    // An argument not known is an error only where a field or payload has its type.
                    let list = terms.map { lowered($0) ?? .unknownArgument }
                    guard let layout = layout(ofNominal: descriptor, arguments: list, depth: depth + 1, budget: &budget)
                    else { return nil }
                    bound = layout
                default: return nil
                }
                stack.append(.type(bound))
                substitutions.append(.type(bound))
            case UInt8(ascii: "t"):
                guard let tuple = popTuple(&stack, lowered) else { return nil }
                stack.append(.type(tuple))
            case UInt8(ascii: "p"):
                guard let existential = popExistential(&stack) else { return nil }
                stack.append(.type(existential))
            case UInt8(ascii: "x"):
                stack.append(Self.term(arguments.first))
            case UInt8(ascii: "q"):
                // `q_` is the second parameter, `q<n>_` the (n+2)th; `qd…` (a nested depth) is not read.
                let index = isDigit(next()) ? number(below: 1000) + 2 : 1
                guard next() == UInt8(ascii: "_") else { return nil }
                position &+= 1
                stack.append(Self.term(index < arguments.count ? arguments[index] : nil))
            case UInt8(ascii: "X"):
                guard let code = next() else { return nil }
                position &+= 1
                switch code {
                case UInt8(ascii: "w"), UInt8(ascii: "o"):
                    // weak, unowned: a reference that keeps nothing.
                    guard stack.popLast() != nil else { return nil }
                    stack.append(.type(ValueLayout(size: 8, alignment: 8, extraInhabitants: .unknown, shape: .nothing)))
                case UInt8(ascii: "u"):
                    // unowned(unsafe): may be a retained reference (`Unmanaged`), read as one.
                    guard stack.popLast() != nil else { return nil }
                    stack.append(.type(.pointer))
                case UInt8(ascii: "l"):
                    // AnyObject: `yXl`.
                    guard case .listStart? = stack.popLast() else { return nil }
                    stack.append(.type(.reference))
                default: return nil
                }
            case UInt8(ascii: "B"):
                guard let code = next() else { return nil }
                position &+= 1
                switch code {
                case UInt8(ascii: "o"), UInt8(ascii: "b"): stack.append(.type(.reference))
                case UInt8(ascii: "p"): stack.append(.type(.pointer))
                case UInt8(ascii: "w"): stack.append(.type(.plain(8)))
                case UInt8(ascii: "i"), UInt8(ascii: "f"):
                    // `Bi<bits>_`, `Bf<bits>_`: the builtin number a standard library number
                    // stores (`UInt64._value`), reached when a field names `UInt64` by its
                    // descriptor (from another module, a symbolic reference, not `s6UInt64V`).
                    let bits = number(below: 1000)
                    guard next() == UInt8(ascii: "_"),
                        let number = Self.builtinNumber(bits: bits, float: code != UInt8(ascii: "i"))
                    else { return nil }
                    position &+= 1
                    stack.append(.type(number))
                default: return nil
                }
            case 0x31...0x39:
                // A tuple element's label: `<length><name>`.
                let length = number(from: Int(byte - 0x30), below: 1000)
                position &+= UInt64(length)
                stack.append(.label)
                substitutions.append(.label)
            default:
                return nil
            }
        }
        guard stack.count == 1 else { return nil }
        return popType()
    }

    /// A generic parameter's term: its argument's layout, when known.
    private static func term(_ argument: ValueLayout?) -> Term {
        guard let argument, !argument.isUnknownArgument else { return .unknownType }
        return .type(argument)
    }

    /// A builtin integer of `bits` bits (`Builtin.Int1`, `Bool`'s, leaves 254 byte values
    /// unused) or float (`Builtin.FPIEEE80`: 10 bytes, aligned to 16); nil for a width Swift has not.
    private static func builtinNumber(bits: Int, float: Bool) -> ValueLayout? {
        if float {
            switch bits {
            case 16, 32, 64: return .plain(bits / 8)
            case 80: return ValueLayout(size: 10, alignment: 16, extraInhabitants: .none, shape: .nothing)
            default: return nil
            }
        }
        switch bits {
        case 1: return .counting(1, cases: 2)
        case 8, 16, 32, 64, 128: return .plain(bits / 8)
        default: return nil
        }
    }

    /// `t`: a tuple's elements, last first, each a type and perhaps a label, the first one
    /// followed by `_`; `yt` is the empty tuple.
    private func popTuple(_ stack: inout [Term], _ lowered: (Term?) -> ValueLayout?) -> ValueLayout? {
        if case .listStart? = stack.last {
            stack.removeLast()
            return ValueLayout(size: 0, alignment: 1, extraInhabitants: .none, shape: .nothing)
        }
        var elements: [ValueLayout] = []
        var isFirst = false
        while !isFirst {
            if case .firstElement? = stack.last {
                stack.removeLast()
                isFirst = true
            }
            if case .label? = stack.last { stack.removeLast() }
            guard elements.count < 64, let element = lowered(stack.popLast()) else { return nil }
            elements.append(element)
        }
        return aggregate(elements.reversed())
    }

    /// `p`: an existential of the protocols before it (`yp` is `Any`). One not bound to classes
    /// is a three-word buffer, the held type's metadata and a witness table per protocol; one
    /// bound to classes is a reference and the witness tables. A special protocol (`Error`)
    /// is not read.
    private func popExistential(_ stack: inout [Term]) -> ValueLayout? {
        var protocols: [UInt64] = []
        if case .listStart? = stack.last {
            stack.removeLast()
        } else {
            while case .protocolDescriptor(let descriptor)? = stack.last {
                protocols.append(descriptor)
                stack.removeLast()
            }
            guard case .firstElement? = stack.popLast(), case .protocolDescriptor(let first)? = stack.popLast() else {
                return nil
            }
            protocols.append(first)
        }
        guard protocols.count < 16 else { return nil }
        var classBound = false
        for descriptor in protocols {
            guard let flags = memory.uint32(descriptor) else { return nil }
            let specific = flags >> 16
            // Bit 0 clear: bound to classes; bits 2...7: a special protocol.
            guard (specific >> 2) & 0x3F == 0 else { return nil }
            if specific & 1 == 0 { classBound = true }
        }
        let tables = protocols.count * 8
        // The reference's word, or the held type's metadata's, has a pointer's extra inhabitants.
        if classBound {
            return ValueLayout(
                size: 8 + tables, alignment: 8, extraInhabitants: .exactly(Self.pointerInhabitants),
                shape: .prefix(bytes: 8), inhabitants: InhabitantPlace(offset: 0, kind: .pointer))
        }
        return ValueLayout(
            size: 32 + tables, alignment: 8, extraInhabitants: .exactly(Self.pointerInhabitants), shape: .existential,
            inhabitants: InhabitantPlace(offset: 24, kind: .pointer))
    }

    /// Fields or elements laid out one after the other, each at its alignment. Its extra
    /// inhabitants are those of the member that has the most, the first of those that have as
    /// many (the compiler's `getFixedExtraInhabitantProvidingField`): known where every
    /// member's count is.
    private func aggregate(_ members: [ValueLayout]) -> ValueLayout {
        var offset = 0
        var alignment = 1
        var extraInhabitants = ExtraInhabitants.none
        var fields: [(offset: Int, shape: ValueShape)] = []
        var most = 0
        var place: InhabitantPlace? = nil
        var countsKnown = true
        for member in members {
            offset = (offset + member.alignment - 1) / member.alignment * member.alignment
            fields.append((offset, member.shape))
            switch member.extraInhabitants {
            case .exactly(let count) where count > most:
                most = count
                place = member.inhabitants.map { InhabitantPlace(offset: $0.offset + offset, kind: $0.kind, taken: $0.taken) }
            case .exactly, .none: break
            case .atLeast, .unknown: countsKnown = false
            }
            offset += member.size
            alignment = Swift.max(alignment, member.alignment)
            extraInhabitants = .most(extraInhabitants, member.extraInhabitants)
        }
        let holdsNothing = fields.allSatisfy { if case .nothing = $0.shape { return true } else { return false } }
        return ValueLayout(
            size: offset, alignment: alignment, extraInhabitants: extraInhabitants,
            shape: holdsNothing ? .nothing : .fields(fields), inhabitants: countsKnown ? place : nil)
    }

    // MARK: - Nominal types

    /// The layout of a value of the struct or enum described at `descriptor`, of `arguments`.
    func layout(ofNominal descriptor: UInt64, arguments: [ValueLayout]) -> ValueLayout? {
        var budget = Self.loweringBudget
        return layout(ofNominal: descriptor, arguments: arguments, depth: 0, budget: &budget)
    }

    private func layout(ofNominal descriptor: UInt64, arguments: [ValueLayout], depth: Int, budget: inout Int) -> ValueLayout? {
        budget -= 1
        guard budget > 0, depth < Self.loweringDepth, let flags = memory.uint32(descriptor) else { return nil }
        let kind = flags & 0x1F
        if kind == 16 { return .reference }
        guard kind == 17 || kind == 18, genericParameterCount(descriptor, flags: flags) == arguments.count,
            !qualifiedName(descriptor: descriptor).hasPrefix("__C.")
        else { return nil }
        if arguments.isEmpty {
            if let known = descriptorLayouts[descriptor] { return known }
            // A value cannot hold itself (only a box or a collection of it): met inside itself,
            // as a generic argument that no field may use (`JSONReference<JSONSchema>` inside
            // `JSONSchema`), it is not known there.
            guard !loweringInProgress.contains(descriptor) else {
                loweringCuts += 1
                return nil
            }
            loweringInProgress.insert(descriptor)
        }
        defer { if arguments.isEmpty { loweringInProgress.remove(descriptor) } }
        let cuts = loweringCuts
        let result =
            kind == 17
            ? structLayout(descriptor, arguments: arguments, depth: depth, budget: &budget)
            : enumLayout(descriptor, arguments: arguments, depth: depth, budget: &budget)
        if arguments.isEmpty, loweringCuts == cuts, result != nil || budget > 0 { descriptorLayouts[descriptor] = .some(result) }
        return result
    }

    /// How many generic parameters a struct's or enum's descriptor has, all of them key
    /// arguments (0 when it is not generic); nil when one is not.
    private func genericParameterCount(_ descriptor: UInt64, flags: UInt32) -> Int? {
        guard flags & 0x80 != 0 else { return 0 }
        let header = descriptor &+ 28
        guard let count = memory.uint16(header &+ 8), count < 16 else { return nil }
        for index in 0..<UInt64(count) {
            guard let parameter = memory.byte(header &+ 16 &+ index), parameter & 0x80 != 0 else { return nil }
        }
        return Int(count)
    }

    private func structLayout(_ descriptor: UInt64, arguments: [ValueLayout], depth: Int, budget: inout Int) -> ValueLayout? {
        guard let fieldDescriptor = memory.relative(descriptor &+ 16), let count = memory.uint32(descriptor &+ 20),
            count < 256
        else { return nil }
        let records = fieldRecords(fieldDescriptor)
        guard records.count == Int(count) else { return nil }
        var members: [ValueLayout] = []
        for record in records {
            guard let member = layout(ofMangledType: record.type, arguments: arguments, depth: depth + 1, budget: &budget)
            else { return nil }
            members.append(member)
        }
        return aggregate(members)
    }

    private func enumLayout(_ descriptor: UInt64, arguments: [ValueLayout], depth: Int, budget: inout Int) -> ValueLayout? {
        guard let fieldDescriptor = memory.relative(descriptor &+ 16), let payloadWord = memory.uint32(descriptor &+ 20),
            let emptyWord = memory.uint32(descriptor &+ 24), let sizes = memory.uint32(fieldDescriptor &+ 8),
            let count = memory.uint32(fieldDescriptor &+ 12), sizes >> 16 >= 12
        else { return nil }
        let payloadCases = Int(payloadWord & 0xFF_FFFF)
        let emptyCases = Int(emptyWord)
        guard payloadCases < 256, emptyCases < 1 << 16, Int(count) == payloadCases + emptyCases else { return nil }
        var payloads: [ValueLayout] = []
        for index in 0..<payloadCases {
            let entry = fieldDescriptor &+ 16 &+ UInt64(index) &* UInt64(sizes >> 16)
            guard let recordFlags = memory.uint32(entry) else { return nil }
            if recordFlags & 1 != 0 {
                payloads.append(.reference)
                continue
            }
            guard
                let payload = layout(
                    ofMangledType: memory.relative(entry &+ 4), arguments: arguments, depth: depth + 1, budget: &budget)
            else { return nil }
            payloads.append(payload)
        }
        switch payloads.count {
        case 0:
            switch emptyCases {
            case 0: return nil
            case 1: return ValueLayout(size: 0, alignment: 1, extraInhabitants: .none, shape: .nothing)
            case 2...256: return .counting(1, cases: emptyCases)
            default: return .counting(2, cases: emptyCases)
            }
        case 1:
            return singlePayload(payloads[0], emptyCases: emptyCases)
        default:
            return multiPayload(descriptor, payloads, emptyCases: emptyCases)
        }
    }

    /// An enum of one payload case and `emptyCases` others (an optional: one): the payload's
    /// extra inhabitants hold the others when there are enough, else tag bytes follow it.
    private func singlePayload(_ payload: ValueLayout, emptyCases: Int) -> ValueLayout? {
        guard emptyCases > 0 else { return payload }
        switch payload.extraInhabitants.hold(emptyCases) {
        case true?:
            var layout = payload
            layout.extraInhabitants = payload.extraInhabitants.removing(emptyCases)
            layout.inhabitants?.taken += emptyCases
            // A case without payload writes its extra inhabitant only: a struct's other fields
            // keep what was there before. Told by that place, it is read as nothing.
            if let place = payload.inhabitants, case .fields = payload.shape {
                layout.shape = .unlessInhabitant(place, payload.shape)
            }
            return layout
        case false?:
            let used: Int
            switch payload.extraInhabitants {
            case .exactly(let count): used = count
            case .none: used = 0
            default: return nil
            }
            let tagBytes = Self.tagBytes(payloadSize: payload.size, emptyCases: emptyCases - used, payloadCases: 1)
            // The payload is read whatever the tag says (its bytes under another case are read too).
            return ValueLayout(
                size: payload.size + tagBytes, alignment: payload.alignment, extraInhabitants: .unknown, shape: payload.shape)
        case nil:
            return nil
        }
    }

    /// A multi-payload enum: the tag in its payloads' spare bits (the `swift5_mpenum` record says
    /// which, and every tag fits), or in tag bytes after the largest payload (the record says
    /// no spare bits are used, or the enum is generic). The size the image's `swift5_builtin`
    /// record gives a fixed enum decides: a size past the payloads means tag bytes of its own,
    /// which the compiler adds only when it uses no spare bits for the tag, whatever the record
    /// says of them (`OpenAPIKit30.JSONSchema.Schema`: 265 bytes, the tag at 264, its record's
    /// spare bits unused), or when they are too few (then the tag is split: not read).
    /// Its extra inhabitants are the tag values no case uses (`MultiPayloadEnumImplStrategy::
    /// getFixedExtraInhabitantCount`, the runtime's `swift_initEnumMetadataMultiPayload`): of
    /// the spare bits' values when the tag is in them, of the tag bytes' when it has its own,
    /// so that an optional of it (swift-nio's `NIOAny?`) is lowered, its `nil` a tag that
    /// names no case.
    private func multiPayload(_ descriptor: UInt64, _ payloads: [ValueLayout], emptyCases: Int) -> ValueLayout? {
        let size = payloads.map(\.size).max() ?? 0
        let alignment = payloads.map(\.alignment).max() ?? 1
        let sizeFlags = multiPayloadEnumRecord(of: descriptor).flatMap { memory.uint32($0 &+ 4) }
        // A payload of no bytes makes its case one without payload to the compiler: not read.
        guard payloads.allSatisfy({ $0.size > 0 }) else { return nil }
        // Without a record, only a generic enum is known to keep its tag in bytes: the runtime
        // lays it out, whatever its arguments, without spare bits (`Either<A, B>` of two
        // references takes 9 bytes).
        guard let sizeFlags = sizeFlags ?? ((memory.uint32(descriptor) ?? 0) & 0x80 != 0 ? 0 : nil) else { return nil }
        let fixed = builtinTypeLayout(of: descriptor)
        if sizeFlags & 1 != 0 {
            guard var layout = multiPayloadEnum(descriptor, payloadShape: { _, _ in .words }) else { return nil }
            guard layout.tagMaskOffset + layout.tagMask.count <= size else { return nil }
            if let fixed, fixed.size != size {
                // The record's spare bits hold every tag, yet the tag has bytes of its own. Those
                // bytes' unused values are extra inhabitants, and spare bits the compiler kept for
                // the tag would add more (at least as many).
                guard let tagOffset = Self.tagOffset(enumSize: fixed.size, payloadSize: size, alignment: fixed.alignment)
                else { return nil }
                let tagBytes = fixed.size - tagOffset
                let unused = Self.unusedTagValues(
                    tagBits: 8 * tagBytes, payloadBits: 8 * size, emptyCases: emptyCases, payloadCases: payloads.count)
                return ValueLayout(
                    size: fixed.size, alignment: alignment, extraInhabitants: unused > 0 ? .atLeast(unused) : .unknown,
                    shape: .taggedCases(
                        tagOffset: tagOffset, tagBytes: fixed.size - tagOffset, payloads: payloads.map(\.shape)))
            }
            layout.payloads = payloads.map(\.shape)
            // The record's mask is the payloads' common spare bits, every one of which an extra
            // inhabitant sets (counting down from all ones), the bits besides them left zero.
            let unused = Self.unusedTagValues(
                tagBits: layout.spareBits, payloadBits: 8 * size - layout.spareBits, emptyCases: emptyCases,
                payloadCases: payloads.count)
            return ValueLayout(
                size: size, alignment: alignment, extraInhabitants: unused > 0 ? .exactly(unused) : .none,
                shape: .cases(layout))
        }
        let tagBytes = Self.tagBytes(payloadSize: size, emptyCases: emptyCases, payloadCases: payloads.count)
        if let fixed, fixed.size != size + tagBytes { return nil }
        let unused = Self.unusedTagValues(
            tagBits: 8 * tagBytes, payloadBits: 8 * size, emptyCases: emptyCases, payloadCases: payloads.count)
        let tags = tagBytes < 4 ? (1 << (8 * tagBytes)) - unused : Int.max
        return ValueLayout(
            size: size + tagBytes, alignment: alignment, extraInhabitants: unused > 0 ? .exactly(unused) : .none,
            shape: .taggedCases(tagOffset: size, tagBytes: tagBytes, payloads: payloads.map(\.shape)),
            inhabitants: tagBytes > 0 && tagBytes < 4
                ? InhabitantPlace(offset: size, kind: .tag(bytes: tagBytes, tags: tags)) : nil)
    }

    /// The most extra inhabitants a value witness table records.
    static let maximumExtraInhabitants = 0x7FFF_FFFF

    /// The values of a multi-payload enum's `tagBits` tag bits that no case takes: each payload
    /// case takes one, and the cases without payload one for each `2^payloadBits` of them (the
    /// payload bits besides the tag number them; 32 or more such bits number any count).
    static func unusedTagValues(tagBits: Int, payloadBits: Int, emptyCases: Int, payloadCases: Int) -> Int {
        guard tagBits < 32 else { return maximumExtraInhabitants }
        var used = payloadCases
        if emptyCases > 0 {
            used += payloadBits >= 32 ? 1 : (emptyCases + (1 << payloadBits) - 1) >> payloadBits
        }
        return Swift.max(0, Swift.min((1 << tagBits) - used, maximumExtraInhabitants))
    }

    /// Where a fixed multi-payload enum of `enumSize` bytes keeps its tag bytes (1, 2 or 4 of
    /// them): right after its largest payload, or at the next multiple of its alignment; nil
    /// when neither, or both, fit.
    static func tagOffset(enumSize: Int, payloadSize: Int, alignment: Int) -> Int? {
        let aligned = alignment > 0 ? (payloadSize + alignment - 1) / alignment * alignment : payloadSize
        let fitting = Set([payloadSize, aligned]).filter { [1, 2, 4].contains(enumSize - $0) }
        return fitting.count == 1 ? fitting.first : nil
    }

    /// The bytes of an enum's extra tag (Swift's `getEnumTagCounts`): a payload of 4 bytes or
    /// more holds any number of cases without payload under one tag value.
    static func tagBytes(payloadSize: Int, emptyCases: Int, payloadCases: Int) -> Int {
        var tags = payloadCases
        if emptyCases > 0 {
            if payloadSize >= 4 {
                tags += 1
            } else {
                let bits = payloadSize * 8
                tags += (emptyCases + (1 << bits) - 1) >> bits
            }
        }
        return tags <= 1 ? 0 : tags < 256 ? 1 : tags < 65536 ? 2 : 4
    }
}
