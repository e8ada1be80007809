import ArgumentParser
import FoundationEssentials
import LeakAuditModel
import LeakAuditRendering

/// `leak-audit report`: render a saved JSON report in any format, or compare two, without running
/// the target again.
struct RenderReport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Render a JSON report saved by 'leak-audit run --output-json' in any format, or compare two.",
        discussion: """
            leak-audit report run.json --format FORMAT renders the report that a run saved with \
            --output-json (or --format json) in any format, as that run would have written it: \
            to standard output, or to --output, and with --output-FORMAT to more files. The \
            verdict is the one the run reached: suppressions and the baseline were applied when \
            it ran; to judge with others, run the target again.

            leak-audit report --diff old.json new.json compares two saved reports, as \
            'leaks -diffFrom' does: each type over budget, each type a test left alive \
            (--leaks-per-test), each group of unreachable objects (by the shape of its cycle) \
            and each type alive at exit (--census) that appeared, grew, \
            shrank or disappeared from the old run to the new, in text or JSON \
            (docs/diff-schema.json). Names are matched as a baseline matches them.

            Exit codes, rendering a report (as 'leak-audit run' exited, so that CI can
            gate on a saved report):
              0   clean
              1   a finding fails the run (budget exceeded, a test leaked, or
                  objects of the program's types unreachable)
              2   the target failed, and no finding fails the run
              3   the target could not be audited
              5   the report is incomplete, and no finding fails the run
              64  a report cannot be read (missing, not a leak-audit JSON report,
                  another schema version, edited or damaged), an output cannot
                  be written, or a bad option

            Exit codes, with --diff:
              0   no finding that fails the new run appeared or grew
              1   a finding that fails the new run appeared or grew (suppressed
                  and baselined findings, and the census, fail nothing)
              3   either run could not be audited: nothing was compared
              64  as above
            """
    )

    @OptionGroup var report: ReportOptions

    @Flag(
        help:
            "Compare two saved reports, the old one then the new: what appeared, grew, shrank and disappeared. --format text or json."
    )
    var diff = false

    @Argument(
        help: ArgumentHelp(
            "The JSON report 'leak-audit run --output-json' wrote; with --diff, the old report then the new.",
            valueName: "report.json"))
    var files: [String] = []

    func validate() throws {
        if diff {
            guard files.count == 2 else {
                throw ValidationError("--diff compares two reports: give the old one, then the new one")
            }
            guard DiffFormat(rawValue: report.format.rawValue) != nil else {
                let formats = DiffFormat.allCases.map(\.rawValue).joined(separator: " or ")
                throw ValidationError("--diff writes \(formats), not '\(report.format.rawValue)'")
            }
            if let extra = report.destinations.dropFirst().first {
                throw ValidationError(
                    "--diff writes one comparison, to standard output or --output; '--output-\(extra.format.rawValue)' renders a report"
                )
            }
        } else {
            guard files.count == 1 else {
                throw ValidationError(
                    files.isEmpty
                        ? "missing the report: give the JSON file 'leak-audit run --output-json' wrote"
                        : "give one report to render, or --diff and two reports to compare")
            }
        }
    }

    func run() throws {
        let reader = JSONReportReader()
        let outputs: ReportOutputs
        let reports: [AuditReport]
        do {
            reports = try files.map { path throws(ReportFileError) in try reader.read(path: path) }
            outputs = try ReportOutputs.open(
                report, standardStream: .standardOutput, environment: ProcessInfo.processInfo.environment)
        } catch {
            printError("\(error)")
            throw ExitCode(ExitStatus.usageError.rawValue)
        }
        let failures: [SinkError]
        let status: ExitStatus
        if diff, let format = DiffFormat(rawValue: report.format.rawValue), reports.count == 2 {
            let comparison = ReportDiff(old: reports[0], oldPath: files[0], new: reports[1], newPath: files[1])
            status = ExitStatus(comparison.verdict)
            failures = outputs.write(format.renderer.render(comparison), failsNothing: status == .clean)
        } else if let saved = reports.first {
            failures = outputs.write(saved)
            status = ExitStatus(saved.verdict)
        } else {
            // validate() allows no other count of reports.
            outputs.discard()
            throw ExitCode(ExitStatus.usageError.rawValue)
        }
        for failure in failures { printError(failure.description) }
        if !failures.isEmpty { throw ExitCode(ExitStatus.usageError.rawValue) }
        throw ExitCode(status.rawValue)
    }

    private func printError(_ message: String) {
        try? ReportSink.standardError.write("leak-audit: error: \(message)\n")
    }
}
