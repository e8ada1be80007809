// The report's stable vocabulary: the names of its verdicts, reasons and statuses, and the rules
// its findings belong to. Every renderer reads these, so that a format never borrows words from
// another; the JSON report, the SARIF log and the baseline rely on them never changing.

extension AuditVerdict {
    /// The verdict's name in machine-readable reports: `clean`, `budgetExceeded`, `testsLeaked`,
    /// `unreachableObjects`, `incomplete`, `targetFailed`, `notAudited`.
    public var name: String {
        switch self {
        case .clean: "clean"
        case .budgetExceeded: "budgetExceeded"
        case .testsLeaked: "testsLeaked"
        case .unreachableObjects: "unreachableObjects"
        case .incomplete: "incomplete"
        case .targetFailed: "targetFailed"
        case .notAudited: "notAudited"
        }
    }
}

extension AuditReport.NotAuditedReason {
    /// The reason's name in machine-readable reports (`neverAttached`, `staticRuntime`, …).
    public var name: String {
        switch self {
        case .neverAttached: "neverAttached"
        case .staticRuntime: "staticRuntime"
        case .recordFormatMismatch: "recordFormatMismatch"
        case .notSwift: "notSwift"
        case .noTestsRan: "noTestsRan"
        }
    }
}

extension TargetKind {
    /// The kind's name in machine-readable reports: `dynamicSwift`, `swiftTestBundle`,
    /// `staticSwift`, `notSwift`, `other`, `inspectedProcess`.
    public var name: String {
        switch self {
        case .dynamicSwift: "dynamicSwift"
        case .swiftTestBundle: "swiftTestBundle"
        case .staticSwift: "staticSwift"
        case .notSwift: "notSwift"
        case .other: "other"
        case .inspectedProcess: "inspectedProcess"
        }
    }
}

extension FindingStatus {
    /// The status's name in machine-readable reports: `failing`, `largerThanBaseline`,
    /// `suppressed`, `baselined`.
    public var name: String {
        switch self {
        case .failing: "failing"
        case .largerThanBaseline: "largerThanBaseline"
        case .suppressed: "suppressed"
        case .baselined: "baselined"
        }
    }
}

/// The kinds of finding, each a rule that code-scanning and test reports name.
public enum FindingRule: String, Sendable, CaseIterable {
    /// A type had more instances alive at once than its budget allows.
    case budgetExceeded = "budget-exceeded"
    /// A test left instances alive after it finished (`--leaks-per-test`).
    case testLeaked = "test-leaked"
    /// Swift objects of the program's own types that nothing reaches: a cycle of strong
    /// references, or an object retained with no reference left.
    case unreachableObjects = "unreachable-objects"

    /// The rule's stable id: `budget-exceeded`, `test-leaked`, `unreachable-objects`.
    public var id: String { rawValue }

    /// The rule's name in UpperCamelCase: `BudgetExceeded`, `TestLeaked`, `UnreachableObjects`.
    public var name: String {
        switch self {
        case .budgetExceeded: "BudgetExceeded"
        case .testLeaked: "TestLeaked"
        case .unreachableObjects: "UnreachableObjects"
        }
    }

    /// One sentence: what the rule finds.
    public var summary: String {
        switch self {
        case .budgetExceeded: "More instances of a type were alive at once than its budget allows."
        case .testLeaked: "A test left instances alive after it finished."
        case .unreachableObjects: "Swift objects of the program's own types were alive that nothing reaches."
        }
    }

    /// What the rule finds and where its findings point, in a few sentences.
    public var explanation: String {
        switch self {
        case .budgetExceeded:
            "A type declares, or is given by a budget pattern, the most instances that may be alive at once; "
                + "more were alive at the same time. The result points at the line that allocated them: "
                + "something keeps those instances alive after their owner is done with them."
        case .testLeaked:
            "Instances of one of the package's classes that a test allocated were still alive when the test "
                + "finished and its grace period ended (--leaks-per-test). The result points at the line that "
                + "allocated them."
        case .unreachableObjects:
            "When the process was checked, no global, thread-local storage, stack, register, task or untyped memory "
                + "reached these objects, yet they were alive: a cycle of strong references holds them together, or "
                + "one was retained and never released. Nothing can ever free them. The result names the cycle field "
                + "by field and points at the line that allocated them, when their allocation was watched."
        }
    }

    /// What to do about a finding.
    public var help: String {
        switch self {
        case .budgetExceeded:
            "Find what still holds the instances allocated at this line (a long-lived owner, a closure "
                + "capturing them strongly, a strong array of observers) and release them, or raise the "
                + "type's max if that many may legitimately be alive."
        case .testLeaked:
            "Find what still holds the instances allocated at this line once the test is over (a shared "
                + "cache or singleton, a closure capturing them strongly, an observer never removed) and "
                + "release them in the code or in the test's tear-down."
        case .unreachableObjects:
            "Break the cycle: make one of the references on it weak or unowned (a delegate, a parent, a closure's "
                + "capture list such as [weak self]), or clear it when the structure is done with; for an object "
                + "alone, balance the retain that kept it (Unmanaged.passRetained, a retained opaque pointer)."
        }
    }
}
