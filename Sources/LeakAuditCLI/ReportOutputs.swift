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
    /// Each distinct rendering is made once (the text report for standard error and for a file,
    /// both 80 columns without color, is one), the renderings at once on as many cores as there
    /// are (the target has ended), the costliest first, then written in their order.
    func write(_ report: AuditReport) -> [SinkError] {
        let written = outputs.filter { !(quiet && report.verdict == .clean && $0.sink.path == nil) }
        var distinct: [(format: ReportFormat, options: RenderingOptions)] = []
        let renderingOfOutput = written.map { format, sink in
            let colored = color.colorsText(destinationIsTerminal: sink.isTerminal, environment: environment)
            let options = RenderingOptions(width: sink.columns, verbose: verbose, colored: colored)
            if let same = distinct.firstIndex(where: { $0.format == format && $0.options == options }) { return same }
            distinct.append((format, options))
            return distinct.count - 1
        }
        let renderings = distinct
        // Dispatch hands the iterations out in order: the longest rendering starts first, and the
        // shorter ones fill the other cores meanwhile.
        let order = renderings.indices.sorted { Self.costRank(renderings[$0].format) < Self.costRank(renderings[$1].format) }
        let texts = Mutex([String](repeating: "", count: renderings.count))
        DispatchQueue.concurrentPerform(iterations: order.count) { iteration in
            let (format, options) = renderings[order[iteration]]
            let text = format.renderer(options).render(report)
            texts.withLock { $0[order[iteration]] = text }
        }
        let rendered = texts.withLock { $0 }
        var failures: [SinkError] = []
        for (output, rendering) in zip(written, renderingOfOutput) {
            do {
                try output.sink.write(rendered[rendering])
            } catch {
                failures.append(error)
            }
        }
        return failures
    }

    /// The formats from the costliest to render to the cheapest, in leak-audit's instructions on
    /// Swinject's `--leaks-per-test --census` report: HTML, JSON, text (docs/benchmarks.md).
    private static func costRank(_ format: ReportFormat) -> Int {
        switch format {
        case .html: 0
        case .json: 1
        case .sarif: 2
        case .text: 3
        case .junit: 4
        case .github: 5
        }
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
