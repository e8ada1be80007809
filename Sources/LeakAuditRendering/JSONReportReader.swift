import FoundationEssentials
import LeakAuditFiles
import LeakAuditModel
import LeakAuditPresentation

/// Reads a saved JSON report (schema version 2, what `JSONReportRenderer` writes, or 1, what older
/// releases wrote) back into the report it was rendered from, so that every format can be rendered
/// from one run (`leak-audit report`) and two runs compared.
///
/// Reading is the JSON renderer's inverse: rendering the report read from a JSON report gives, in
/// every format, the bytes rendering the original gives. The file is treated as hostile: it is read
/// bounded (`readWholeFile(at:)`), strictly (no key twice in an object, every number a whole one
/// written in digits, no lone surrogate: `StrictJSON`), every value is checked to be one the
/// schema allows, and the
/// fields derived from others (the summary, `exceeded`, `target.testsRun`) must agree with what
/// they are derived from. Keys the schema does not know are ignored: a later release may add
/// fields without changing the schema's version. Fields added to schema 1 after its first release
/// may be absent, and are read as docs/report-schema.json says. A stack or frame that a schema-2
/// report names by an index it does not hold is an error like any other value out of range.
public struct JSONReportReader: Sendable {
    /// The newest schema version this reader reads: the one `JSONReportRenderer` writes.
    public static let schemaVersion = JSONReportRenderer.schemaVersion

    /// Every schema version this reader reads: 1, which older releases wrote, and 2.
    public static let schemaVersions = 1...schemaVersion

    /// The largest instance count a report may hold (2^40, about 10^12): no run allocates more, and
    /// sums of counts over a report's types stay far from overflowing.
    public static let largestCount = 1 << 40

    /// The latest time a report may hold, in milliseconds since the target started (2^40 ms, about
    /// 35 years): times are added to bucket widths and scaled for charts.
    public static let largestTime = 1 << 40

    /// The most frames a schema-2 report's stacks may list, and its allocation groups refer to, in
    /// all (2^22, 4,194,304): a group names a stack with a few bytes, so without a bound a small file
    /// could make every renderer walk billions of frames. The largest run's report refers to 960,000
    /// (10,000 types, 48 frames at the peak and at exit); a 64 MB report of such types to 1.7 million.
    public static let largestFrameReferences = 1 << 22

    /// The bound this reader applies: `largestFrameReferences`, or a smaller one in tests.
    let frameReferenceBound: Int

    /// Creates the reader.
    public init() {
        frameReferenceBound = Self.largestFrameReferences
    }

    /// A reader that refuses a report whose stacks or groups hold more than `frameReferenceBound`
    /// frames in all (for tests of the bound).
    init(frameReferenceBound: Int) {
        self.frameReferenceBound = frameReferenceBound
    }

    /// Reads the JSON report at `path`.
    ///
    /// - Throws: `ReportFileError` naming `path`: the file cannot be read (missing, a directory,
    ///   empty, larger than 64 MB), is not a JSON report, is of another schema version, holds a
    ///   value the schema does not allow, or contradicts itself.
    public func read(path: String) throws(ReportFileError) -> AuditReport {
        let bytes: [UInt8]
        do {
            bytes = try readWholeFile(at: path)
        } catch {
            throw .unreadable(path: path, reason: error.reason)
        }
        return try decode(bytes, path: path)
    }

