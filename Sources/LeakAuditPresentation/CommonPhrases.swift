import LeakAuditModel

// Words every report and message uses for counts, paths and how a target ended, so that each says
// them the same way.

extension TargetOutcome {
    /// "exited with code 0", "killed by signal 6 (SIGABRT)", "ran on after it was inspected".
    public var phrase: String {
        switch self {
        case .exited(let code): "exited with code \(code)"
        case .signaled(let signal): "killed by signal \(signal)" + (signalNames[signal].map { " (\($0))" } ?? "")
        case .running: "ran on after it was inspected"
        }
    }
}

/// `SIGTERM` for 15, `signal 42` for a number without a name here.
package func signalName(_ signal: Int32) -> String {
    signalNames[signal] ?? "signal \(signal)"
}

private let signalNames: [Int32: String] = [
    1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS",
    8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM",
]

/// `1 test`, `2 tests`, `1 process`, `3 processes`: a count and its noun, in the number that
/// agrees with it. Every report and message that counts something says it this way.
package func counted(_ count: Int, _ singular: String, plural: String? = nil) -> String {
    "\(count) \(count == 1 ? singular : plural ?? singular + "s")"
}

/// `counted` for unsigned counts (records, slots).
package func counted(_ count: UInt64, _ singular: String, plural: String? = nil) -> String {
    "\(count) \(count == 1 ? singular : plural ?? singular + "s")"
}

/// `path` relative to `directory` when it lies under it, else `path` unchanged.
package func relativePath(_ path: String, under directory: String) -> String {
    let prefix = directory.hasSuffix("/") ? directory : directory + "/"
    return path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : path
}
