import ArgumentParser
import LeakAuditCore
import LeakAuditModel
import LeakAuditRendering

extension ReportFormat: ExpressibleByArgument {}

extension ColorChoice: ExpressibleByArgument {}

// ArgumentParser asks a choice's values and descriptions each time it builds a command's arguments,
// several times a run. Its defaults describe each case through string interpolation, whose
// conformance lookups cost about 2.5 M instructions a run; each choice's raw value is the same
// string, said directly.
extension ExpressibleByArgument where Self: CaseIterable & RawRepresentable, RawValue == String {
    public var defaultValueDescription: String { rawValue }
    public static var allValueStrings: [String] { allCases.map { $0.rawValue } }
    /// Empty, as ArgumentParser's default makes it when every description is the raw value.
    public static var allValueDescriptions: [String: String] { [:] }
}

/// Where the report goes and in which formats: the primary report (`--format`, to standard error
/// or `--output`), and any number of extra files, one per format, all from the same run.
struct ReportOptions: ParsableArguments {
    @Option(help: "Report format: \(ReportFormat.helpList).")
    var format: ReportFormat = .text

    @Option(
        name: .shortAndLong,
        help: ArgumentHelp(
            "Write the report to this file instead of standard error (run) or standard output (report).", valueName: "file"))
    var output: String?

    @Option(name: .customLong("output-text"), help: ArgumentHelp("Also write the text report to this file.", valueName: "file"))
    var outputText: String?

    @Option(
        name: .customLong("output-json"),
        help: ArgumentHelp("Also write the JSON report (docs/report-schema.json) to this file.", valueName: "file"))
    var outputJSON: String?

    @Option(
        name: .customLong("output-sarif"),
        help: ArgumentHelp("Also write a SARIF 2.1.0 log, for code scanning, to this file.", valueName: "file"))
    var outputSARIF: String?

    @Option(
        name: .customLong("output-junit"),
        help: ArgumentHelp("Also write JUnit XML, one test case per tracked type, to this file.", valueName: "file"))
    var outputJUnit: String?

    @Option(
        name: .customLong("output-github"),
        help: ArgumentHelp("Also write GitHub Actions workflow commands (annotations) to this file.", valueName: "file"))
    var outputGitHub: String?

    @Option(
        name: .customLong("output-html"),
        help: ArgumentHelp(
            "Also write a self-contained HTML report (charts of live counts over time, flame graphs of allocations) to this file.",
            valueName: "file"))
    var outputHTML: String?

    @Flag(
        help:
            "In the text report, show every allocation site and every frame, unfolded and at full length (by default: the first few sites, the frames that matter, lines fitted to the terminal or to 80 columns)."
    )
    var verbose = false

    @Option(
        help: ArgumentHelp(
            "Color the text report: auto (the default) when it goes to a terminal and NO_COLOR is not set, always (into pipes and --output/--output-text files too, whatever NO_COLOR says), or never. Other formats are never colored.",
            valueName: "when"))
    var color: ColorChoice = .auto

    @Flag(
        name: .shortAndLong,
        help:
            "Write the report to standard error (run) or standard output (report) only when the run failed (its verdict is not clean; the exit code is not 0), as linters do; files given with --output and --output-FORMAT are written either way. No live status line."
    )
    var quiet = false

    /// The live status line may show on standard error while the target runs: not with --quiet,
    /// and not when a report other than text is to be written there (it is for a tool to read).
    /// Whether standard error is a terminal that can show it is the status line's to decide.
    var allowsStatusLine: Bool {
        !quiet && (output != nil || format == .text)
    }

    /// Every report to write: the primary one (a nil path is the command's standard stream), then
    /// the extra files.
    var destinations: [(format: ReportFormat, path: String?)] {
        [(format, output)] + ReportFormat.allCases.compactMap { format in extraOutput(format).map { (format, $0) } }
    }

    /// The file `--output-FORMAT` names for `format`, if given.
    private func extraOutput(_ format: ReportFormat) -> String? {
        switch format {
        case .text: outputText
        case .json: outputJSON
        case .sarif: outputSARIF
        case .junit: outputJUnit
        case .github: outputGitHub
        case .html: outputHTML
        }
    }

    func validate() throws {
        var seen: Set<String> = []
        for case let (_, path?) in destinations where !seen.insert(path).inserted {
            throw ValidationError("'\(path)' is given for two reports; give each report its own file")
        }
    }
}

extension ReportFormat {
    /// `text, json, sarif, junit or github`: worked out once, though ArgumentParser builds the
    /// option's help at each of its several passes over the command's arguments.
    static let helpList = listed(allCases.map(\.rawValue), "or")

    /// `--output-text, --output-json, … and --output-html`: the options that write each format to a
    /// file, for a command's discussion.
    static let outputOptionsList = listed(allCases.map { "--output-" + $0.rawValue }, "and")

    /// `a, b or c`.
    private static func listed(_ names: [String], _ conjunction: String) -> String {
        guard let last = names.last, names.count > 1 else { return names.joined() }
        return names.dropLast().joined(separator: ", ") + " \(conjunction) " + last
    }
}