    /// Reads a JSON report from its bytes; `path` names it in errors.
    ///
    /// - Throws: `ReportFileError`, as `read(path:)` does for a file that could be read.
    public func decode(_ bytes: [UInt8], path: String) throws(ReportFileError) -> AuditReport {
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw .notAReport(path: path, reason: "it is not UTF-8 text")
        }
        let data = Data(bytes)
        let version = try schemaVersion(of: data, path: path)
        // What JSON allows and readers take differently: refused before any value is read.
        if let problem = StrictJSON.firstProblem(in: bytes) { throw .invalid(path: path, reason: problem) }
        guard Self.schemaVersions.contains(version) else { throw .unsupportedVersion(path: path, version: version) }
        let wire: JSONReportWire
        do {
            wire = try JSONDecoder().decode(JSONReportWire.self, from: data)
        } catch DecodingError.dataCorrupted(let context) where context.codingPath.isEmpty {
            // Valid JSON (the probe read it) that the decoder refuses without saying where: a
            // number no field can hold (1.5, 1e30); every number of the schema is a whole one.
            throw .invalid(path: path, reason: Self.unholdableNumber(in: data))
        } catch let error as DecodingError {
            throw .invalid(path: path, reason: Self.describe(error))
        } catch {
            throw .invalid(path: path, reason: "\(error)")
        }
        do {
            return try ReportFromWire(wire, version: version, frameReferenceBound: frameReferenceBound).report()
        } catch let problem as ReportFromWire.Problem {
            switch problem {
            case .invalid(let reason): throw .invalid(path: path, reason: reason)
            case .inconsistent(let reason): throw .inconsistent(path: path, reason: reason)
            }
        } catch {
            throw .invalid(path: path, reason: "\(error)")
        }
    }

    /// The file's `schemaVersion`, or why it is not a leak-audit JSON report at all (not JSON, not
    /// an object, another leak-audit file, no version).
    private func schemaVersion(of data: Data, path: String) throws(ReportFileError) -> Int {
        let probe: Probe
        do {
            probe = try JSONDecoder().decode(Probe.self, from: data)
        } catch DecodingError.typeMismatch(_, let context) where context.codingPath.isEmpty {
            throw .notAReport(path: path, reason: "it is JSON, but not an object")
        } catch {
            throw .notAReport(path: path, reason: "it is not valid JSON (cut short, or not JSON at all)")
        }
        guard probe.keys.contains("schemaVersion") else {
            let reason =
                if probe.keys.contains("diffSchemaVersion") {
                    "it is a comparison of two reports (report --diff --format json), not a report"
                } else if probe.keys.contains("findings") && probe.keys.contains("version") {
                    "it is a leak-audit baseline, not a report"
                } else if probe.keys.contains("runs") && probe.keys.contains("version") {
                    "it is a SARIF log, not a leak-audit JSON report"
                } else {
                    "it has no \"schemaVersion\", so it is not a leak-audit JSON report"
                }
            throw .notAReport(path: path, reason: reason)
        }
        guard let version = probe.schemaVersion else {
            throw .invalid(path: path, reason: "\"schemaVersion\" is not a whole number")
        }
        return version
    }

    /// `"types[0].name"`: where a value is, quoted.
    static func location(_ path: [any CodingKey]) -> String {
        var text = ""
        for key in path {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return "\"" + ReportPhrases.escaped(text) + "\""
    }

    /// `"types[0].peakLive" holds a number that is not whole or too large`: the first number in
    /// `data` that no 64-bit integer holds.
    static func unholdableNumber(in data: Data) -> String {
        do {
            _ = try JSONDecoder().decode(WholeNumbers.self, from: data)
        } catch let error as WholeNumbers.Unholdable {
            return "\(location(error.codingPath)) holds a number that is not whole or too large"
        } catch {}
        return "it holds a number that is not whole or too large"
    }

    /// `missing "types[0].name"`, `wrong type at "summary.verdict"`: where the file departs from
    /// the schema.
    static func describe(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, let context):
            return "missing \(location(context.codingPath + [key]))"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "wrong type at \(location(context.codingPath))"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty
                ? "it is not valid JSON" : "\(location(context.codingPath)) holds a number out of range or not whole"
        @unknown default:
            return "it does not match the schema"
        }
    }
}

/// A report file that cannot be rendered; leak-audit exits 64 with the description.
public enum ReportFileError: Error, Equatable, CustomStringConvertible {
    /// The file could not be read: missing, a directory, empty, or too large (`reason`).
    case unreadable(path: String, reason: String)
    /// The file is not a leak-audit JSON report: not UTF-8, not JSON, not an object, or another
    /// kind of file (`reason`).
    case notAReport(path: String, reason: String)
    /// The file is a JSON report of a schema version this leak-audit does not read.
    case unsupportedVersion(path: String, version: Int)
    /// The file is a report with a missing field, a value of the wrong type, or a value
    /// the schema does not allow (`reason` says where).
    case invalid(path: String, reason: String)
    /// A field derived from others (the summary, a type's `exceeded`) disagrees with them: the file
    /// was edited or damaged.
    case inconsistent(path: String, reason: String)

    /// One line: the file, what is wrong with it, and what to do.
    public var description: String {
        let write = "leak-audit run --output-json FILE"
        switch self {
        case .unreadable(let path, let reason):
            return "'\(ReportPhrases.escaped(path))' cannot be read: \(reason); pass the JSON report \(write) wrote"
        case .notAReport(let path, let reason):
            return "'\(ReportPhrases.escaped(path))' is not a report to render: \(reason); pass the JSON report \(write) wrote"
        case .unsupportedVersion(let path, let version):
            let which = version > JSONReportReader.schemaVersion ? "a newer" : "an older"
            let versions = JSONReportReader.schemaVersions
            return
                "'\(ReportPhrases.escaped(path))' is a JSON report of schema version \(version), and this leak-audit reads versions \(versions.lowerBound) to \(versions.upperBound); render it with \(which) leak-audit, or write it again with \(write)"
        case .invalid(let path, let reason):
            return
                "'\(ReportPhrases.escaped(path))' is not a valid JSON report (docs/report-schema.json): \(reason); pass the file \(write) wrote, unedited"
        case .inconsistent(let path, let reason):
            return
                "'\(ReportPhrases.escaped(path))' contradicts itself: \(reason); it was edited or damaged, so write it again with \(write)"
        }
    }
}

