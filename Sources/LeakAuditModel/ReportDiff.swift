/// What changed from one run to another (`leak-audit report --diff OLD NEW`), as macOS
/// `leaks -diffFrom` shows it: for each finding (a type over budget, with `--leaks-per-test` a
/// type a test left alive, and a group of unreachable objects) and each type alive at exit in the
/// census, whether it appeared, grew, shrank, stayed the same or disappeared.
///
/// Entries are matched by name, as a baseline matches them (`Baseline.stableKey`): addresses in
/// the names of types defined inside functions and the source location ending a Swift Testing
/// test's ID are left out, so that a rebuild does not make every finding new. Types within budget
/// in both reports are no finding in either, and are not listed.
public struct ReportDiff: Sendable, Hashable {
    /// How an entry changed from the old report to the new.
    public enum Change: String, Sendable, Hashable, CaseIterable, Comparable {
        /// In the new report, not the old: a new finding (or a type newly alive at exit).
        case appeared
        /// In both, and larger in the new report: one of its counts increased.
        case grew
        /// In both, and smaller in the new report: none of its counts increased, one decreased.
        case shrank
        /// In both, with the same counts.
        case unchanged
        /// In the old report, not the new: fixed.
        case disappeared

        /// The order changes are listed in: what needs attention first.
        public static func < (left: Change, right: Change) -> Bool {
            let order = allCases
            return (order.firstIndex(of: left) ?? 0) < (order.firstIndex(of: right) ?? 0)
        }

        /// True for the changes that can fail a comparison: a finding appeared or grew.
        public var isGrowth: Bool { self == .appeared || self == .grew }
    }

    /// One of the two reports compared.
    public struct Side: Sendable, Hashable {
        /// The report file, as given.
        public var path: String
        /// The audited target, as given to `leak-audit run`.
        public var target: String
        /// How the target ended.
        public var outcome: TargetOutcome
        /// The run's verdict.
        public var verdict: AuditVerdict
        /// Why the run could not be audited, nil when it was.
        public var notAudited: AuditReport.NotAuditedReason?
        /// True when records were lost or damaged: the counts may be wrong.
        public var incomplete: Bool
        /// The leak-audit that wrote the report.
        public var toolVersion: String

        /// The side of `report`, read from `path`.
        public init(_ report: AuditReport, path: String) {
            self.path = path
            target = report.target.path
            outcome = report.target.outcome
            verdict = report.verdict
            notAudited = report.notAudited
            incomplete = report.isIncomplete
            toolVersion = report.tool.version
        }
    }

    /// A tracked type's counts in one report.
    public struct TypeCounts: Sendable, Hashable {
        /// Its budget.
        public var max: Int
        /// The most instances alive at once.
        public var peakLive: Int
        /// Instances alive when the target ended.
        public var liveAtExit: Int
        /// Instances alive at the peak beyond the budget: the finding's size, as a baseline records it.
        public var overBudget: Int

        /// True when the type went over its budget: a finding.
        public var exceeded: Bool { peakLive > max }

        /// Creates the counts from their parts.
        public init(max: Int, peakLive: Int, liveAtExit: Int, overBudget: Int) {
            self.max = max
            self.peakLive = peakLive
            self.liveAtExit = liveAtExit
            self.overBudget = overBudget
        }

        /// The counts of `type`.
        init(_ type: AuditReport.TrackedType) {
            self.init(max: type.max, peakLive: type.peakLive, liveAtExit: type.liveAtExit, overBudget: type.overBudget)
        }

        /// The counts of two types reported under one name (types defined inside functions differ
        /// only by address): added up.
        func adding(_ other: TypeCounts) -> TypeCounts {
            TypeCounts(
                max: max + other.max, peakLive: peakLive + other.peakLive, liveAtExit: liveAtExit + other.liveAtExit,
                overBudget: overBudget + other.overBudget)
        }
    }

