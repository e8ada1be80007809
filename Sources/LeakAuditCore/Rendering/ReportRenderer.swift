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

    /// The renderer of this format.
    public var renderer: any ReportRenderer {
        switch self {
        case .text: TextReportRenderer()
        case .json: JSONReportRenderer()
        }
    }
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
