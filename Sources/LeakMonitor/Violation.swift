/// A type that had more instances alive at once than its budget allows.
public struct Violation: Sendable, Hashable, CustomStringConvertible {
    /// The type's report name.
    public var typeName: String
    /// The type's budget.
    public var max: Int
    /// Instances alive when the budget was exceeded, the new one included.
    public var liveCount: Int

    /// Creates a violation record.
    public init(typeName: String, max: Int, liveCount: Int) {
        self.typeName = typeName
        self.max = max
        self.liveCount = liveCount
    }

    /// One line, for logs: the type, the live count and the budget.
    public var description: String {
        "memory leak: \(liveCount) instances of '\(typeName)' alive, max is \(max)"
    }
}

/// What the library does when a type goes over its budget in a process leak-audit did not start.
///
/// With leak-audit attached, every violation is recorded and reported at the end of the run, and
/// the process is never stopped: `.stop` and `.stopInDebugBuilds` do nothing then, while `.log`
/// and `.custom` still run.
public enum ViolationHandler: Sendable {
    /// Stops the process with the violation's description in debug builds (the default), and
    /// ignores the violation in release builds.
    case stopInDebugBuilds
    /// Stops the process with the violation's description in any build.
    case stop
    /// Writes the violation's description to standard error and goes on.
    case log
    /// Does nothing; live counts can still be read with ``MemoryLeakMonitor/counts()``.
    case ignore
    /// Calls the closure, on the thread that created the instance that exceeded the budget.
    case custom(@Sendable (Violation) -> Void)
}
