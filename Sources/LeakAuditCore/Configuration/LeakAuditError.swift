import LeakAuditFiles
import LeakAuditModel
import LeakAuditPresentation

/// Everything that can stop an audit before it produces a report.
public enum LeakAuditError: Error, Equatable, CustomStringConvertible {
    /// The target path names no file, and no directory of PATH holds it.
    case targetNotFound(path: String)
    /// A bare name that is not on PATH, but is a program in the working directory.
    case targetNotOnPath(name: String)
    /// The target exists but cannot be executed (a directory, or no execute permission).
    case targetNotExecutable(path: String)
    /// The target can be executed but is no program the system can run (an empty file, neither
    /// ELF nor a `#!` script).
    case targetNotAProgram(path: String)
    /// The target is set-user-ID or set-group-ID to another user or group: it would run as them,
    /// and could not open leak-audit's channel, which only the same user's processes may.
    case targetRunsAsAnotherUser(path: String)
    /// posix_spawn failed for another reason.
    case targetSpawnFailed(path: String, errno: Int32)
    /// The record channel could not be created or mapped.
    case channelUnavailable(call: String, errno: Int32)
    /// libLeakAuditPreload.so is not next to the leak-audit executable.
    case preloadLibraryMissing(path: String)
    /// The budgets (with the rest of what the target is told to watch) take more bytes than a
    /// writer reads from the channel (LA_WIRE_MAX_WATCH_BYTES).
    case configurationTooLarge(bytes: Int, budgets: Int, limit: Int)
    /// `inspect` was given a pid it never stops: not a process number, init (1), or leak-audit
    /// itself.
    case processNotInspectable(pid: String, reason: String)
    /// No process has the pid `inspect` was given (or it ended before it could be copied).
    case processNotFound(pid: Int32)
    /// The process runs as another user, or the kernel refused to let leak-audit trace it.
    case processNotPermitted(pid: Int32, detail: String)
    /// The process is no Swift program: it has no Swift heap to walk.
    case processNotSwift(pid: Int32, name: String)
    /// Copying the process failed for another reason (a system call).
    case processCopyFailed(pid: Int32, reason: String)

    /// One line: what went wrong, naming the thing, and what to do.
    public var description: String {
        switch self {
        case .targetNotFound(let path):
            "target '\(path)' not found: check the path, or build it first (swift build)"
        case .targetNotOnPath(let name):
            "target '\(name)' is not on PATH; to run the one in this directory, write './\(name)'"
        case .targetNotExecutable(let path):
            "target '\(path)' is not executable: pass a program or an .xctest bundle built by swift build"
        case .targetNotAProgram(let path):
            "target '\(path)' is not a program the system can run (empty, or neither ELF nor a #! script): pass a program or an .xctest bundle built by swift build"
        case .targetRunsAsAnotherUser(let path):
            "target '\(path)' is set-user-ID or set-group-ID, so it would run as another user, whose process cannot write into leak-audit's channel: audit a copy without that bit (cp, then chmod u-s,g-s)"
        case .targetSpawnFailed(let path, let code):
            "target '\(path)' could not be started: \(systemErrorMessage(code))"
        case .channelUnavailable(let call, let code):
            "cannot create the record channel (\(call)): \(systemErrorMessage(code))"
        case .preloadLibraryMissing(let path):
            "'\(path)' is missing: build every product (swift build -c release), which puts it beside leak-audit"
        case .configurationTooLarge(let bytes, let budgets, let limit):
            "the configuration is too large: its \(counted(budgets, "budget")) take \(bytes) bytes, more than the \(limit) the target reads: use fewer or shorter patterns (one '*' pattern can cover many types)"
        case .processNotInspectable(let pid, let reason):
            "cannot inspect pid '\(pid)': \(reason)"
        case .processNotFound(let pid):
            "no process \(pid): it is not running (or ended before it could be copied); check the pid with ps"
        case .processNotPermitted(let pid, let detail):
            "leak-audit may not inspect process \(pid): \(detail)"
        case .processNotSwift(let pid, let name):
            "process \(pid) ('\(name)') is not a Swift program (it loads no Swift runtime), so it has no Swift heap to inspect"
        case .processCopyFailed(let pid, let reason):
            "process \(pid) could not be copied: \(reason); it was let go and runs on"
        }
    }
}
