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

    /// The renderer of this format, with paths relative to the process's working directory and the
    /// text report at full length.
    public var renderer: any ReportRenderer { renderer(RenderingOptions()) }

    /// The renderer of this format set up by `options`; a format reads only the options it has use
    /// for (only the text report is fitted to a width, unfolded or coloured).
    public func renderer(_ options: RenderingOptions) -> any ReportRenderer {
        switch self {
        case .text:
            TextReportRenderer(
                workingDirectory: options.workingDirectory, width: options.width, verbose: options.verbose,
                colored: options.colored)
        case .json: JSONReportRenderer()
        case .sarif: SARIFReportRenderer(workingDirectory: options.workingDirectory)
        case .junit: JUnitReportRenderer(workingDirectory: options.workingDirectory)
        case .github: GitHubActionsReportRenderer(workingDirectory: options.workingDirectory)
        case .html: HTMLReportRenderer(workingDirectory: options.workingDirectory)
        }
    }

    /// The extension of a file in this format (`txt`, `json`, `sarif`, `xml`, `github`, `html`):
    /// what the golden files and scripts/output-snapshot.sh name them by.
    public var fileExtension: String {
        switch self {
        case .text: "txt"
        case .json: "json"
        case .sarif: "sarif"
        case .junit: "xml"
        case .github: "github"
        case .html: "html"
        }
    }
}

/// How the renderers of one run are set up: where paths are shown relative to, and how the text
/// report is laid out.
public struct RenderingOptions: Sendable, Equatable {
    /// Paths under this directory are shown relative to it; nil for the process's.
    public var workingDirectory: String?
    /// The widest a line of the text report may be; nil for no limit.
    public var width: Int?
    /// The text report shows every allocation site and frame, unfolded (`--verbose`).
    public var verbose: Bool
    /// The text report is marked with ANSI colours (`--color`).
    public var colored: Bool

    /// Creates the options; by default, paths relative to the process's working directory and the
    /// text report at full length, folded, without colour.
    public init(workingDirectory: String? = nil, width: Int? = nil, verbose: Bool = false, colored: Bool = false) {
        self.workingDirectory = workingDirectory
        self.width = width
        self.verbose = verbose
        self.colored = colored
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