/// The keys at a JSON object's top, and its `schemaVersion` when it is a whole number: enough to
/// tell a report from another file before decoding it.
private struct Probe: Decodable {
    var keys: Set<String>
    var schemaVersion: Int?

    init(from decoder: any Decoder) throws {
        let object = try decoder.container(keyedBy: AnyKey.self)
        keys = Set(object.allKeys.map(\.stringValue))
        schemaVersion = AnyKey(stringValue: "schemaVersion").flatMap { try? object.decode(Int.self, forKey: $0) }
    }
}

/// Any JSON value whose numbers are all whole and fit 64 bits; decoding one that holds another
/// number throws `Unholdable` with where it is.
private struct WholeNumbers: Decodable {
    /// A number no field of the schema can hold.
    struct Unholdable: Error {
        var codingPath: [any CodingKey]
    }

    init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            while !array.isAtEnd { _ = try array.decode(WholeNumbers.self) }
            return
        }
        if let object = try? decoder.container(keyedBy: AnyKey.self) {
            for key in object.allKeys { _ = try object.decode(WholeNumbers.self, forKey: key) }
            return
        }
        let value = try decoder.singleValueContainer()
        if value.decodeNil() || (try? value.decode(Bool.self)) != nil || (try? value.decode(String.self)) != nil
            || (try? value.decode(Int64.self)) != nil || (try? value.decode(UInt64.self)) != nil
        {
            return
        }
        throw Unholdable(codingPath: decoder.codingPath)
    }
}

/// A JSON object's key, whatever it is.
private struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// The report a decoded wire form describes, every value checked on the way.
private struct ReportFromWire {
    /// What is wrong with the wire form.
    enum Problem: Error {
        /// A value the schema does not allow.
        case invalid(String)
        /// A derived field that disagrees with what it is derived from.
        case inconsistent(String)
    }

    let wire: JSONReportWire
    /// The file's schema version: 1 (groups hold their frames) or 2 (groups name a stack).
    let version: Int
    /// Schema 2: the report's stacks, each frame read; a group naming a stack shares its array.
    private var stacks: [[SymbolizedFrame]] = []
    /// Schema 2: the most frames the stacks may list, and the groups refer to, in all.
    private let frameReferenceBound: Int
    /// Schema 2: how many frames the groups read so far refer to.
    private let frameReferences = Tally()

    /// A count that grows as groups are read.
    private final class Tally {
        var count = 0
    }

    init(_ wire: JSONReportWire, version: Int, frameReferenceBound: Int) throws {
        self.wire = wire
        self.version = version
        self.frameReferenceBound = frameReferenceBound
        if version >= 2 { stacks = try readStacks() }
    }

    /// Schema 2's `frames` and `stacks`: every frame checked, every index one `frames` holds, and
    /// no more indexes in all than the bound.
    private func readStacks() throws -> [[SymbolizedFrame]] {
        guard let frames = wire.frames else { throw Problem.invalid("missing \"frames\"") }
        guard let stacks = wire.stacks else { throw Problem.invalid("missing \"stacks\"") }
        var listed = 0
        for (index, stack) in stacks.enumerated() {
            listed += stack.count
            guard listed <= frameReferenceBound else {
                throw Problem.invalid(
                    "\"stacks[\(index)]\" takes the frames \"stacks\" lists past \(frameReferenceBound) in all, more than any run writes"
                )
            }
        }
        let read = try frames.enumerated().map { try frame($1, at: "frames[\($0)]") }
        return try stacks.enumerated().map { index, stack in
            try stack.enumerated().map { position, frame in
                read[try reference(frame, into: "frames", holding: read.count, at: "stacks[\(index)][\(position)]")]
            }
        }
    }

    func report() throws -> AuditReport {
        guard wire.tool.name == "leak-audit" else {
            throw Problem.invalid("\"tool.name\" is '\(ReportPhrases.escaped(wire.tool.name))', not leak-audit")
        }
        let summary = wire.summary
        var report = AuditReport(
            tool: .init(name: wire.tool.name, version: wire.tool.version), target: try target(),
            notAudited: try wire.target.notAuditedReason.map {
                try named($0, among: AuditReport.NotAuditedReason.allCases, \.name, at: "target.notAuditedReason")
            },
            types: try wire.types.enumerated().map { try trackedType($1, at: "types[\($0)]") },
            census: try wire.census.map(census),
            tests: try wire.tests.map { tests in try tests.enumerated().map { try test($1, at: "tests[\($0)]") } },
            watchedInstances: try count(summary.watchedInstances ?? 0, at: "summary.watchedInstances"),
            droppedRecords: summary.droppedRecords, tornRecords: summary.tornRecords,
            damagedRecords: summary.damagedRecords,
            // Absent from a report written before the field: then only `incomplete` says so.
            exceededCapacity: summary.exceededCapacity
                ?? (summary.incomplete && summary.droppedRecords == 0 && summary.damagedRecords == 0),
            warnings: summary.warnings, baseline: try wire.baseline.map(baseline))
        report.target.kind = try wire.target.kind.map { try named($0, among: TargetKind.allCases, \.name, at: "target.kind") }
        // Absent from schema 1 and from reports written before the key: not checked.
        report.unreachable = try wire.unreachable?.wrappedValue.map(unreachable)
        report.target.stoppedMicroseconds = try wire.target.stoppedMicroseconds.map {
            try count($0, at: "target.stoppedMicroseconds")
        }
        report.largestRetained = try wire.largestRetained.map { try retainers($0, at: "largestRetained") }
        try checkDerivedFields(of: report)
        return report
    }

