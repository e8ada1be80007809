import FoundationEssentials
import LeakAuditFiles
import LeakAuditModel
import LeakAuditPresentation

/// A configuration file (`--config FILE`, or `.leak-audit.json` in the working directory),
/// format version 1, described in docs/configuration.md:
///
/// ```json
/// {"version": 1, "budgets": [{"type": "App.*ViewModel", "max": 1}], "census": false,
///  "suppressions": [{"type": "App.Legacy*", "reason": "fixed in #123"}]}
/// ```
public struct ConfigurationFile: Sendable, Hashable {
    /// The file name read from the working directory when present.
    public static let defaultFileName = ".leak-audit.json"
    /// The format version this leak-audit reads.
    public static let version = 1

    /// Budgets by type pattern, in file order.
    public var budgets: [BudgetPattern]
    /// Whether to take the census, when the command line does not say.
    public var census: Bool?
    /// Whether to find who holds the instances left alive, when the command line does not say.
    public var retainers: Bool?
    /// Whether to report the Swift objects nothing reaches at exit, when the command line does not
    /// say.
    public var unreachable: Bool? = nil
    /// Findings that are reported but do not fail the run, in file order.
    public var suppressions: [Suppression] = []

    /// Reads and validates a configuration file.
    public static func load(path: String) throws(ConfigurationError) -> ConfigurationFile {
        let data = try Data(readingFile: path)
        let file: ConfigurationFileV1
        do {
            file = try JSONDecoder().decode(ConfigurationFileV1.self, from: data)
        } catch let DecodingError.keyNotFound(key, _) {
            throw .invalid(path: path, reason: "missing \"\(key.stringValue)\"")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            let location = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw .invalid(path: path, reason: "wrong type at \"\(location)\"")
        } catch let DecodingError.dataCorrupted(context) where !context.codingPath.isEmpty {
            let location = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw .invalid(path: path, reason: "a value \"\(location)\" cannot take")
        } catch  where (try? JSONDecoder().decode(AnyJSON.self, from: data)) != nil {
            // Valid JSON that the decoder still refuses: a number a whole-number key cannot take
            // (`"version": 1.5`).
            throw .invalid(path: path, reason: "a number that is not a whole number where one is expected (\"version\", \"max\")")
        } catch {
            throw .invalid(path: path, reason: "not valid JSON")
        }
        guard file.version == version else { throw .unsupportedVersion(path: path, version: file.version) }
        // A misspelt key ("budget") would otherwise be ignored, and its budgets with it.
        if let keys = try? JSONDecoder().decode(UsedKeys.self, from: data), let unknown = keys.firstUnknown {
            throw .invalid(path: path, reason: "unknown key \"\(unknown.key)\"\(unknown.place) (known: \(unknown.known))")
        }
        var budgets: [BudgetPattern] = []
        for entry in file.budgets ?? [] {
            guard !entry.type.isEmpty, !entry.type.contains("\n"), entry.max >= 0 else {
                throw .invalidBudget(text: "\(entry.type)=\(entry.max)", origin: path)
            }
            budgets.append(BudgetPattern(pattern: entry.type, max: entry.max, origin: path))
        }
        var suppressions: [Suppression] = []
        for (index, entry) in (file.suppressions ?? []).enumerated() {
            let given = [
                entry.type.map(Suppression.Criterion.type), entry.function.map(Suppression.Criterion.function),
                entry.file.map(Suppression.Criterion.file),
            ].compactMap { $0 }
            guard given.count == 1, let criterion = given.first else {
                throw .invalid(
                    path: path, reason: "suppressions[\(index)] needs exactly one of \"type\", \"function\" or \"file\"")
            }
            let suppression = Suppression(criterion, reason: entry.reason, origin: path)
            guard !suppression.pattern.isEmpty, !suppression.pattern.contains(where: { $0 == "\n" || $0 == "\0" }) else {
                throw .invalid(path: path, reason: "suppressions[\(index)] has an empty or multi-line pattern")
            }
            suppressions.append(suppression)
        }
        var configuration = ConfigurationFile(
            budgets: budgets, census: file.census, retainers: file.retainers, suppressions: suppressions)
        configuration.unreachable = file.unreachable
        return configuration
    }
}

extension Data {
    /// The whole file at `path`, read as every file leak-audit is given is (`readWholeFile(at:)`:
    /// bounded, without waiting on a FIFO), or why it could not be.
    init(readingFile path: String) throws(ConfigurationError) {
        do {
            self.init(try readWholeFile(at: path))
        } catch {
            throw .unreadable(path: path, reason: error.reason)
        }
    }
}

