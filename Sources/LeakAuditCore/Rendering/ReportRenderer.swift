/// Turns a report into the bytes of one output format.
public protocol ReportRenderer {
    /// Renders the whole report.
    func render(_ report: AuditReport) -> String
}

/// The output formats leak-audit can write.
public enum ReportFormat: String, CaseIterable, Sendable {
    /// For people: a terminal or a CI log.
    case text
    /// For tools: the versioned schema in docs/report-schema.json.
    case json
    /// For code-scanning tools: SARIF 2.1.0, one result per exceeded type at its allocating line.
    case sarif
    /// For CI test reports: JUnit XML, one test case per audited type.
    case junit
    /// For GitHub Actions: workflow commands that annotate the allocating lines.
    case github

    /// The renderer of this format.
    public var renderer: any ReportRenderer {
        switch self {
        case .text: TextReportRenderer()
        case .json: JSONReportRenderer()
        case .sarif: SARIFReportRenderer()
        case .junit: JUnitReportRenderer()
        case .github: GitHubActionsReportRenderer()
        }
    }
}

extension SymbolizedFrame {
    /// True when the frame names a real source file and a line, which an annotation can point at
    /// (`<compiler-generated>`, a macro's generated expansion and line 0 cannot).
    var hasSourceLine: Bool {
        guard let file, let line, line > 0 else { return false }
        return !(file.split(separator: "/").last ?? "").hasPrefix("<") && !file.contains("/swift-generated-sources/")
    }
}

extension AuditReport.AllocationGroup {
    /// Where a finding about these instances of `typeName` points: the line that constructed
    /// them (`constructingFrame(in:typeName:)`), not the type's own initializer, which is the same
    /// line for every instance.
    func locatedFrame(typeName: String) -> SymbolizedFrame? {
        Self.constructingFrame(in: frames, typeName: typeName)
    }

    /// The frame that constructed the instances of `typeName`: the caller of the type's outermost
    /// initializer (its own `init`s, convenience inits and allocating thunks, with any `super.init`
    /// chain inside them), the first frame with a source line past it; when no frame is one of the
    /// type's initializers, the first frame with a source line outside a leading run of initializers;
    /// and when every such frame is an initializer, the first frame with a source line.
    static func constructingFrame(in frames: [SymbolizedFrame], typeName: String) -> SymbolizedFrame? {
        constructingIndex(in: frames, typeName: typeName).map { frames[$0] }
    }

    /// The index of `constructingFrame(in:typeName:)`.
    static func constructingIndex(in frames: [SymbolizedFrame], typeName: String) -> Int? {
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
    static func isInitializer(_ function: String, of owner: String) -> Bool {
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
    static func isInitializer(_ function: String) -> Bool {
        function.contains(".init(") || function.contains("__allocating_init(")
    }
}

extension AuditReport.TrackedType {
    /// Where annotations point: the first source frame of the first (largest) allocation group
    /// that has one.
    var annotatedFrame: SymbolizedFrame? { allocations.lazy.compactMap { $0.locatedFrame(typeName: name) }.first }

    /// The module part of the name (`App` in `App.Box<Swift.Int>`), nil when the name has none.
    var moduleName: String? {
        var depth = 0
        for index in name.indices {
            switch name[index] {
            case "(", "<", "[": depth += 1
            case ")", ">", "]": depth = Swift.max(0, depth - 1)
            case "." where depth == 0:
                let module = name[..<index]
                return module.isEmpty || module.contains(where: \.isWhitespace) ? nil : String(module)
            default: break
            }
        }
        return nil
    }
}

/// `path` relative to `directory` when it lies under it, else `path` unchanged.
func relativePath(_ path: String, under directory: String) -> String {
    let prefix = directory.hasSuffix("/") ? directory : directory + "/"
    return path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : path
}

extension TargetOutcome {
    /// "exited with code 0", "killed by signal 6 (SIGABRT)".
    var phrase: String {
        switch self {
        case .exited(let code): "exited with code \(code)"
        case .signaled(let signal): "killed by signal \(signal)" + (signalNames[signal].map { " (\($0))" } ?? "")
        }
    }
}

private let signalNames: [Int32: String] = [
    1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS",
    8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM",
]
