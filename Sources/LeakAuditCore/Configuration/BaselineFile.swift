import FoundationEssentials
import LeakAuditModel

// The baseline file (`--baseline FILE`, `--write-baseline FILE`): reading, validating and writing
// format version 1 (docs/configuration.md). The baseline itself is part of the report model.

extension Baseline {
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
            case "unreachable":
                guard let structure = finding.path else {
                    throw .invalid(path: path, reason: "findings[\(index)] has no \"path\"")
                }
                key = .unreachable(structure)
                count = finding.count
                if count == nil { throw .invalid(path: path, reason: "findings[\(index)] has no \"count\"") }
            default:
                throw .invalid(
                    path: path,
                    reason: "findings[\(index)] has kind '\(finding.kind)', not \"type\", \"test\" or \"unreachable\"")
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
                case .unreachable(let identity):
                    BaselineFileV1.Finding(
                        kind: "unreachable", type: Self.shownType(ofIdentity: identity), count: entry.count, sites: entry.sites,
                        path: identity)
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
        /// A group of unreachable objects: its identity (`cycle App.A.b → App.B.a → App.A`).
        var path: String? = nil
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