    /// The summary, `target.testsRun`, `target.testsSkipped` and each type's `exceeded` are written from the rest of the
    /// report; read back, they must be what the rest makes them.
    private func checkDerivedFields(of report: AuditReport) throws {
        let (was, now) = (wire.summary, JSONReportWire.Summary(report))
        let rewritten = JSONReportWire.Target(report)
        // Reports written before the testsLeaked verdict called such a run budgetExceeded.
        let verdict = was.verdict == "budgetExceeded" && now.verdict == "testsLeaked" ? now.verdict : was.verdict
        let derived: [(String, String, String)] = [
            ("verdict", "\"\(verdict)\"", "\"\(now.verdict)\""),
            ("trackedTypes", "\(was.trackedTypes)", "\(now.trackedTypes)"),
            ("exceededTypes", "\(was.exceededTypes)", "\(now.exceededTypes)"),
            ("instancesOverBudget", "\(was.instancesOverBudget)", "\(now.instancesOverBudget)"),
            ("findings.failing", "\(was.findings.failing)", "\(now.findings.failing)"),
            ("findings.suppressed", "\(was.findings.suppressed)", "\(now.findings.suppressed)"),
            ("findings.baselined", "\(was.findings.baselined)", "\(now.findings.baselined)"),
            ("incomplete", "\(was.incomplete)", "\(now.incomplete)"),
        ]
        for (field, written, recomputed) in derived where written != recomputed {
            throw Problem.inconsistent(
                "\"summary.\(field)\" is \(ReportPhrases.escaped(written)), but the report's types, tests and records make it \(recomputed)"
            )
        }
        for (field, written, recomputed) in [
            ("testsRun", wire.target.testsRun, rewritten.testsRun),
            ("testsSkipped", wire.target.testsSkipped, rewritten.testsSkipped),
        ] where written != recomputed {
            throw Problem.inconsistent(
                "\"target.\(field)\" is \(written.map(String.init) ?? "null"), but its processes' tests add up to \(recomputed.map(String.init) ?? "null")"
            )
        }
    }

    private func target() throws -> AuditReport.Target {
        let target = wire.target
        let outcome: TargetOutcome
        switch (target.exit.code, target.exit.signal) {
        case (nil, nil) where target.exit.running == true:
            outcome = .running
        case (let code?, nil) where target.exit.running == nil:
            guard (0...255).contains(code) else { throw Problem.invalid("\"target.exit.code\" is \(code), not 0 to 255") }
            outcome = .exited(code: code)
        case (nil, let signal?) where target.exit.running == nil:
            guard signal >= 1 else { throw Problem.invalid("\"target.exit.signal\" is \(signal), not a signal number") }
            outcome = .signaled(signal: signal)
        default:
            throw Problem.invalid("\"target.exit\" needs exactly one of \"code\", \"signal\" and \"running\" (true)")
        }
        var audited = AuditReport.Target(
            path: target.path, arguments: target.arguments, attached: target.attached,
            attachedProcesses: try count(target.attachedProcesses, at: "target.attachedProcesses"), outcome: outcome,
            processes: try target.processes.enumerated().map { index, process in
                let at = "target.processes[\(index)]"
                var read = AuditReport.AuditedProcess(
                    pid: process.pid, commandLine: process.commandLine,
                    testingLibrary: try process.testingLibrary.map {
                        try named($0, among: [.xctest, .swiftTesting], \.rawValue, at: at + ".testingLibrary")
                    },
                    testsRun: try process.testsRun.map { try count($0, at: at + ".testsRun") })
                read.interruptedTests = process.interruptedTests ?? []
                read.startedByTestProcess = process.startedByTestProcess
                read.skippedTests = process.skippedTests
                return read
            },
            skippedProcesses: try count(target.skippedProcesses, at: "target.skippedProcesses"))
        audited.durationMilliseconds = try target.durationMilliseconds.map {
            try time($0, at: "target.durationMilliseconds")
        }
        return audited
    }

