import LeakAuditCore
import LeakAuditModel
import LeakAuditRendering

/// Every report one run writes: the primary report and each `--output-FORMAT` file, opened before
/// the target runs so that a bad path costs no run, and written after it.
struct ReportOutputs {
    private var outputs: [(format: ReportFormat, sink: ReportSink)]
    /// `--verbose`: the text report shows everything, at full length.
    private var verbose = false

    /// Opens every destination, the primary report going to `standardStream` without `--output`;
    /// when one cannot be opened, the ones already opened are discarded.
    static func open(_ options: ReportOptions, standardStream: ReportSink = .standardError) throws(SinkError)
        -> ReportOutputs
    {
        var outputs: [(format: ReportFormat, sink: ReportSink)] = []
        for (format, path) in options.destinations {
            do {
                outputs.append(
                    (format, try path.map { path throws(SinkError) in try ReportSink.open(path: path) } ?? standardStream))
            } catch {
                for output in outputs { output.sink.discard() }
                throw error
            }
        }
        return ReportOutputs(outputs: outputs, verbose: options.verbose)
    }

    /// Renders the report in each format and writes it; every destination is tried, and the
    /// failures are returned.
    func write(_ report: AuditReport) -> [SinkError] {
        var failures: [SinkError] = []
        for (format, sink) in outputs {
            do {
                let renderer: any ReportRenderer =
                    format == .text ? TextReportRenderer(width: sink.columns, verbose: verbose) : format.renderer
                try sink.write(renderer.render(report))
            } catch {
                failures.append(error)
            }
        }
        return failures
    }

    /// Writes `text`, already rendered (a comparison of two reports), to every destination; every
    /// destination is tried, and the failures are returned.
    func write(_ text: String) -> [SinkError] {
        var failures: [SinkError] = []
        for (_, sink) in outputs {
            do {
                try sink.write(text)
            } catch {
                failures.append(error)
            }
        }
        return failures
    }

    /// Leaves no empty file behind when the run produced no report.
    func discard() {
        for output in outputs { output.sink.discard() }
    }
}
