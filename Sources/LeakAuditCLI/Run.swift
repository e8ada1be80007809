import ArgumentParser
import FoundationEssentials
import LeakAuditCore
import LeakAuditModel
import LeakAuditRendering

#if canImport(Glibc)
    import Glibc
#endif

/// `leak-audit run`: audit one run of a program or test bundle.
struct Run: ParsableCommand {
    // The name given, not derived from the type: deriving it costs each run a reflection of the
    // type's name (about 0.8 M instructions).
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a program or .xctest bundle and report the types that went over budget.",
        discussion: """
            The target's standard input, output and error are passed through untouched and its \
            arguments as given; SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to leak-audit reach the \
            target, what it leaves running once it ends is killed, and the report is still \
            written. Without --output the report goes to standard error. \(ReportFormat.outputOptionsList) each also write the report in that format \
            to a file, so that one run gives a log, an artifact and annotations. Options after the target belong to the target.

            On a terminal, a status line on its bottom row shows how the run goes (the time, the \
            processes attached, the tracked instances alive, the type closest to its budget, the \
            tests finished) while the target's output scrolls above it; it is erased before the \
            report. It is never shown where standard error is not a terminal, with --quiet, or \
            when a report other than text goes to standard error. The text report is colored on a \
            terminal (--color; NO_COLOR=1 turns it off); --quiet writes it only for a failing run. \
            Neither changes the exit code.

            Suppressions in the configuration file and findings within a --baseline file are \
            reported but do not fail the run; --write-baseline records this run's findings for \
            later runs to compare with (docs/configuration.md).

            \(ExitStatus.helpTable)
            """
    )

    @OptionGroup var report: ReportOptions

    @OptionGroup(title: "Types without LeakMonitor") var watch: WatchOptionGroup

    @OptionGroup(title: "Tests") var tests: TestOptionGroup

    @OptionGroup(title: "Baseline") var baseline: BaselineOptionGroup

    @Option(
        help: ArgumentHelp(
            "Stop the target when it runs longer than this: SIGTERM, then SIGKILL 5 seconds later. The report holds what it wrote until then and says it was stopped.",
            valueName: "seconds"))
    var timeout: Int?

    @Argument(help: ArgumentHelp("The program or .xctest bundle to run.", valueName: "target"))
    var target: String

    @Argument(
        parsing: .captureForPassthrough, help: ArgumentHelp("Arguments passed to the target unchanged.", valueName: "arguments"))
    var targetArguments: [String] = []

    func validate() throws {
        if let timeout, timeout <= 0 || timeout > 604_800 {
            throw ValidationError("--timeout '\(timeout)' must be between 1 and 604800 seconds")
        }
        if let path = baseline.writeBaseline, report.destinations.contains(where: { $0.path == path }) {
            throw ValidationError("'\(path)' is given for a report and the baseline; give each its own file")
        }
    }

    func run() throws {
        // A bad pattern, configuration or baseline file is one line that names it, not the usage;
        // and so is a bad output, opened before the run: a bad file must not cost a whole run.
        let environment = ProcessInfo.processInfo.environment
        var settings = AuditSettings()
        watch.apply(to: &settings)
        tests.apply(to: &settings)
        baseline.apply(to: &settings)
        let configuration: AuditConfiguration
        let outputs: ReportOutputs
        let baselineDestination: ReportSink?
        do {
            configuration = try AuditConfiguration(settings)
            outputs = try ReportOutputs.open(report, environment: environment)
            do {
                baselineDestination = try baseline.openDestination()
            } catch {
                outputs.discard()
                throw error
            }
        } catch {
            printError("\(error)")
            throw ExitCode(ExitStatus.usageError.rawValue)
        }

        let auditReport: AuditReport
        // On a terminal, a live status line while the target runs; gone before anything is written.
        let statusLine = report.allowsStatusLine ? StatusLine.onStandardError(environment: environment) : nil
        do {
            var request = AuditRequest(target: target, arguments: targetArguments, configuration: configuration)
            request.argumentBytes = Self.rawTrailingArguments(count: targetArguments.count)
            request.timeoutSeconds = timeout
            request.environment = environment
            if let statusLine { request.progress = { progress in statusLine.show(progress) } }
            auditReport = try audit(request, toolVersion: leakAuditVersion)
            statusLine?.finish()
        } catch {
            statusLine?.finish()
            outputs.discard()
            baselineDestination?.discard()
            printError(error.description)
            throw ExitCode(ExitStatus(error).rawValue)
        }
        var failures = outputs.write(auditReport)
        if let baselineDestination {
            do {
                let line = try baseline.write(auditReport, to: baselineDestination)
                // Not into a machine-readable report on standard error, nor for a clean run with --quiet.
                let quietened = report.quiet && auditReport.verdict == .clean
                if !quietened && (report.output != nil || report.format == .text || report.format == .github) {
                    try? ReportSink.standardError.write(line + "\n")
                }
            } catch {
                failures.append(error)
            }
        }
        for failure in failures { printError(failure.description) }
        if !failures.isEmpty { throw ExitCode(ExitStatus.usageError.rawValue) }
        if let output = report.output, auditReport.verdict != .clean {
            // The report went to a file: say in the log why the run is red.
            let line =
                auditReport.verdict == .notAudited
                ? "leak-audit: '\(target)' could not be audited; see \(output)"
                : "leak-audit: see \(output) for the report"
            try? ReportSink.standardError.write(line + "\n")
        }
        throw ExitCode(ExitStatus(auditReport.verdict).rawValue)
    }

    private func printError(_ message: String) {
        try? ReportSink.standardError.write("leak-audit: error: \(message)\n")
    }

    /// The last `count` command-line arguments as the bytes the shell passed: the target's, which
    /// must reach it unchanged even when they are not valid UTF-8.
    static func rawTrailingArguments(count: Int) -> [[UInt8]] {
        let total = Int(CommandLine.argc)
        guard count <= total else { return [] }
        return ((total - count)..<total).map { index in
            guard let argument = CommandLine.unsafeArgv[index] else { return [] }
            return Array(
                UnsafeBufferPointer(
                    start: UnsafeRawPointer(argument).assumingMemoryBound(to: UInt8.self), count: strlen(argument)))
        }
    }
}