    private func trackedType(_ type: JSONReportWire.TrackedType, at location: String) throws -> AuditReport.TrackedType {
        // A budget is no count: `max` may be as large as an Int holds (`Int.max` for "no limit").
        guard type.max >= -JSONReportReader.largestCount else {
            throw Problem.invalid("\"\(location).max\" is \(type.max), out of range")
        }
        var tracked = AuditReport.TrackedType(
            name: type.name, budget: try budget(type.budget, at: location + ".budget"), max: type.max,
            peakLive: try count(type.peakLive, at: location + ".peakLive"),
            liveAtExit: try count(type.liveAtExit, at: location + ".liveAtExit"),
            allocatedTotal: try count(type.allocatedTotal, at: location + ".allocatedTotal"),
            allocations: try allocations(type.allocations, at: location + ".allocations"))
        guard type.exceeded == tracked.exceeded else {
            throw Problem.inconsistent(
                "\"\(location).exceeded\" is \(type.exceeded), but its peakLive \(type.peakLive) and max \(type.max) make it \(tracked.exceeded)"
            )
        }
        if tracked.exceeded {
            tracked.status = try status(
                type.status, type.suppression, type.baselineCount, at: location, of: "an exceeded type")
        } else if let status = type.status {
            throw Problem.inconsistent(
                "\"\(location).status\" is \"\(ReportPhrases.escaped(status))\", but the type is within its budget")
        }
        if let retainers = type.retainers {
            tracked.retainers = try self.retainers(retainers, at: location + ".retainers")
            tracked.retainersUnavailable = type.retainersUnavailable ?? []
        }
        tracked.allocationsAtExit = try allocations(type.allocationsAtExit ?? [], at: location + ".allocationsAtExit")
        tracked.timeline = try type.timeline.map { try timeline($0, at: location + ".timeline") }
        tracked.peakTime = try type.peakTimeMilliseconds.map { try time($0, at: location + ".peakTimeMilliseconds") }
        return tracked
    }

    private func budget(_ budget: JSONReportWire.Budget, at location: String) throws -> AuditReport.BudgetOrigin {
        switch budget.source {
        case "code":
            return .code
        case "pattern":
            // `App.*ViewModel=1`: the pattern, then '=' and its max (a type name has no '=').
            guard let text = budget.pattern, let origin = budget.origin, let equals = text.lastIndex(of: "="),
                let max = Int(text[text.index(after: equals)...]), max >= 0
            else {
                throw Problem.invalid("\"\(location)\" needs \"pattern\" as PATTERN=N and \"origin\"")
            }
            return .pattern(BudgetPattern(pattern: String(text[..<equals]), max: max, origin: origin))
        default:
            throw Problem.invalid(
                "\"\(location).source\" is \"\(ReportPhrases.escaped(budget.source))\", not \"code\" or \"pattern\"")
        }
    }

    /// A finding's status from its name, the suppression that matched and what the baseline records.
    private func status(
        _ name: String?, _ suppression: JSONReportWire.Suppression?, _ baselineCount: Int?, at location: String,
        of finding: String
    ) throws -> FindingStatus {
        let recorded = try baselineCount.map { try count($0, at: location + ".baselineCount") }
        let matched = try suppression.map { try self.suppression($0, at: location + ".suppression") }
        let status: FindingStatus
        switch (name, recorded, matched) {
        case ("failing", nil, nil): status = .failing
        case ("largerThanBaseline", let recorded?, nil): status = .largerThanBaseline(recorded: recorded)
        case ("baselined", let recorded?, nil): status = .baselined(recorded: recorded)
        case ("suppressed", nil, let matched?): status = .suppressed(matched)
        case (nil, _, _):
            throw Problem.invalid("\"\(location).status\" is null for \(finding)")
        case (let name?, _, _):
            let known = ["failing", "largerThanBaseline", "suppressed", "baselined"]
            guard known.contains(name) else {
                throw Problem.invalid(
                    "\"\(location).status\" is \"\(ReportPhrases.escaped(name))\", not one of \(known.joined(separator: ", "))")
            }
            throw Problem.inconsistent(
                "\"\(location).status\" is \"\(name)\", which does not go with its suppression and baselineCount")
        }
        return status
    }

    private func suppression(_ suppression: JSONReportWire.Suppression, at location: String) throws -> Suppression {
        let criterion: Suppression.Criterion
        switch suppression.kind {
        case "type": criterion = .type(suppression.pattern)
        case "function": criterion = .function(suppression.pattern)
        case "file": criterion = .file(suppression.pattern)
        default:
            throw Problem.invalid(
                "\"\(location).kind\" is \"\(ReportPhrases.escaped(suppression.kind))\", not \"type\", \"function\" or \"file\"")
        }
        let read = Suppression(criterion, reason: suppression.reason, origin: suppression.origin)
        guard read.rule == suppression.rule else {
            throw Problem.inconsistent(
                "\"\(location).rule\" is \"\(ReportPhrases.escaped(suppression.rule))\", but its kind and pattern make it \"\(ReportPhrases.escaped(read.rule))\""
            )
        }
        return read
    }

