/// How the target ended.
public enum TargetOutcome: Sendable, Hashable {
    /// It called exit (or returned from main) with this status.
    case exited(code: Int32)
    /// A signal ended it.
    case signaled(signal: Int32)

    /// True for exit status 0.
    public var succeeded: Bool { self == .exited(code: 0) }
}
