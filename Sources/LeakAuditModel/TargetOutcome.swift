/// How the target ended.
public enum TargetOutcome: Sendable, Hashable {
    /// It called exit (or returned from main) with this status.
    case exited(code: Int32)
    /// A signal ended it.
    case signaled(signal: Int32)
    /// It had not ended: a process `leak-audit inspect` copied, which ran on.
    case running

    /// True for exit status 0, and for a process inspected while it ran (it did not fail).
    public var succeeded: Bool { self == .exited(code: 0) || self == .running }
}
