import LeakAuditModel

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
    /// For looking: one self-contained HTML page with live-count charts and flame graphs.
    case html

    /// The renderer of this format.
    public var renderer: any ReportRenderer {
        switch self {
        case .text: TextReportRenderer()
        case .json: JSONReportRenderer()
        case .sarif: SARIFReportRenderer()
        case .junit: JUnitReportRenderer()
        case .github: GitHubActionsReportRenderer()
        case .html: HTMLReportRenderer()
        }
    }
}

/// Turns a comparison of two reports (`leak-audit report --diff`) into the bytes of one format.
public protocol ReportDiffRenderer {
    /// Renders the whole comparison.
    func render(_ diff: ReportDiff) -> String
}

/// The formats a comparison of two reports can be written in.
public enum DiffFormat: String, CaseIterable, Sendable {
    /// For people: one line per change, then the verdict.
    case text
    /// For tools: the versioned schema in docs/diff-schema.json.
    case json

    /// The renderer of this format.
    public var renderer: any ReportDiffRenderer {
        switch self {
        case .text: TextDiffRenderer()
        case .json: JSONDiffRenderer()
        }
    }
}
