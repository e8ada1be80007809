// Where an allocation site is: the line that constructed its instances, which findings point at,
// allocation groups are keyed by, and the text report starts each stack from. Report model, not
// rendering: ReportBuilder groups and classifies by it, and every renderer locates by it.

extension SymbolizedFrame {
    /// True when the frame names a real source file and a line, which an annotation can point at
    /// (`<compiler-generated>`, a macro's generated expansion and line 0 cannot).
    package var hasSourceLine: Bool {
        guard let file, let line, line > 0 else { return false }
        return !(file.split(separator: "/").last ?? "").hasPrefix("<") && !file.contains("/swift-generated-sources/")
    }
}

extension AuditReport.AllocationGroup {
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
        let owner = String(typeName.prefix { $0 != "<" }) + "."
        let past: Int
        if let outermost = frames.lastIndex(where: { isInitializer($0.function ?? "", of: owner) }) {
            past = outermost + 1
        } else {
            past = frames.firstIndex { !isInitializer($0.function ?? "") && $0.hasSourceLine } ?? frames.count
        }
        return frames[past...].firstIndex(where: \.hasSourceLine) ?? frames.firstIndex(where: \.hasSourceLine)
    }

    /// True for an initializer of the type whose qualified name (with a trailing dot) is `owner`.
    package static func isInitializer(_ function: String, of owner: String) -> Bool {
        // `(extension in App):App.Tree<A where A == App.Command.Type>.init(root:)` is `App.Tree.init(root:)`.
        var name = Substring(function)
        if name.hasPrefix("(extension in "), let colon = name.firstIndex(of: ":") { name = name[name.index(after: colon)...] }
        var plain = ""
        var depth = 0
        for character in name {
            if character == "<" { depth += 1 }
            if depth == 0 { plain.append(character) }
            if character == ">" && depth > 0 { depth -= 1 }
            // The type ends where its member's parameter list starts.
            if depth == 0 && character == "(" { break }
        }
        guard plain.hasPrefix(owner) else { return false }
        let member = plain.dropFirst(owner.count)
        return member.hasPrefix("init(") || member.hasPrefix("__allocating_init(")
    }

    /// True for an initializer's frame: `A.init(…)`, `A.__allocating_init(…)`.
    package static func isInitializer(_ function: String) -> Bool {
        function.contains(".init(") || function.contains("__allocating_init(")
    }
}