    /// A type over budget in either report.
    public struct TypeChange: Sendable, Hashable {
        /// Its report name (the new report's, when both have it).
        public var name: String
        /// How it changed.
        public var change: Change
        /// Its counts in the old report; nil when the old run did not track it.
        public var old: TypeCounts?
        /// Its counts in the new report; nil when the new run did not track it.
        public var new: TypeCounts?
        /// How the finding counts in the new report (suppressed, baselined, failing); in the old
        /// report for one that disappeared.
        public var status: FindingStatus

        /// True when this change fails the comparison: the finding appeared or grew, and it fails
        /// the new run (it is neither suppressed nor within the new run's baseline).
        public var fails: Bool { change.isGrowth && status.fails }
    }

    /// A type that a test left alive (`--leaks-per-test`) in either report.
    public struct TestLeakChange: Sendable, Hashable {
        /// The test's name (the new report's, when both have it).
        public var test: String
        /// The type's report name.
        public var type: String
        /// How it changed.
        public var change: Change
        /// Instances left alive in the old run (0: none).
        public var old: Int
        /// Instances left alive in the new run (0: none).
        public var new: Int
        /// How the finding counts in the new report; in the old report for one that disappeared.
        public var status: FindingStatus

        /// True when this change fails the comparison: the leak appeared or grew, and it fails the
        /// new run.
        public var fails: Bool { change.isGrowth && status.fails }
    }

    /// A type alive at exit in either census (`--census`). The census informs: its changes fail
    /// nothing.
    public struct CensusChange: Sendable, Hashable {
        /// The type's name (the new report's, when both have it).
        public var type: String
        /// How it changed.
        public var change: Change
        /// Instances alive at exit in the old run (0: none, or folded).
        public var old: Int
        /// Instances alive at exit in the new run (0: none, or folded).
        public var new: Int
        /// Their bytes in the old and the new report, when both censuses have bytes (reports of
        /// `leak-audit inspect`, from heap walks); nil otherwise.
        public var bytes: (old: Int, new: Int)? {
            guard let oldBytes, let newBytes else { return nil }
            return (oldBytes, newBytes)
        }
        var oldBytes: Int? = nil
        var newBytes: Int? = nil
    }

    /// Something that limits what the comparison can say.
    public enum Note: Sendable, Hashable {
        /// That run could not be audited: there is nothing to compare.
        case notAudited(old: Bool, reason: AuditReport.NotAuditedReason)
        /// That run's records were lost or damaged: its counts may be wrong.
        case incomplete(old: Bool)
        /// Only one run was made with `--leaks-per-test`: tests are not compared.
        case testsInOneRun(old: Bool)
        /// Only one run was made with `--census`: censuses are not compared.
        case censusInOneRun(old: Bool)
        /// Only one run checked for unreachable objects: they are not compared.
        case unreachableInOneRun(old: Bool)
        /// The runs audited different targets.
        case differentTargets(old: String, new: String)
    }

    /// What a comparison concluded; `leak-audit report --diff` exits with its code.
    public enum Verdict: Sendable, Hashable {
        /// No finding that fails the new run appeared or grew.
        case noGrowth
        /// A finding that fails the new run appeared or grew.
        case grew
        /// A run could not be audited: nothing was compared.
        case notComparable
    }

    /// The old report.
    public var old: Side
    /// The new report.
    public var new: Side
    /// Types over budget in either report: appeared first, then grew, shrank, unchanged,
    /// disappeared, each by name.
    public var types: [TypeChange]
    /// Types tests left alive in either report, in the same order; nil unless both runs were made
    /// with `--leaks-per-test`.
    public var testLeaks: [TestLeakChange]?
    /// Types alive at exit in either census, in the same order; nil unless both runs were made
    /// with `--census`.
    public var census: [CensusChange]?
    /// Groups of unreachable objects of the program's own types in either report, in the same
    /// order; nil unless both runs checked for them (UnreachableDiff.swift).
    public var unreachable: [UnreachableChange]? = nil
    /// What limits the comparison.
    public var notes: [Note]

