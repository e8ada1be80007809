import LeakAuditModel

/// A running process that `leak-audit inspect` was pointed at, as /proc describes it before it is
/// stopped: who it is, and whether it is a Swift program whose heap can be walked.
struct InspectedProcess: Sendable, Hashable {
    var pid: Int32
    /// Its name (/proc/<pid>/comm), as `ps` shows it.
    var name: String
    /// The executable's path (/proc/<pid>/exe); empty when it cannot be read.
    var executablePath: String
    /// Its command line, argument by argument (/proc/<pid>/cmdline).
    var commandLine: [String]
    /// What its executable is: a Swift program, a test bundle, static Swift, or no Swift.
    var kind: TargetKind
}
