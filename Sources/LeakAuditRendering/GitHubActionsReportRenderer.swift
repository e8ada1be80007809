import FoundationEssentials
import LeakAuditModel
import LeakAuditPresentation

/// The report for GitHub Actions: workflow commands, which the runner turns into annotations on
/// the lines they name.
///
/// One `::error file=…,line=…::` per type over budget (and, with `--leaks-per-test`, per test and
/// type it left alive, and per group of unreachable objects of the program's types), at the first
/// source frame of its first (largest) allocation group, with its
/// block of the text report as the message (a plain `::error::` when no frame has a source line); one `::error::` when the target could not be
/// audited; one `::warning::` per report warning; and a `::notice::` with the verdict, which is all
/// a clean run prints. A suppressed or baselined finding is a `::notice` at its line instead of an
/// error, and entries gone from the baseline are one more notice. The runner reads the commands
/// from standard output and standard error alike.
public struct GitHubActionsReportRenderer: ReportRenderer {
    /// Paths under this directory are written relative to it, as GitHub expects them relative to
    /// the checkout.
    public var workingDirectory: String

    /// Creates the renderer; `workingDirectory` defaults to the process's.
    public init(workingDirectory: String? = nil) {
        self.workingDirectory = workingDirectory ?? FileManager.default.currentDirectoryPath
    }

    /// Renders the report as workflow commands, one a line.
    public func render(_ report: AuditReport) -> String {
        let phrases = ReportPhrases(workingDirectory: workingDirectory)
        var commands: [String] = []
        if let explanation = phrases.notAuditedExplanation(report) {
            commands.append(
                Self.command(
                    "error", [("title", "leak-audit: not audited")], message: explanation.joined(separator: "\n")))
        } else {
            for type in report.exceededTypes {
                let (command, note) = Self.severity(type.status, phrases)
                commands.append(
                    annotation(
                        command, at: type.annotatedFrame, title: "\(ReportPhrases.escaped(type.name)) over budget\(note)",
                        message: phrases.exceededBlock(type, baseline: report.baseline)))
            }
            for test in report.tests ?? [] {
                for leaked in test.leaked {
                    let name = ReportPhrases.escaped(test.name)
                    let type = ReportPhrases.escaped(leaked.type)
                    let (command, note) = Self.severity(leaked.status, phrases)
                    let comparison = ReportPhrases.baselineComparison(leaked.status, report.baseline, unit: "")
                    commands.append(
                        annotation(
                            command,
                            at: leaked.allocations.lazy.compactMap { $0.testFrame(ofTest: test.name) }.first
                                ?? leaked.allocations.lazy.compactMap { $0.locatedFrame(typeName: leaked.type) }.first,
                            title: "\(name) leaked \(type)\(note)",
                            message: ["LEAKED \(name): \(leaked.count) \(type) alive after the test"]
                                + (comparison.map { ["  " + $0] } ?? [])
                                + phrases.allocationSites(leaked.allocations, indent: "  ", typeName: leaked.type)
                                + (leaked.retainers.map { phrases.retainerLines($0, unavailable: [], indent: "  ") } ?? [])))
                }
            }
            for group in report.unreachableFindings {
                let (command, note) = Self.severity(group.status, phrases)
                let comparison = ReportPhrases.baselineComparison(group.status, report.baseline, unit: "")
                let typeName = group.path.first?.type ?? ""
                let shape = group.shape == .cycle ? "cycle" : "over-retained object"
                commands.append(
                    annotation(
                        command, at: group.allocations.lazy.compactMap { $0.locatedFrame(typeName: typeName) }.first,
                        title: "unreachable \(shape) \(ReportPhrases.unreachableChain(group))\(note)",
                        message: ["UNREACHABLE " + ReportPhrases.unreachableHeadline(group)]
                            + (comparison.map { ["  " + $0] } ?? [])
                            + phrases.allocationSites(group.allocations, indent: "  ", typeName: typeName)))
            }
            if let baseline = report.baseline, !baseline.gone.isEmpty {
                let gone = baseline.gone.map { "\($0.key) (the baseline records \($0.count))" }
                commands.append(
                    Self.command(
                        "notice", [("title", "leak-audit: gone from the baseline")],
                        message: ([
                            "fixed since the baseline '\(baseline.path)' was written; write it again with --write-baseline:"
                        ]
                            + gone).joined(separator: "\n")))
            }
        }
        if let losses = phrases.incompleteness(report) {
            commands.append(
                Self.command(
                    "error", [("title", "leak-audit: incomplete")],
                    message: "the report is incomplete (\(losses)): its counts may be wrong"))
        }
        for warning in report.warnings {
            commands.append(Self.command("warning", [("title", "leak-audit")], message: warning))
        }
        commands.append(Self.command("notice", [("title", "leak-audit")], message: phrases.summarySentence(report)))
        return commands.joined(separator: "\n") + "\n"
    }

    /// `error` for a failing finding, `notice` with a title suffix for a suppressed or baselined one.
    private static func severity(_ status: FindingStatus, _ phrases: ReportPhrases) -> (String, String) {
        switch status {
        case .failing: ("error", "")
        case .largerThanBaseline: ("error", " (larger than the baseline)")
        case .suppressed(let suppression): ("notice", " (suppressed \(phrases.suppressionLine(suppression)))")
        case .baselined: ("notice", " (baselined)")
        }
    }

    /// `::error file=…,line=…,col=…,title=…::message` (or `::notice …`) at `frame`, or without a file
    /// when there is no frame with a source line.
    private func annotation(_ command: String, at frame: SymbolizedFrame?, title: String, message: [String]) -> String {
        var properties: [(String, String)] = []
        if let frame, let file = frame.file, let line = frame.line {
            properties.append(("file", relativePath(file, under: workingDirectory)))
            properties.append(("line", String(line)))
            if let column = frame.column, column > 0 { properties.append(("col", String(column))) }
        }
        properties.append(("title", "leak-audit: " + title))
        return Self.command(command, properties, message: message.joined(separator: "\n"))
    }

    /// `::name key=value,…::message`, each part escaped as the runner expects.
    static func command(_ name: String, _ properties: [(String, String)], message: String) -> String {
        let list = properties.map { "\($0.0)=\(escapedProperty($0.1))" }.joined(separator: ",")
        return "::\(name)\(list.isEmpty ? "" : " " + list)::\(escapedData(message))"
    }

    /// A message: `%`, carriage returns and line feeds percent-encoded (the runner decodes them),
    /// other control characters written as the text report writes them.
    static func escapedData(_ value: String) -> String {
        var result = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "%": result += "%25"
            case "\r": result += "%0D"
            case "\n": result += "%0A"
            default: result += ReportPhrases.escaped(String(scalar))
            }
        }
        return result
    }

    /// A property value: as a message, and `:` and `,` percent-encoded too, since they end a
    /// property list and separate properties.
    static func escapedProperty(_ value: String) -> String {
        var result = ""
        for character in escapedData(value).unicodeScalars {
            switch character {
            case ":": result += "%3A"
            case ",": result += "%2C"
            default: result.unicodeScalars.append(character)
            }
        }
        return result
    }
}