    /// Compares `new` with `old`; the paths name the reports.
    public init(old: AuditReport, oldPath: String, new: AuditReport, newPath: String) {
        self.old = Side(old, path: oldPath)
        self.new = Side(new, path: newPath)
        notes = []
        for (report, isOld) in [(old, true), (new, false)] {
            if let reason = report.notAudited { notes.append(.notAudited(old: isOld, reason: reason)) }
        }
        let comparable = old.notAudited == nil && new.notAudited == nil
        for (report, isOld) in [(old, true), (new, false)] where report.isIncomplete && comparable {
            notes.append(.incomplete(old: isOld))
        }
        if old.target.path != new.target.path {
            notes.append(.differentTargets(old: old.target.path, new: new.target.path))
        }
        types = comparable ? Self.typeChanges(old, new) : []
        testLeaks = nil
        census = nil
        guard comparable else { return }
        switch (old.tests, new.tests) {
        case (let oldTests?, let newTests?): testLeaks = Self.testLeakChanges(oldTests, newTests)
        case (nil, nil): break
        case (let oldTests, _): notes.append(.testsInOneRun(old: oldTests != nil))
        }
        switch (old.census, new.census) {
        case (let oldCensus?, let newCensus?): census = Self.censusChanges(oldCensus, newCensus)
        case (nil, nil): break
        case (let oldCensus, _): notes.append(.censusInOneRun(old: oldCensus != nil))
        }
        switch (old.unreachable, new.unreachable) {
        case (let oldGroups?, let newGroups?): unreachable = Self.unreachableChanges(oldGroups, newGroups)
        case (nil, nil): break
        case (let oldGroups, _): notes.append(.unreachableInOneRun(old: oldGroups != nil))
        }
    }

    /// The comparison's verdict: not comparable when a run was not audited, grew when a finding
    /// that fails the new run appeared or grew.
    public var verdict: Verdict {
        if old.notAudited != nil || new.notAudited != nil { return .notComparable }
        return failingFindings > 0 ? .grew : .noGrowth
    }

    /// How many findings (types over budget, tests' leaks and groups of unreachable objects, not
    /// the census) changed so.
    public func findings(_ change: Change) -> Int {
        types.count { $0.change == change } + (testLeaks ?? []).count { $0.change == change }
            + (unreachable ?? []).count { $0.change == change }
    }

    /// How many findings appeared or grew and fail the new run.
    public var failingFindings: Int {
        types.count(where: \.fails) + (testLeaks ?? []).count(where: \.fails) + (unreachable ?? []).count(where: \.fails)
    }

    // MARK: - Matching

    private static func typeChanges(_ old: AuditReport, _ new: AuditReport) -> [TypeChange] {
        func byKey(_ report: AuditReport) -> [String: (name: String, counts: TypeCounts, status: FindingStatus)] {
            var result: [String: (name: String, counts: TypeCounts, status: FindingStatus)] = [:]
            for type in report.types {
                let key = SwiftName.stableTypeName(type.name)
                let counts = TypeCounts(type)
                if let existing = result[key] {
                    let status = existing.status.fails || !type.exceeded ? existing.status : type.status
                    result[key] = (existing.name, existing.counts.adding(counts), status)
                } else {
                    result[key] = (type.name, counts, type.status)
                }
            }
            return result
        }
        let (before, after) = (byKey(old), byKey(new))
        var changes: [(key: String, change: TypeChange)] = []
        for key in Set(before.keys).union(after.keys) {
            let (was, now) = (before[key], after[key])
            let (wasFinding, isFinding) = (was?.counts.exceeded ?? false, now?.counts.exceeded ?? false)
            let change: Change
            switch (wasFinding, isFinding) {
            case (false, false): continue
            case (false, true): change = .appeared
            case (true, false): change = .disappeared
            case (true, true):
                guard let was, let now else { continue }
                let pairs = [
                    (was.counts.overBudget, now.counts.overBudget), (was.counts.peakLive, now.counts.peakLive),
                    (was.counts.liveAtExit, now.counts.liveAtExit),
                ]
                change = Self.change(pairs)
            }
            let name = now?.name ?? was?.name ?? key
            let status = (isFinding ? now?.status : was?.status) ?? .failing
            changes.append((key, TypeChange(name: name, change: change, old: was?.counts, new: now?.counts, status: status)))
        }
        return changes.sorted { ($0.change.change, $0.key) < ($1.change.change, $1.key) }.map(\.change)
    }

