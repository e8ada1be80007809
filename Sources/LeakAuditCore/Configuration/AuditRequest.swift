import LeakAuditModel

/// What to audit and how: the target, its arguments, and the configuration.
public struct AuditRequest: Sendable {
    /// The program or .xctest bundle, as given on the command line.
    public var target: String
    /// Arguments passed to it unchanged.
    public var arguments: [String]
    /// The arguments' bytes as the caller received them, passed to the target instead of
    /// `arguments` when set (arguments need not be valid UTF-8).
    public var argumentBytes: [[UInt8]]?
    /// What to watch and which findings fail the run.
    public var configuration: AuditConfiguration
    /// `--timeout`: stop the target after this many seconds (SIGTERM, then SIGKILL).
    public var timeoutSeconds: Int?
    /// Hears how the audit goes, for a live display: called on the thread that runs `audit`, once
    /// when each stage begins (`AuditProgress.Stage`) and within a stage at most every 100 ms
    /// while the target runs and while stacks are symbolized. nil for no display.
    public var progress: (@Sendable (AuditProgress) -> Void)?
    /// The environment the target inherits; nil for this process's. A caller that has read it
    /// already passes it on: reading it builds a dictionary of every variable.
    public var environment: [String: String]?

    /// Creates a request.
    public init(target: String, arguments: [String], configuration: AuditConfiguration = AuditConfiguration()) {
        self.target = target
        self.arguments = arguments
        self.configuration = configuration
    }

    /// Creates a request that watches `watch` and judges findings by `policy`.
    public init(target: String, arguments: [String], watch: WatchOptions, policy: FindingPolicy = FindingPolicy()) {
        self.init(target: target, arguments: arguments, configuration: AuditConfiguration(watch: watch, policy: policy))
    }
}
