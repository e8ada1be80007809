// Where an allocation site is: the line that constructed its instances, which findings point at,
// allocation groups are keyed by, and the text report starts each stack from. Report model, not
// rendering: ReportBuilder groups and classifies by it, and every renderer locates by it.

extension SymbolizedFrame {
    /// True when the frame names a real source file and a line, which an annotation can point at
    /// (`<compiler-generated>`, a macro's generated expansion and line 0 cannot).
    package var hasSourceLine: Bool {
        guard let file, let line, line > 0 else { return false }
        // The file's base name must not start with "<" (`<compiler-generated>`).
        let bytes = file.utf8
        let base = bytes.lastIndex(of: UInt8(ascii: "/")).map { bytes.index(after: $0) } ?? bytes.startIndex
        if base != bytes.endIndex && bytes[base] == UInt8(ascii: "<") { return false }
        return !file.includes("/swift-generated-sources/")
    }
}

extension AuditReport.AllocationGroup {
    /// The frame of the test function `testName` on this stack, with a source line: the line of
    /// the test that led to the allocation, where a finding about a test's leak points (the
    /// constructing line may be a library's). `Module.Class/method` (XCTest) and
    /// `Module.Suite/function()` (Swift Testing) run as `Module.Class.method(…)`, or a closure in
    /// it; nil when the test's function is not on the stack (work it started elsewhere).
    package func testFrame(ofTest testName: String) -> SymbolizedFrame? {
        guard let slash = testName.lastIndex(of: "/") else { return nil }
        var function = testName[testName.index(after: slash)...]
        if let parenthesis = function.firstIndex(of: "(") { function = function[..<parenthesis] }
        guard !function.isEmpty else { return nil }
        let name = testName[..<slash] + "." + function + "("
        return frames.first { frame in
            guard frame.hasSourceLine, let symbol = frame.function else { return false }
            return symbol.hasPrefix(name) || symbol.includes(" in " + name)
        }
    }

    /// Where a finding about these instances of `typeName` points: the line that constructed
    /// them (`constructingFrame(in:typeName:)`), not the type's own initializer, which is the same
    /// line for every instance.
    package func locatedFrame(typeName: String) -> SymbolizedFrame? {
        Self.constructingFrame(in: frames, typeName: typeName)
    }

    /// The frame that constructed the instances of `typeName`: the caller of the type's outermost
    /// initializer (its own `init`s, convenience inits and allocating thunks, with any `super.init`
    /// chain inside them), the first frame with a source line past it; when no frame is one of the
    /// type's initializers, the first frame with a source line outside a leading run of initializers;
    /// and when every such frame is an initializer, the first frame with a source line.
    package static func constructingFrame(in frames: [SymbolizedFrame], typeName: String) -> SymbolizedFrame? {
        constructingIndex(in: frames, typeName: typeName).map { frames[$0] }
    }

    /// The constructing line of `typeName`'s instances as one comparable key (`function|file:line`):
    /// stacks that share it are one allocation site. Nil when no frame has a source line.
    package static func constructingSite(in frames: [SymbolizedFrame], typeName: String) -> String? {
        constructingFrame(in: frames, typeName: typeName).map { "\($0.function ?? "")|\($0.file ?? ""):\($0.line ?? 0)" }
    }

    /// The index of `constructingFrame(in:typeName:)`.
    package static func constructingIndex(in frames: [SymbolizedFrame], typeName: String) -> Int? {
        // `App.Box<Swift.Int>` is initialised by `App.Box.init(…)`.
        // Index loops, which read each frame in place: a closure over the frames took a copy of
        // each (its strings retained and released), most of this search's time in a large report.
        let owner = Array(typeName.utf8.prefix { $0 != UInt8(ascii: "<") }) + [UInt8(ascii: ".")]
        var past = frames.count
        var outermost = frames.count - 1
        while outermost >= 0 && !isInitializer(frames[outermost].function ?? "", of: owner) { outermost -= 1 }
        if outermost >= 0 {
            past = outermost + 1
        } else {
            for index in frames.indices where frames[index].hasSourceLine && !isInitializer(frames[index].function ?? "") {
                past = index
                break
            }
        }
        for index in past..<frames.count where frames[index].hasSourceLine { return index }
        for index in frames.indices where frames[index].hasSourceLine { return index }
        return nil
    }

    /// True for an initializer of the type whose qualified name (with a trailing dot) is `owner`.
    package static func isInitializer(_ function: String, of owner: String) -> Bool {
        isInitializer(function, of: Array(owner.utf8))
    }

    /// `isInitializer(_:of:)` with the owner's UTF-8 bytes. Reads bytes, not characters (every
    /// delimiter is ASCII), and compares as it goes: a report asks this of every frame of every
    /// distinct stack.
    static func isInitializer(_ function: String, of owner: [UInt8]) -> Bool {
        var function = function
        return function.withUTF8 { isInitializer($0, of: owner) }
    }

    private static let initializerBytes = Array("init(".utf8)
    private static let allocatingBytes = Array("__allocating_init(".utf8)
    private static let extensionPrefix = Array("(extension in ".utf8)

    /// `isInitializer(_:of:)` over the function name's bytes.
    private static func isInitializer(_ bytes: UnsafeBufferPointer<UInt8>, of owner: [UInt8]) -> Bool {
        // `(extension in App):App.Tree<A where A == App.Command.Type>.init(root:)` is `App.Tree.init(root:)`.
        var name = bytes[...]
        if name.starts(with: extensionPrefix), let colon = name.firstIndex(of: UInt8(ascii: ":")) {
            name = name[(colon + 1)...]
        }
        // The name outside angle brackets, up to its member's parameter list, must be the owner
        // followed by `init(` or `__allocating_init(`.
        let initializer = initializerBytes
        let allocating = allocatingBytes
        var matched = 0  // bytes of the name outside brackets seen so far
        var depth = 0
        var maybeInit = true
        var maybeAllocating = true
        for byte in name {
            if byte == UInt8(ascii: "<") { depth += 1 }
            if depth == 0 {
                if matched < owner.count {
                    if byte != owner[matched] { return false }
                } else {
                    let offset = matched - owner.count
                    maybeInit = maybeInit && offset < initializer.count && initializer[offset] == byte
                    maybeAllocating = maybeAllocating && offset < allocating.count && allocating[offset] == byte
                    if !maybeInit && !maybeAllocating { return false }
                    // The type ends where its member's parameter list starts.
                    if byte == UInt8(ascii: "(") { return true }
                }
                matched += 1
            }
            if byte == UInt8(ascii: ">") && depth > 0 { depth -= 1 }
        }
        return false
    }

    /// True for an initializer's frame: `A.init(…)`, `A.__allocating_init(…)`.
    package static func isInitializer(_ function: String) -> Bool {
        function.includes(".init(") || function.includes("__allocating_init(")
    }
}
