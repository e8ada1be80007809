// The comparison of two reports' unreachable objects (`leak-audit report --diff`): each group of
// the program's own types matched across the runs by its identity, as a baseline matches it.

extension ReportDiff {
    /// A group's size in one report.
    public struct UnreachableCounts: Sendable, Hashable {
        /// Structures of its shape.
        public var count: Int
        /// Objects in them, with those only they hold.
        public var objects: Int
        /// Their bytes.
        public var bytes: Int

        /// Creates the counts from their parts.
        public init(count: Int, objects: Int, bytes: Int) {
            self.count = count
            self.objects = objects
            self.bytes = bytes
        }

        /// The counts of two groups of one identity (their paths differed only in array indexes
        /// or in addresses in type names): added up.
        func adding(_ other: UnreachableCounts) -> UnreachableCounts {
            UnreachableCounts(count: count + other.count, objects: objects + other.objects, bytes: bytes + other.bytes)
        }
    }

    /// A group of unreachable objects of the program's own types in either report (internal ones
    /// are folded in both, and not compared).
    public struct UnreachableChange: Sendable, Hashable {
        /// The group's identity (`UnreachableObjects.Group.identity`).
        public var identity: String
        /// Its shape.
        public var shape: UnreachableObjects.Group.Shape
        /// Its path (the new report's, when both have it).
        public var path: [Retainer.Step]
        /// How it changed.
        public var change: Change
        /// Its size in the old report; nil when the old run had no such group.
        public var old: UnreachableCounts?
        /// Its size in the new report; nil when the new run had no such group.
        public var new: UnreachableCounts?
        /// How the group counts in the new report; in the old report for one that disappeared.
        public var status: FindingStatus

        /// Creates the value from its parts.
        public init(
            identity: String, shape: UnreachableObjects.Group.Shape, path: [Retainer.Step], change: Change,
            old: UnreachableCounts?, new: UnreachableCounts?, status: FindingStatus
        ) {
            self.identity = identity
            self.shape = shape
            self.path = path
            self.change = change
            self.old = old
            self.new = new
            self.status = status
        }

        /// True when this change fails the comparison: the group appeared or grew, and it fails the
        /// new run.
        public var fails: Bool { change.isGrowth && status.fails }
    }

    /// The groups of unreachable objects of the program's own types in either report, appeared
    /// first, then grew, shrank, unchanged, disappeared, each by identity. A group grew when it has
    /// more structures, objects or bytes.
    static func unreachableChanges(_ old: UnreachableObjects, _ new: UnreachableObjects) -> [UnreachableChange] {
        typealias Side = (group: UnreachableObjects.Group, counts: UnreachableCounts)
        func byIdentity(_ unreachable: UnreachableObjects) -> [String: Side] {
            var result: [String: Side] = [:]
            for group in unreachable.groups where !group.isInternal {
                let counts = UnreachableCounts(count: group.count, objects: group.objects, bytes: group.bytes)
                if let existing = result[group.identity] {
                    // The first failing status speaks for the identity, as for types.
                    let kept = existing.group.status.fails ? existing.group : group
                    result[group.identity] = (kept, existing.counts.adding(counts))
                } else {
                    result[group.identity] = (group, counts)
                }
            }
            return result
        }
        let (before, after) = (byIdentity(old), byIdentity(new))
        var changes: [UnreachableChange] = []
        for identity in Set(before.keys).union(after.keys) {
            let (was, now) = (before[identity], after[identity])
            let change: Change
            switch (was, now) {
            case (nil, _): change = .appeared
            case (_, nil): change = .disappeared
            case (let was?, let now?):
                change = Self.change([
                    (was.counts.count, now.counts.count), (was.counts.objects, now.counts.objects),
                    (was.counts.bytes, now.counts.bytes),
                ])
            }
            guard let shown = (now ?? was)?.group else { continue }
            changes.append(
                UnreachableChange(
                    identity: identity, shape: shown.shape, path: shown.path, change: change, old: was?.counts,
                    new: now?.counts, status: shown.status))
        }
        return changes.sorted { ($0.change, $0.identity) < ($1.change, $1.identity) }
    }
}
