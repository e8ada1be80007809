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
