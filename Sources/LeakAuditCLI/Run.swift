import ArgumentParser
import Foundation
import LeakAuditCore

/// `leak-audit run`: audit one run of a program or test bundle.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a program or .xctest bundle and report the types that went over budget.",
        discussion: """
            The target's standard input, output and error are passed through untouched and its \
            arguments as given; SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to leak-audit reach the \
            target, and the report is still written. Without --output the report goes to \
            standard error. Options after the target belong to the target.

            \(ExitStatus.helpTable)
            """
    )

    @OptionGroup var report: ReportOptions

    @OptionGroup(title: "Types without LeakMonitor") var watch: WatchOptionGroup

    @Argument(help: ArgumentHelp("The program or .xctest bundle to run.", valueName: "target"))
    var target: String

    @Argument(
        parsing: .captureForPassthrough, help: ArgumentHelp("Arguments passed to the target unchanged.", valueName: "arguments"))
    var targetArguments: [String] = []

    func run() throws {
        let watchOptions = try watch.resolve()
        // Open the output first: a bad path must not cost a whole run.
        let sink: FileHandle
        if let output = report.output {
            guard FileManager.default.createFile(atPath: output, contents: nil), let handle = FileHandle(forWritingAtPath: output)
            else {
                throw ValidationError("cannot write the report to '\(output)': check the directory exists and is writable")
            }
            sink = handle
        } else {
            sink = FileHandle.standardError
        }

        let auditReport: AuditReport
        do {
            auditReport = try audit(
                AuditRequest(target: target, arguments: targetArguments, watch: watchOptions), toolVersion: leakAuditVersion)
        } catch {
            FileHandle.standardError.write(Data("leak-audit: error: \(error.description)\n".utf8))
            throw ExitCode(ExitStatus(error).rawValue)
        }
        sink.write(Data(report.format.renderer.render(auditReport).utf8))
        if report.output != nil, auditReport.verdict != .clean {
            // The report went to a file: say in the log why the run is red.
            let line =
                auditReport.verdict == .notAudited
                ? "leak-audit: '\(target)' could not be audited; see \(report.output ?? "")"
                : "leak-audit: see \(report.output ?? "") for the report"
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
        throw ExitCode(ExitStatus(auditReport.verdict).rawValue)
    }
}