    private func allocations(_ groups: [JSONReportWire.Allocation], at location: String) throws -> [AuditReport.AllocationGroup] {
        try groups.enumerated().map { index, group in
            let at = "\(location)[\(index)]"
            return AuditReport.AllocationGroup(
                count: try count(group.count, at: at + ".count"), frames: try frames(of: group, at: at),
                truncated: group.truncated, test: group.test)
        }
    }

    /// A group's frames: the stack it names (schema 2), or those it holds (schema 1).
    private func frames(of group: JSONReportWire.Allocation, at location: String) throws -> [SymbolizedFrame] {
        guard version >= 2 else {
            guard let frames = group.frames else { throw Problem.invalid("missing \"\(location).frames\"") }
            return try frames.enumerated().map { try frame(JSONReportWire.Frame($1), at: "\(location).frames[\($0)]") }
        }
        guard let stack = group.stack else { throw Problem.invalid("missing \"\(location).stack\"") }
        let frames = stacks[try reference(stack, into: "stacks", holding: stacks.count, at: location + ".stack")]
        frameReferences.count += frames.count
        guard frameReferences.count <= frameReferenceBound else {
            throw Problem.invalid(
                "\"\(location).stack\" takes the frames the allocation groups refer to past \(frameReferenceBound) in all, more than any run writes"
            )
        }
        return frames
    }

    /// `index` when it is an index of the table `table` (of `count` entries).
    private func reference(_ index: Int, into table: String, holding count: Int, at location: String) throws -> Int {
        guard (0..<count).contains(index) else {
            let held = count == 0 ? "which is empty" : count == 1 ? "index 0 only" : "indexes 0 to \(count - 1)"
            throw Problem.invalid("\"\(location)\" is \(index), not an index of \"\(table)\" (\(held))")
        }
        return index
    }

    /// A frame, its addresses, line and column checked.
    private func frame(_ frame: JSONReportWire.Frame, at location: String) throws -> SymbolizedFrame {
        func value(_ text: String, _ field: String) throws -> UInt64 {
            guard text.hasPrefix("0x"), text.count > 2, text.dropFirst(2).allSatisfy(\.isHexDigit),
                text.dropFirst(2).allSatisfy({ !$0.isUppercase }), let value = UInt64(text.dropFirst(2), radix: 16)
            else {
                throw Problem.invalid(
                    "\"\(location).\(field)\" is \"\(ReportPhrases.escaped(text))\", not a hexadecimal address (0x…)")
            }
            return value
        }
        for (field, value) in [("line", frame.line), ("column", frame.column)] {
            if let value, !(0...Int(Int32.max)).contains(value) {
                throw Problem.invalid("\"\(location).\(field)\" is \(value), out of range")
            }
        }
        return SymbolizedFrame(
            address: try value(frame.address, "address"), module: frame.module,
            moduleOffset: try frame.moduleOffset.map { try value($0, "moduleOffset") }, function: frame.function,
            file: frame.file, line: frame.line, column: frame.column, inlined: frame.inlined ?? false)
    }

    /// A retainer's omitted steps: none, or a positive count after a step the path has.
    private func omitted(_ retainer: JSONReportWire.Retainer, at location: String) throws -> (after: Int, count: Int) {
        guard let omitted = retainer.omittedSteps else { return (0, 0) }
        guard omitted.count >= 1, (1..<Swift.max(1, retainer.path.count)).contains(omitted.after) else {
            throw Problem.invalid(
                "\"\(location).omittedSteps\" leaves out \(omitted.count) steps after step \(omitted.after) of \(retainer.path.count)"
            )
        }
        return (omitted.after, omitted.count)
    }

    private func retainers(_ retainers: [JSONReportWire.Retainer], at location: String) throws -> [Retainer] {
        try retainers.enumerated().map { index, retainer in
            let at = "\(location)[\(index)]"
            return Retainer(
                count: try count(retainer.count, at: at + ".count"),
                root: .init(
                    kind: try named(retainer.root.kind, among: Retainer.RootKind.allCases, \.rawValue, at: at + ".root.kind"),
                    name: retainer.root.name, thread: retainer.root.thread),
                path: retainer.path.map {
                    Retainer.Step(via: $0.via, type: $0.type, isCollectionStorage: $0.collectionStorage ?? false)
                },
                retainedBytes: try bytes(retainer.retainedBytes, at: at + ".retainedBytes"),
                omittedSteps: try omitted(retainer, at: at).count,
                omittedAfter: try omitted(retainer, at: at).after)
        }
    }

