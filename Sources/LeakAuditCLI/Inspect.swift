import ArgumentParser
import FoundationEssentials
import LeakAuditCore
import LeakAuditModel
import LeakAuditRendering

/// `leak-audit inspect`: stop a running Swift process just long enough to copy its heap, let it go
/// on, and report what lives in it.
struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Report the live Swift objects of a running process, without restarting it.",
        discussion: """
            leak-audit inspect PID stops every thread of the process with ptrace (no signal is \
            sent, nothing is preloaded, its output is untouched), copies its memory, lets it run \
            on, then walks the copy: the census of its live Swift objects by type (count and \
            bytes; the runtime's and Foundation's types folded unless --census-all), the objects \
            that nothing reaches grouped by the structure they form (a cycle with its fields, or an \
            over-retained object), and the objects that alone keep the most memory alive, each \
            with its path from its root. The \
            report says how long the process was stopped. No allocation was recorded, so the \
            report has no stacks. If leak-audit is interrupted or killed while the process is \
            stopped, the kernel lets the process go on.

            The process must be the same user's, traced by no debugger, and a Swift program; \
            Yama's ptrace_scope 1 allows only a process's ancestors to trace it (set it to 0, or \
            give leak-audit CAP_SYS_PTRACE). The report goes to standard output, or --output, in \
            any --format; \(ReportFormat.outputOptionsList) each also write it to a file. Two \
            JSON reports a minute apart compare with 'leak-audit report --diff old.json new.json': \
            the types that grew, and the unreachable groups that appeared or grew (exit 1).

            Exit codes:
              0   the process was inspected, and no object of the program's types is
                  unreachable
              1   objects of the program's types are unreachable (a cycle, or an object
                  retained with no reference left)
              3   the process is not a Swift program (it loads no Swift runtime)
              4   no such process, or leak-audit may not inspect it (another user's, traced
                  already, ptrace refused), or its copy failed; it runs on untouched
              64  a bad pid (not a number, 1, leak-audit itself), an output cannot be
                  written, or a bad option
            """
    )

    @OptionGroup var report: ReportOptions

    @Flag(help: "List the runtime's, Foundation's and the test harness's types in the census too, instead of folding them.")
    var censusAll = false

    @Option(help: ArgumentHelp("How many of the objects that retain the most to show, with their paths.", valueName: "count"))
    var largest = 10

    @Argument(help: ArgumentHelp("The process to inspect, as ps or pgrep shows it.", valueName: "pid"))
    var pid: String

    func validate() throws {
        guard (0...1_000).contains(largest) else { throw ValidationError("--largest '\(largest)' must be between 0 and 1000") }
    }

    func run() throws {
        let outputs: ReportOutputs
        do {
            outputs = try ReportOutputs.open(
                report, standardStream: .standardOutput, environment: ProcessInfo.processInfo.environment)
        } catch {
            printError("\(error)")
            throw ExitCode(ExitStatus.usageError.rawValue)
        }
        let inspected: AuditReport
        do {
            inspected = try inspect(
                InspectRequest(pid: pid, censusShowsInternals: censusAll, largestRetained: largest),
                toolVersion: leakAuditVersion)
        } catch {
            outputs.discard()
            printError(error.description)
            throw ExitCode(ExitStatus(error).rawValue)
        }
        let failures = outputs.write(inspected)
        for failure in failures { printError(failure.description) }
        if !failures.isEmpty { throw ExitCode(ExitStatus.usageError.rawValue) }
        throw ExitCode(ExitStatus(inspected.verdict).rawValue)
    }

    private func printError(_ message: String) {
        try? ReportSink.standardError.write("leak-audit: error: \(message)\n")
    }
}