    private static func testLeakChanges(_ old: [AuditReport.TestReport], _ new: [AuditReport.TestReport]) -> [TestLeakChange] {
        struct Key: Hashable, Comparable {
            var test: String
            var type: String
            static func < (left: Key, right: Key) -> Bool { (left.test, left.type) < (right.test, right.type) }
        }
        func byKey(_ tests: [AuditReport.TestReport]) -> [Key: (test: String, type: String, count: Int, status: FindingStatus)] {
            var result: [Key: (test: String, type: String, count: Int, status: FindingStatus)] = [:]
            for test in tests {
                for leaked in test.leaked {
                    let key = Key(test: SwiftName.stableTestName(test.name), type: SwiftName.stableTypeName(leaked.type))
                    if let existing = result[key] {
                        let status = existing.status.fails ? existing.status : leaked.status
                        result[key] = (existing.test, existing.type, existing.count + leaked.count, status)
                    } else {
                        result[key] = (test.name, leaked.type, leaked.count, leaked.status)
                    }
                }
            }
            return result
        }
        let (before, after) = (byKey(old), byKey(new))
        var changes: [(key: Key, change: TestLeakChange)] = []
        for key in Set(before.keys).union(after.keys) {
            let (was, now) = (before[key], after[key])
            let (oldCount, newCount) = (was?.count ?? 0, now?.count ?? 0)
            let change: Change =
                switch (was, now) {
                case (nil, _): .appeared
                case (_, nil): .disappeared
                default: Self.change([(oldCount, newCount)])
                }
            let status = (now ?? was)?.status ?? .failing
            changes.append(
                (
                    key,
                    TestLeakChange(
                        test: now?.test ?? was?.test ?? key.test, type: now?.type ?? was?.type ?? key.type, change: change,
                        old: oldCount, new: newCount, status: status)
                ))
        }
        return changes.sorted { ($0.change.change, $0.key) < ($1.change.change, $1.key) }.map(\.change)
    }

    private static func censusChanges(_ old: AuditReport.Census, _ new: AuditReport.Census) -> [CensusChange] {
        func byKey(_ census: AuditReport.Census) -> [String: (type: String, count: Int, bytes: Int)] {
            var result: [String: (type: String, count: Int, bytes: Int)] = [:]
            for entry in census.entries {
                let key = SwiftName.stableTypeName(entry.name)
                result[key] = (
                    result[key]?.type ?? entry.name, (result[key]?.count ?? 0) + entry.liveAtExit,
                    (result[key]?.bytes ?? 0) + (entry.bytes ?? 0)
                )
            }
            return result
        }
        // Bytes are compared when both censuses come from heap walks (`leak-audit inspect`).
        let withBytes = [old, new].allSatisfy { $0.entries.allSatisfy { $0.bytes != nil } }
        let (before, after) = (byKey(old), byKey(new))
        var changes: [(key: String, change: CensusChange)] = []
        for key in Set(before.keys).union(after.keys) {
            let (was, now) = (before[key], after[key])
            let change: Change =
                switch (was, now) {
                case (nil, _): .appeared
                case (_, nil): .disappeared
                default:
                    Self.change(
                        [(was?.count ?? 0, now?.count ?? 0)] + (withBytes ? [(was?.bytes ?? 0, now?.bytes ?? 0)] : []))
                }
            var entry = CensusChange(
                type: now?.type ?? was?.type ?? key, change: change, old: was?.count ?? 0, new: now?.count ?? 0)
            if withBytes { (entry.oldBytes, entry.newBytes) = (was?.bytes ?? 0, now?.bytes ?? 0) }
            changes.append((key, entry))
        }
        return changes.sorted { ($0.change.change, $0.key) < ($1.change.change, $1.key) }.map(\.change)
    }

    /// Grew when any count increased (even if another decreased), shrank when none increased and
    /// one decreased, else unchanged.
    static func change(_ pairs: [(old: Int, new: Int)]) -> Change {
        if pairs.contains(where: { $0.new > $0.old }) { return .grew }
        if pairs.contains(where: { $0.new < $0.old }) { return .shrank }
        return .unchanged
    }
}