    private func test(_ test: JSONReportWire.Test, at location: String) throws -> AuditReport.TestReport {
        var report = AuditReport.TestReport(
            name: test.name,
            leaked: try test.leaked.enumerated().map { index, leaked in
                let at = "\(location).leaked[\(index)]"
                var type = AuditReport.TestReport.LeakedType(
                    type: leaked.type, count: try count(leaked.count, at: at + ".count"),
                    allocations: try allocations(leaked.allocations, at: at + ".allocations"),
                    status: try status(leaked.status, leaked.suppression, leaked.baselineCount, at: at, of: "a test's leak"))
                type.retainers = try leaked.retainers.map { try retainers($0, at: at + ".retainers") }
                type.retainersUnavailable = leaked.retainersUnavailable ?? []
                return type
            },
            globalState: try test.globalState.enumerated().map { index, global in
                let at = "\(location).globalState[\(index)]"
                var type = AuditReport.TestReport.LeakedType(
                    type: global.type, count: try count(global.count, at: at + ".count"),
                    allocations: try allocations(global.allocations, at: at + ".allocations"),
                    globalStateReason: try named(
                        global.reason, among: AuditReport.GlobalStateReason.allCases, \.rawValue, at: at + ".reason"))
                type.retainers = try global.retainers.map { try retainers($0, at: at + ".retainers") }
                type.releasedAfterMilliseconds = try global.releasedAfterMilliseconds.map {
                    try time($0, at: at + ".releasedAfterMilliseconds")
                }
                return type
            },
            ran: test.ran)
        report.keptByTestCase = try (test.keptByTestCase ?? []).enumerated().map { index, kept in
            let at = "\(location).keptByTestCase[\(index)]"
            var type = AuditReport.TestReport.LeakedType(
                type: kept.type, count: try count(kept.count, at: at + ".count"),
                allocations: try allocations(kept.allocations, at: at + ".allocations"))
            type.retainers = try kept.retainers.map { try retainers($0, at: at + ".retainers") }
            return type
        }
        report.startedAt = try test.startedAtMilliseconds.map { try time($0, at: location + ".startedAtMilliseconds") }
        report.finishedAt = try test.finishedAtMilliseconds.map { try time($0, at: location + ".finishedAtMilliseconds") }
        return report
    }

    private func census(_ census: JSONReportWire.Census) throws -> AuditReport.Census {
        AuditReport.Census(
            entries: try census.types.enumerated().map { index, entry in
                let at = "census.types[\(index)]"
                var read = AuditReport.CensusEntry(
                    name: entry.name, liveAtExit: try count(entry.liveAtExit, at: at + ".liveAtExit"), isInternal: entry.internal,
                    isTestCase: entry.testCase, allocations: try allocations(entry.allocations, at: at + ".allocations"))
                read.timeline = try entry.timeline.map { try timeline($0, at: at + ".timeline") }
                read.bytes = try entry.bytes.map { try count($0, at: at + ".bytes") }
                return read
            },
            foldedTypes: try count(census.foldedTypes, at: "census.foldedTypes"),
            foldedInstances: try count(census.foldedInstances, at: "census.foldedInstances"),
            foldedTestCaseTypes: try count(census.foldedTestCaseTypes, at: "census.foldedTestCaseTypes"),
            foldedTestCaseInstances: try count(census.foldedTestCaseInstances, at: "census.foldedTestCaseInstances"))
    }

    private func unreachable(_ unreachable: JSONReportWire.Unreachable) throws -> UnreachableObjects {
        UnreachableObjects(
            objects: try count(unreachable.objects, at: "unreachable.objects"),
            bytes: try bytes(unreachable.bytes, at: "unreachable.bytes"),
            types: try unreachable.types.enumerated().map { index, type in
                let at = "unreachable.types[\(index)]"
                return UnreachableObjects.TypeCount(
                    name: type.name, count: try count(type.count, at: at + ".count"),
                    bytes: try bytes(type.bytes, at: at + ".bytes"),
                    isInternal: type.internal)
            },
            groups: try unreachable.groups.enumerated().map { index, group in
                let at = "unreachable.groups[\(index)]"
                guard !group.path.isEmpty else { throw Problem.invalid("\"\(at).path\" is empty, not a structure") }
                var read = UnreachableObjects.Group(
                    count: try count(group.count, at: at + ".count"), objects: try count(group.objects, at: at + ".objects"),
                    bytes: try bytes(group.bytes, at: at + ".bytes"),
                    shape: try named(group.shape, among: UnreachableObjects.Group.Shape.allCases, \.rawValue, at: at + ".shape"),
                    path: group.path.map {
                        Retainer.Step(via: $0.via, type: $0.type, isCollectionStorage: $0.collectionStorage ?? false)
                    },
                    allocations: try allocations(group.allocations, at: at + ".allocations"), isInternal: group.internal)
                // An internal group is folded, never judged: it has no status.
                if !group.internal {
                    read.status = try status(
                        group.status, group.suppression, group.baselineCount, at: at, of: "a group of the program's types")
                } else if let status = group.status {
                    throw Problem.inconsistent(
                        "\"\(at).status\" is \"\(ReportPhrases.escaped(status))\", but the group is internal, which is no finding"
                    )
                }
                return read
            },
            processesChecked: try count(unreachable.processesChecked, at: "unreachable.processesChecked"),
            unavailable: unreachable.unavailable)
    }