/// The file's wire form, version 1: separate from `Configuration` so that the format is stable.
struct ConfigurationFileV1: Decodable {
    struct Budget: Decodable {
        var type: String
        var max: Int
    }
    struct Suppression: Decodable {
        var type: String?
        var function: String?
        var file: String?
        var reason: String?
    }
    var version: Int
    var budgets: [Budget]?
    var census: Bool?
    var retainers: Bool?
    var unreachable: Bool?
    var suppressions: [Suppression]?
}

/// A configuration problem; leak-audit exits 64 with the description.
public enum ConfigurationError: Error, Equatable, CustomStringConvertible {
    /// The file could not be read.
    case unreadable(path: String, reason: String)
    /// The file is not a valid configuration.
    case invalid(path: String, reason: String)
    /// The file declares a format version this leak-audit does not read.
    case unsupportedVersion(path: String, version: Int)
    /// A budget is not `PATTERN=N` with N ≥ 0.
    case invalidBudget(text: String, origin: String)
    /// The baseline file (`--baseline`) cannot be used.
    case baseline(BaselineError)

    /// One line naming the file or value and what to do.
    public var description: String {
        switch self {
        case .unreadable(let path, let reason):
            "cannot read configuration '\(path)': \(reason.lowercased())"
        case .invalid(let path, let reason):
            "configuration '\(path)' is invalid: \(reason); see docs/configuration.md"
        case .unsupportedVersion(let path, let version):
            "configuration '\(path)' has version \(version); this leak-audit reads version \(ConfigurationFile.version)"
        case .invalidBudget(let text, let origin):
            // Control characters would end the line, and a CI log could read the rest as a command.
            "budget '\(ReportPhrases.escaped(text))' (\(ReportPhrases.escaped(origin))) is not PATTERN=N with N a whole number ≥ 0, e.g. 'App.*ViewModel=1'"
        case .baseline(let error):
            error.description
        }
    }
}

/// The keys a configuration file uses, at its top and in each budget and suppression, read only to
/// name one that version 1 does not have.
private struct UsedKeys: Decodable {
    var top: [String]
    var budgets: [[String]]
    var suppressions: [[String]]

    private struct Keys: Decodable {
        var names: [String]
        init(from decoder: any Decoder) throws {
            names = try decoder.container(keyedBy: AnyKey.self).allKeys.map(\.stringValue)
        }
    }

    init(from decoder: any Decoder) throws {
        let object = try decoder.container(keyedBy: AnyKey.self)
        top = object.allKeys.map(\.stringValue)
        func keys(_ name: String) -> [[String]] {
            guard let key = AnyKey(stringValue: name) else { return [] }
            return ((try? object.decode([Keys].self, forKey: key)) ?? []).map(\.names)
        }
        budgets = keys("budgets")
        suppressions = keys("suppressions")
    }

    /// The first key that version 1 does not know, where it is, and the keys known there.
    var firstUnknown: (key: String, place: String, known: String)? {
        let places: [(keys: [[String]], place: (Int) -> String, known: [String])] = [
            ([top], { _ in "" }, ["version", "budgets", "census", "retainers", "unreachable", "suppressions"]),
            (budgets, { " in budgets[\($0)]" }, ["type", "max"]),
            (suppressions, { " in suppressions[\($0)]" }, ["type", "function", "file", "reason"]),
        ]
        for (keys, place, known) in places {
            for (index, names) in keys.enumerated() {
                if let unknown = names.sorted().first(where: { !known.contains($0) }) {
                    return (unknown, place(index), known.joined(separator: ", "))
                }
            }
        }
        return nil
    }
}

/// Any JSON value, read only to tell a file that is not JSON from JSON that the format refuses.
private struct AnyJSON: Decodable {
    init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            while !array.isAtEnd { _ = try array.decode(AnyJSON.self) }
            return
        }
        if let object = try? decoder.container(keyedBy: AnyKey.self) {
            for key in object.allKeys { _ = try object.decode(AnyJSON.self, forKey: key) }
            return
        }
        let value = try decoder.singleValueContainer()
        if value.decodeNil() { return }
        if (try? value.decode(Bool.self)) != nil || (try? value.decode(Double.self)) != nil { return }
        _ = try value.decode(String.self)
    }
}

/// A JSON object's key, whatever it is.
private struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
