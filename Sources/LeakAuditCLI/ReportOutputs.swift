import Dispatch
import LeakAuditCore
import LeakAuditModel
import LeakAuditRendering
import Synchronization

/// Every report one run writes: the primary report and each `--output-FORMAT` file, opened before
/// the target runs so that a bad path costs no run, and written after it.
struct ReportOutputs {
    private var outputs: [(format: ReportFormat, sink: ReportSink)]
    /// `--verbose`: the text report shows everything, at full length.
    private var verbose = false
    /// `--color`, and the variables that decide it with `auto`.
    private var color = ColorChoice.auto
    private var environment: [String: String] = [:]
    /// `--quiet`: nothing to standard error for a clean run.
    private var quiet = false

    /// Opens every destination, the primary report going to `standardStream` without `--output`;
    /// when one cannot be opened, the ones already opened are discarded. `environment` is
    /// leak-audit's (NO_COLOR and TERM decide the color with `--color auto`).
    static func open(
        _ options: ReportOptions, standardStream: ReportSink = .standardError, environment: [String: String]
    ) throws(SinkError) -> ReportOutputs {
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
        return ReportOutputs(
            outputs: outputs, verbose: options.verbose, color: options.color, environment: environment, quiet: options.quiet)
    }

    /// Renders the report in each format and writes it; every destination is tried, and the
    /// failures are returned. With `--quiet`, a clean run's report is not written to the standard
    /// stream (files are).
    ///
    /// The formats are rendered at once, on as many cores as there are (the target has ended),
    /// then written in their order: the HTML report takes about as long as the text and JSON
    /// reports together (Swinject's census run: 59, 12 and 26 ms of leak-audit's CPU).
    func write(_ report: AuditReport) -> [SinkError] {
        let written = outputs.filter { !(quiet && report.verdict == .clean && $0.sink.path == nil) }
        let renderings = written.map { format, sink in
            let colored = color.colorsText(destinationIsTerminal: sink.isTerminal, environment: environment)
            return (format, RenderingOptions(width: sink.columns, verbose: verbose, colored: colored))
        }
        let texts = Mutex([String](repeating: "", count: renderings.count))
        DispatchQueue.concurrentPerform(iterations: renderings.count) { index in
            let (format, options) = renderings[index]
            let text = format.renderer(options).render(report)
            texts.withLock { $0[index] = text }
        }
        var failures: [SinkError] = []
        for (output, text) in zip(written, texts.withLock { $0 }) {
            do {
                try output.sink.write(text)
            } catch {
                failures.append(error)
            }
        }
        return failures
    }

    /// Writes `text`, already rendered (a comparison of two reports), to every destination; every
    /// destination is tried, and the failures are returned. With `--quiet`, a comparison that
    /// fails nothing (`failsNothing`) is not written to the standard stream (files are).
    func write(_ text: String, failsNothing: Bool) -> [SinkError] {
        var failures: [SinkError] = []
        for (_, sink) in outputs {
            if quiet && failsNothing && sink.path == nil { continue }
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