    /// `value` when it is a byte count a report can hold: 0 to 2^62.
    private func bytes(_ value: Int, at location: String) throws -> Int {
        guard (0...(1 << 62)).contains(value) else { throw Problem.invalid("\"\(location)\" is \(value), out of range") }
        return value
    }

    private func baseline(_ baseline: JSONReportWire.Baseline) throws -> AuditReport.BaselineComparison {
        AuditReport.BaselineComparison(
            path: baseline.path,
            gone: try baseline.gone.enumerated().map { index, entry in
                let at = "baseline.gone[\(index)]"
                switch (entry.kind, entry.test, entry.overBudget, entry.count) {
                case ("unreachable", nil, nil, let count?):
                    guard let identity = entry.path else {
                        throw Problem.invalid("\"\(at)\" of kind \"unreachable\" has no \"path\"")
                    }
                    return Baseline.Entry(key: .unreachable(identity), count: try self.count(count, at: at + ".count"))
                case ("type", nil, let overBudget?, nil):
                    return Baseline.Entry(key: .type(entry.type), count: try count(overBudget, at: at + ".overBudget"))
                case ("test", let test?, nil, let count?):
                    return Baseline.Entry(
                        key: .test(test: test, type: entry.type), count: try self.count(count, at: at + ".count"))
                default:
                    throw Problem.invalid(
                        "\"\(at)\" is none of {kind \"type\", type, overBudget}, {kind \"test\", test, type, count} and {kind \"unreachable\", type, path, count}"
                    )
                }
            })
    }

    /// A live-count timeline: a bucket width, and samples of four values each, `[time, low, high,
    /// last]`, whose times are times a report can hold and whose counts are counts.
    private func timeline(_ timeline: JSONReportWire.Timeline, at location: String) throws -> LiveCountTimeline {
        guard (1...JSONReportReader.largestTime).contains(timeline.bucketMilliseconds) else {
            throw Problem.invalid(
                "\"\(location).bucketMilliseconds\" is \(timeline.bucketMilliseconds), not 1 to \(JSONReportReader.largestTime)")
        }
        var previous = -1
        return LiveCountTimeline(
            bucketMilliseconds: timeline.bucketMilliseconds,
            samples: try timeline.samples.enumerated().map { index, sample in
                let at = "\(location).samples[\(index)]"
                guard sample.count == 4 else {
                    throw Problem.invalid("\"\(at)\" has \(sample.count) values, not [time, low, high, last]")
                }
                let values = [sample.first.0, sample.first.1, sample.first.2, sample.first.3]
                let sampleTime = try time(values[0], at: at + "[0]")
                // In time order, one sample a bucket: what charts and downsampling rely on.
                guard sampleTime > previous else {
                    throw Problem.invalid(
                        "\"\(at)[0]\" is \(sampleTime), not later than the sample before it (samples are in time order)")
                }
                previous = sampleTime
                return LiveCountTimeline.Sample(
                    time: sampleTime, low: try count(values[1], at: at + "[1]"),
                    high: try count(values[2], at: at + "[2]"), last: try count(values[3], at: at + "[3]"))
            })
    }

    /// `value` when it is a time a report can hold: 0 to `JSONReportReader.largestTime`
    /// milliseconds.
    private func time(_ value: Int, at location: String) throws -> Int {
        guard (0...JSONReportReader.largestTime).contains(value) else {
            throw Problem.invalid(
                "\"\(location)\" is \(value), not a time from 0 to \(JSONReportReader.largestTime) milliseconds")
        }
        return value
    }

    /// `value` when it is a count a report can hold: 0 to `JSONReportReader.largestCount`.
    private func count(_ value: Int, at location: String) throws -> Int {
        guard (0...JSONReportReader.largestCount).contains(value) else {
            throw Problem.invalid("\"\(location)\" is \(value), not a count from 0 to \(JSONReportReader.largestCount)")
        }
        return value
    }

    /// The case of `cases` whose name is `name`.
    private func named<Case>(_ name: String, among cases: [Case], _ nameOf: (Case) -> String, at location: String) throws -> Case
    {
        guard let match = cases.first(where: { nameOf($0) == name }) else {
            throw Problem.invalid(
                "\"\(location)\" is \"\(ReportPhrases.escaped(name))\", not one of \(cases.map(nameOf).joined(separator: ", "))")
        }
        return match
    }
}
