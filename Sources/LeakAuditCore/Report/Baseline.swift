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

            /// `App.X`, or `App.X left by M.C/t`.
            public var description: String {
                switch self {
                case .type(let type): type
                case .test(let test, let type): "\(type) left by \(test)"
                }
            }
        }

        /// The finding's identity.
        public var key: Key
        /// Instances over budget for a type; instances left alive for a test.
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

    /// The unsuppressed findings of `report`: every type over budget and, with `--leaks-per-test`,
    /// every test's leaked type, whether failing or within an earlier baseline.
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
        self.init(entries: entries)
    }

    /// The key under which `key` is recorded and compared: addresses in the names of types defined
    /// inside functions, and the source location that ends a Swift Testing test's ID, left out.
    public static func stableKey(_ key: Entry.Key) -> Entry.Key {
        switch key {
        case .type(let type): .type(SwiftName.stableTypeName(type))
        case .test(let test, let type): .test(test: SwiftName.stableTestName(test), type: SwiftName.stableTypeName(type))
        }
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

    /// Reads and validates a baseline file.
    public static func load(path: String) throws(BaselineError) -> Baseline {
        let data: Data
        do {
            data = try Data(readingFile: path)
        } catch {
            if case .unreadable(_, let reason) = error { throw .unreadable(path: path, reason: reason) }
            throw .unreadable(path: path, reason: error.description)
        }
        let file: BaselineFileV1
        do {
            file = try JSONDecoder().decode(BaselineFileV1.self, from: data)
        } catch let DecodingError.keyNotFound(key, context) {
            let location = (context.codingPath + [key]).map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            throw .invalid(path: path, reason: "missing \"\(location.joined(separator: "."))\"")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            let location = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            throw .invalid(path: path, reason: "wrong type at \"\(location.joined(separator: "."))\"")
        } catch {
            throw .invalid(path: path, reason: "not valid JSON")
        }
        guard file.version == version else { throw .unsupportedVersion(path: path, version: file.version) }
        if let tool = file.tool, tool != "leak-audit" {
            throw .invalid(path: path, reason: "written by '\(tool)', not leak-audit")
        }
        var entries: [Entry] = []
        var seen: Set<Entry.Key> = []
        for (index, finding) in file.findings.enumerated() {
            let key: Entry.Key
            let count: Int?
            switch finding.kind {
            case "type":
                key = .type(finding.type)
                count = finding.overBudget
                if count == nil { throw .invalid(path: path, reason: "findings[\(index)] has no \"overBudget\"") }
            case "test":
                guard let test = finding.test else { throw .invalid(path: path, reason: "findings[\(index)] has no \"test\"") }
                key = .test(test: test, type: finding.type)
                count = finding.count
                if count == nil { throw .invalid(path: path, reason: "findings[\(index)] has no \"count\"") }
            default:
                throw .invalid(path: path, reason: "findings[\(index)] has kind '\(finding.kind)', not \"type\" or \"test\"")
            }
            guard let count, count >= 0 else {
                throw .invalid(path: path, reason: "findings[\(index)] has a negative count")
            }
            let stable = stableKey(key)
            guard seen.insert(stable).inserted else {
                throw .invalid(path: path, reason: "findings[\(index)] repeats \(stable)")
            }
            entries.append(Entry(key: stable, count: count, sites: finding.sites ?? []))
        }
        return Baseline(entries: entries, path: path)
    }

    /// The file's text: pretty-printed JSON with sorted keys and entries, ending in a newline.
    public func encoded() -> String {
        let file = BaselineFileV1(
            version: Self.version, tool: "leak-audit",
            findings: entries.map { entry in
                switch entry.key {
                case .type(let type):
                    BaselineFileV1.Finding(kind: "type", type: type, overBudget: entry.count, sites: entry.sites)
                case .test(let test, let type):
                    BaselineFileV1.Finding(kind: "test", type: type, test: test, count: entry.count, sites: entry.sites)
                }
            })
        return stableJSON(file, what: "the baseline")
    }
}

/// The baseline file's wire form, version 1: separate from `Baseline` so that the format is stable.
struct BaselineFileV1: Codable {
    struct Finding: Codable {
        var kind: String
        var type: String
        var test: String? = nil
        var overBudget: Int? = nil
        var count: Int? = nil
        var sites: [String]? = nil
    }
    var version: Int
    var tool: String?
    var findings: [Finding]
}

/// A baseline that cannot be used; leak-audit exits 64 with the description, before the target runs.
public enum BaselineError: Error, Equatable, CustomStringConvertible {
    /// The file could not be read.
    case unreadable(path: String, reason: String)
    /// The file is not a valid baseline.
    case invalid(path: String, reason: String)
    /// The file declares a format version this leak-audit does not read.
    case unsupportedVersion(path: String, version: Int)

    /// One line naming the file and what to do.
    public var description: String {
        switch self {
        case .unreadable(let path, let reason):
            "cannot read baseline '\(path)': \(reason.lowercased()); write one with --write-baseline"
        case .invalid(let path, let reason):
            "baseline '\(path)' is invalid: \(reason); write it again with --write-baseline"
        case .unsupportedVersion(let path, let version):
            "baseline '\(path)' has version \(version); this leak-audit reads version \(Baseline.version)"
        }
    }
}
