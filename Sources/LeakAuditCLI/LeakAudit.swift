import ArgumentParser
import LeakAuditCore
import LeakAuditModel

#if canImport(Glibc)
    import Glibc
#endif

@main
struct LeakAudit: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "leak-audit",
        abstract: "Audit a Swift program's live instances against the budgets its types declare.",
        discussion: """
            Types opt in through the LeakMonitor library: they conform to MemoryLeakMonitorable, \
            declare `max`, and call MemoryLeakMonitor.validate(self) in init. `leak-audit run` \
            starts the program (or .xctest bundle), records every tracked instance's allocation \
            stack, and reports each type whose live count went over its max. `leak-audit \
            report` renders a report that a run saved as JSON in any format, or compares two.

            \(ExitStatus.helpTable)
            """,
        version: leakAuditVersion,
        subcommands: [Run.self, RenderReport.self, Inspect.self]
    )

    /// ArgumentParser's `main()`, except that an `ExitCode` thrown by a command's `run` (every run
    /// ends with one) ends the process at once: ArgumentParser would first work out the command's
    /// usage text, which it does not print for an exit code (0.4 M instructions at the end of every
    /// run). No command is asynchronous: an `AsyncParsableCommand` would need ArgumentParser's own
    /// `main`.
    ///
    /// It ends with `_exit`, not `exit`: leak-audit registers nothing to run at exit, writes its
    /// reports with write(2) and closes them, and `fflush` covers what went through stdio. A run ends
    /// about 0.4 ms sooner: after glibc's `exit`, which runs the loaded libraries' finalizers, the
    /// kernel takes 0.2 ms longer to tear the process down.
    ///
    /// Before anything is started or written, the guard: should leak-audit die of a fatal signal
    /// (a trap), the target's processes die first and no report file is left half written
    /// (`ProcessGuard`). A report file not written by the end (none is, on the ways out of a run
    /// that wrote no report) is removed.
    static func main() {
        ProcessGuard.install()
        do {
            let arguments = Array(CommandLine.arguments.dropFirst())
            var command = try parsedRun(arguments) ?? parseAsRoot(arguments)
            try command.run()
        } catch let code as ExitCode {
            ProcessGuard.discardPartialFiles()
            fflush(nil)
            _exit(code.rawValue)
        } catch {
            ProcessGuard.discardPartialFiles()
            Self.exit(withError: error)
        }
    }

    /// `leak-audit run …` parsed by ArgumentParser with `run` as the root command, or nil for any
    /// other command line, and for one that `run` alone does not parse into a `Run` (a help or
    /// version request, a completion script, any error), which `parseAsRoot` then parses from the
    /// top, as if this had not been tried: its messages and exit codes are the whole tool's.
    ///
    /// Why: under `leak-audit`, ArgumentParser first asks twice whether `run` takes passthrough
    /// arguments, and each time builds `run`'s whole argument set (the reflection of its 30
    /// properties and their conformance lookups) before it parses them, about 2.5 M instructions
    /// of each run's start. Parsed as its own root, the same arguments go through the same parsing
    /// of `run`'s options and the same validation; what `leak-audit` adds above `run` (the
    /// subcommand's name, `--version`) is not in them, or the parse fails and is done again.
    static func parsedRun(_ arguments: [String]) -> Run? {
        guard arguments.first == Run.configuration.commandName else { return nil }
        return (try? Run.parseAsRoot(Array(arguments.dropFirst()))) as? Run
    }

    /// Runs only without a subcommand: that is a usage error, not a successful run.
    func run() throws {
        try? ReportSink.standardError.write(Self.helpMessage() + "\n")
        try? ReportSink.standardError.write(
            "leak-audit: error: missing subcommand; run a target with 'leak-audit run <target>'\n")
        throw ExitCode(ExitStatus.usageError.rawValue)
    }
}
