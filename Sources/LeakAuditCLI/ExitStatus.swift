import LeakAuditCore
import LeakAuditModel

/// leak-audit's exit codes; the README and `--help` document the same table.
enum ExitStatus: Int32, CaseIterable {
    /// The target exited 0 and no type exceeded its budget.
    case clean = 0
    /// At least one type exceeded its budget, a test left instances alive, or objects of the
    /// program's own types were unreachable (wins over a failing target).
    case failingFinding = 1
    /// No type exceeded its budget, but the target exited non-zero or was killed by a signal.
    case targetFailed = 2
    /// The target ran but could not be audited: it never attached, its runtime is static, or it
    /// ran no test.
    case notAudited = 3
    /// The target could not be started: missing, not executable; or (`inspect`) the process is
    /// gone, may not be inspected, or could not be copied.
    case targetNotStarted = 4
    /// No failing finding, but records were lost or damaged on the way: the run is not clean.
    case incomplete = 5
    /// leak-audit itself failed (the record channel could not be created).
    case internalError = 70
    /// A usage or configuration error: bad option, missing target, unwritable output.
    case usageError = 64

    init(_ verdict: AuditVerdict) {
        switch verdict {
        case .clean: self = .clean
        case .budgetExceeded, .testsLeaked, .unreachableObjects: self = .failingFinding
        case .incomplete: self = .incomplete
        case .targetFailed: self = .targetFailed
        case .notAudited: self = .notAudited
        }
    }

    /// A comparison of two reports (`report --diff`): growth exits as a run with a failing
    /// finding does.
    init(_ verdict: ReportDiff.Verdict) {
        switch verdict {
        case .noGrowth: self = .clean
        case .grew: self = .failingFinding
        case .notComparable: self = .notAudited
        }
    }

    init(_ error: LeakAuditError) {
        switch error {
        case .targetNotFound, .targetNotOnPath, .targetNotExecutable, .targetNotAProgram, .targetRunsAsAnotherUser,
            .targetSpawnFailed:
            self = .targetNotStarted
        case .processNotFound, .processNotPermitted, .processCopyFailed: self = .targetNotStarted
        case .processNotSwift: self = .notAudited
        case .channelUnavailable, .preloadLibraryMissing: self = .internalError
        case .configurationTooLarge, .processNotInspectable: self = .usageError
        }
    }

    /// The table shown in `--help`.
    static let helpTable = """
        Exit codes:
          0   the target exited 0 and no type exceeded its budget
              (suppressed and baselined findings do not count)
          1   at least one type exceeded its budget, (--leaks-per-test) a
              test left instances alive, or objects of the program's own
              types were unreachable (a cycle, an over-retained object),
              whatever the target did, and that finding is neither
              suppressed nor within --baseline
          2   no type exceeded its budget (or each that did is suppressed
              or baselined), but the target failed (a non-zero exit, or
              a signal)
          3   the target could not be audited: it never attached (no
              LeakMonitor, no --budget or --census), links the Swift
              runtime statically, is not a Swift program, its
              LeakMonitor is from another leak-audit release, or it
              ran tests and not one test ran (a filter matched none);
              inspect: the process is not a Swift program
          4   the target could not be started (not found, not executable,
              or set-user-ID to another user); inspect: the process is
              gone, may not be inspected, or could not be copied
          5   no type exceeded its budget, but the report is incomplete:
              records were lost or damaged on the way (a target that
              wrote into leak-audit's channel, a full channel), or more
              types or processes ran than leak-audit keeps; the counts
              may be wrong, so the run is not clean (wins over 2)
          64  usage or configuration error (also a bad --baseline file)
          70  internal error (the record channel or the preloaded
              library could not be set up)
        """
}
