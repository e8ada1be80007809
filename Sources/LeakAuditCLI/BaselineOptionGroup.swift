import ArgumentParser
import LeakAuditCore
import LeakAuditModel

/// Adopting leak-audit in a package that already leaks: record today's findings, then fail only on
/// new or larger ones.
struct BaselineOptionGroup: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Fail only on findings that are not in this baseline file or are larger than it records; report the others as baselined, and its entries that no longer occur as gone.",
            valueName: "file"))
    var baseline: String?

    @Option(
        name: .customLong("write-baseline"),
        help: ArgumentHelp(
            "Write this run's unsuppressed findings to this file as a baseline (docs/configuration.md). The exit code is unchanged.",
            valueName: "file"))
    var writeBaseline: String?

    /// Adds the baseline to compare with to the settings.
    func apply(to settings: inout AuditSettings) {
        settings.baselineFile = baseline
    }
}

extension BaselineOptionGroup {
    /// Opens the `--write-baseline` file before the target runs, so that a bad path costs no run.
    func openDestination() throws(SinkError) -> ReportSink? {
        guard let writeBaseline else { return nil }
        do {
            return try ReportSink.open(path: writeBaseline)
        } catch {
            var error = error
            error.subject = "the baseline"
            throw error
        }
    }

    /// Writes the report's findings to `destination`, and returns the line that tells where; a
    /// report of a target that could not be audited has no findings worth keeping, and writes none.
    func write(_ report: AuditReport, to destination: ReportSink) throws(SinkError) -> String {
        let path = destination.path ?? ""
        guard report.notAudited == nil else {
            destination.discard()
            return "leak-audit: the baseline '\(path)' was not written: the target could not be audited"
        }
        let baseline = Baseline(findingsOf: report)
        do {
            try destination.write(baseline.encoded())
        } catch {
            var error = error
            error.subject = "the baseline"
            throw error
        }
        let findings = baseline.entries.count == 1 ? "1 finding" : "\(baseline.entries.count) findings"
        return "leak-audit: wrote the baseline '\(path)' (\(findings))"
    }
}
