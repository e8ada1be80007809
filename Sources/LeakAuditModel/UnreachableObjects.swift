/// The Swift heap objects that nothing reaches (`--unreachable`, the default check of a program
/// that opted into nothing, and `leak-audit inspect`): class instances, closure contexts, boxes
/// and collection storage that no global, thread-local, stack, register, task, test case or
/// untyped memory holds. They are grouped by the structure they form: each group is a shape of
/// cycle (`PairA.other → PairB.other → PairA`) or an object alone that was retained with no
/// reference left (over-retained); objects only those hold belong to their group.
public struct UnreachableObjects: Sendable, Hashable {
    /// One type among the unreachable objects.
    public struct TypeCount: Sendable, Hashable {
        /// Its report name (module-qualified, as in the census).
        public var name: String
        /// Unreachable objects of the type.
        public var count: Int
        /// Their bytes (malloc's usable sizes).
        public var bytes: Int
        /// True for a type of the Swift runtime, Foundation, XCTest or another toolchain library,
        /// which the user cannot act on.
        public var isInternal: Bool

        /// Creates the value from its parts.
        package init(name: String, count: Int, bytes: Int, isInternal: Bool) {
            self.name = name
            self.count = count
            self.bytes = bytes
            self.isInternal = isInternal
        }
    }

    /// Structures of the same shape: the same cycle of types and fields (array indexes and
    /// dictionary keys aside), or the same type alone.
    public struct Group: Sendable, Hashable {
        /// What holds the structure together.
        public enum Shape: String, Sendable, Hashable, CaseIterable {
            /// A cycle of strong references: `path` goes round it, its last step back at its first.
            case cycle
            /// One object on no cycle that nothing references (retained and never released):
            /// `path` is that object alone.
            case overRetained
        }

        /// Structures of this shape.
        public var count: Int
        /// Objects in them, with those only they hold.
        public var objects: Int
        /// Their bytes, with those only they hold.
        public var bytes: Int
        public var shape: Shape
        /// The cycle, from the object that starts it (first step's `via` empty) round to that
        /// object's type again; or the over-retained object alone.
        public var path: [Retainer.Step]
        /// Where the structures' objects were allocated, for those whose allocation was watched;
        /// empty when none was.
        public var allocations: [AuditReport.AllocationGroup]
        /// True when every type on the path is internal (runtime, Foundation, toolchain): folded,
        /// never failing.
        public var isInternal: Bool
        /// Whether it fails the run (a group of the program's own types), or is suppressed or
        /// baselined.
        public var status: FindingStatus = .failing

        /// Creates the value from its parts.
        package init(
            count: Int, objects: Int, bytes: Int, shape: Shape, path: [Retainer.Step],
            allocations: [AuditReport.AllocationGroup], isInternal: Bool, status: FindingStatus = .failing
        ) {
            self.count = count
            self.objects = objects
            self.bytes = bytes
            self.shape = shape
            self.path = path
            self.allocations = allocations
            self.isInternal = isInternal
            self.status = status
        }

        /// True when the group fails the run: not internal, neither suppressed nor baselined.
        public var fails: Bool { !isInternal && status.fails }
    }

    /// Unreachable objects in all.
    public var objects: Int
    /// Their bytes in all.
    public var bytes: Int
    /// Every type of the unreachable objects, most objects first.
    public var types: [TypeCount]
    /// The structures, failing ones first, then most bytes first.
    public var groups: [Group]
    /// Processes whose heap was checked.
    public var processesChecked: Int
    /// Why a process's heap could not be checked (the process crashed, ptrace was refused …),
    /// one line each.
    public var unavailable: [String]

    /// Creates the value from its parts.
    package init(
        objects: Int, bytes: Int, types: [TypeCount], groups: [Group], processesChecked: Int, unavailable: [String] = []
    ) {
        self.objects = objects
        self.bytes = bytes
        self.types = types
        self.groups = groups
        self.processesChecked = processesChecked
        self.unavailable = unavailable
    }

    /// The groups that fail the run.
    public var failingGroups: [Group] { groups.filter(\.fails) }
}

extension UnreachableObjects.Group {
    /// What the group is without how large it is, the same in every run of the same code:
    /// `cycle App.PairA.other → App.PairB.other → App.PairA`, `overRetained App.Token`. Type names
    /// are stable (`SwiftName.stableTypeName`) and array indexes and dictionary keys read `[…]`,
    /// so that the baseline and a comparison of two reports match a group across runs by it.
    public var identity: String {
        shape.rawValue + " " + Self.chain(path)
    }

    /// The module-qualified types of `path`, each followed by how it holds the next.
    static func chain(_ path: [Retainer.Step]) -> String {
        guard let first = path.first else { return "" }
        var text = SwiftName.stableTypeName(first.type)
        for step in path.dropFirst() {
            let via = step.via.hasPrefix("[") ? "[…]" : step.via
            let joiner = via.isEmpty || via.hasPrefix("[") || via.hasPrefix("(") || via.hasPrefix(".") ? "" : "."
            text += joiner + via + " → " + SwiftName.stableTypeName(step.type)
        }
        return text
    }

    /// The distinct types on the path, in path order: what a type suppression is matched against.
    public var pathTypes: [String] {
        var seen: Set<String> = []
        return path.map(\.type).filter { seen.insert($0).inserted }
    }
}
