import FoundationEssentials

/// The findings of one run, recorded so that later runs fail only on what is new or larger
/// (`--write-baseline FILE`, `--baseline FILE`). Format version 1, described in
/// docs/configuration.md:
///
/// ```json
/// {"version": 1, "tool": "leak-audit",
///  "findings": [{"kind": "type", "type": "App.X", "overBudget": 3, "sites": ["App.Presenter.open()"]}]}
/// ```
///
/// A finding's identity is its type name (and, for a test's leak, the test's name): no line
/// numbers, addresses or stacks, so that moving unrelated code does not change it. Entries are
/// sorted by identity, so the same findings always make the same bytes.
public struct Baseline: Sendable, Hashable {
    /// The format version this leak-audit reads and writes.
    public static let version = 1

    /// One recorded finding.
    public struct Entry: Sendable, Hashable {
        /// What a finding is, without how large it is.
        public enum Key: Sendable, Hashable, Comparable, CustomStringConvertible {
            /// A type over budget, by report name.
            case type(String)
            /// A type whose instances a test left alive (`--leaks-per-test`).
            case test(test: String, type: String)
            /// A group of unreachable objects, by its identity
            /// (`UnreachableObjects.Group.identity`: `cycle App.PairA.other → App.PairB.other → App.PairA`).
            case unreachable(String)

            /// `App.X`, `App.X left by M.C/t`, or `unreachable cycle App.A.b → App.B.a → App.A`.
            public var description: String {
                switch self {
                case .type(let type): type
                case .test(let test, let type): "\(type) left by \(test)"
                case .unreachable(let identity): "unreachable \(identity)"
                }
            }
        }

        /// The finding's identity.
        public var key: Key
        /// Instances over budget for a type; instances left alive for a test; structures for a
        /// group of unreachable objects.
        public var count: Int
        /// The functions that allocated the instances, without lines: for people reading the
        /// file. Matching never depends on them.
        public var sites: [String]

        /// Creates an entry.
        public init(key: Key, count: Int, sites: [String] = []) {
            self.key = key
            self.count = count
            self.sites = sites
        }
    }

    /// The entries, sorted by key, one per key.
    public private(set) var entries: [Entry]
    /// The file it was read from, nil for a baseline made from a report.
    public var path: String?

    /// Creates a baseline of `entries`; entries with the same key are merged (their counts added).
    public init(entries: [Entry], path: String? = nil) {
        var merged: [Entry.Key: Entry] = [:]
        for entry in entries {
            var normalized = entry
            normalized.key = Self.stableKey(entry.key)
            if var existing = merged[normalized.key] {
                existing.count += normalized.count
                existing.sites = Array(Set(existing.sites + normalized.sites)).sorted()
                merged[normalized.key] = existing
            } else {
                normalized.sites = Array(Set(normalized.sites)).sorted()
                merged[normalized.key] = normalized
            }
        }
        self.entries = merged.values.sorted { $0.key < $1.key }
        self.path = path
    }

    /// The unsuppressed findings of `report`: every type over budget, with `--leaks-per-test` every
    /// test's leaked type, and every group of unreachable objects of the program's own types,
    /// whether failing or within an earlier baseline.
    public init(findingsOf report: AuditReport) {
        var entries: [Entry] = []
        for type in report.exceededTypes where type.status.suppression == nil {
            entries.append(Entry(key: .type(type.name), count: type.overBudget, sites: Self.sites(type.name, type.allocations)))
        }
        for (test, leaked) in report.testLeaks where leaked.status.suppression == nil {
            entries.append(
                Entry(
                    key: .test(test: test, type: leaked.type), count: leaked.count,
                    sites: Self.sites(leaked.type, leaked.allocations)))
        }
        for group in report.unreachableFindings where group.status.suppression == nil {
            entries.append(
                Entry(
                    key: .unreachable(group.identity), count: group.count,
                    sites: Self.sites(group.path.first?.type ?? "", group.allocations)))
        }
        self.init(entries: entries)
    }

    /// The key under which `key` is recorded and compared: addresses in the names of types defined
    /// inside functions, and the source location that ends a Swift Testing test's ID, left out.
    public static func stableKey(_ key: Entry.Key) -> Entry.Key {
        switch key {
        case .type(let type): .type(SwiftName.stableTypeName(type))
        case .test(let test, let type): .test(test: SwiftName.stableTestName(test), type: SwiftName.stableTypeName(type))
        case .unreachable(let identity): .unreachable(identity)
        }
    }

    /// The type a group of unreachable objects is shown by, from its identity (`cycle App.A.b →
    /// App.B.a → App.A`): the type its path ends at (for a cycle the one it starts at, for an
    /// object alone its type). A baseline entry's and a `gone` entry's `type`, for people; matching
    /// uses the whole identity.
    public static func shownType(ofIdentity identity: String) -> String {
        if let arrow = identity.ranges(of: "→ ").last { return String(identity[arrow.upperBound...]) }
        return String(identity.drop { $0 != " " }.dropFirst())
    }

    /// The function that allocated each group, without return type or line: the first frame with a
    /// source line outside the type itself (its `init`), or the first with a source line.
    static func sites(_ typeName: String, _ groups: [AuditReport.AllocationGroup]) -> [String] {
        let typePrefix = String(typeName.prefix { $0 != "<" }) + "."
        return groups.compactMap { group in
            let located = group.frames.filter(\.hasSourceLine)
            let frame = located.first { !($0.function ?? "").hasPrefix(typePrefix) } ?? located.first
            return frame?.function.map { SwiftName.stableTypeName(SwiftName.withoutReturnType($0)) }
        }
    }
}
