import FoundationEssentials
import LeakAuditModel
import LeakAuditPresentation

/// The report for code-scanning tools: a SARIF 2.1.0 log with one run, one `budget-exceeded`
/// result per type over budget and, with `--leaks-per-test`, one `test-leaked` result per test and
/// type it left alive, each located at the line that allocated the most of those instances.
///
/// A result's location is the first frame with a source line of its first (largest) allocation
/// group; the other groups' first source frames are related locations, every group's
/// whole stack is in `stacks`, and the readable part of each stack, outermost call first, is a
/// code flow. Paths under the working directory are relative to `%SRCROOT%`, which is that
/// directory, so that GitHub code scanning and other viewers find them in the checkout.
///
/// A suppressed finding is still a result, with an external `suppressions` entry whose
/// justification is the configuration's reason, so that viewers show it as suppressed. With
/// `--baseline`, each result has a `baselineState` (`new`, `updated` when larger than recorded,
/// `unchanged` within it) and a baselined one is level `note`; entries gone from the baseline are
/// listed in the run's properties.
public struct SARIFReportRenderer: ReportRenderer {
    /// The schema the log declares in `$schema`.
    public static let schemaURI = "https://json.schemastore.org/sarif-2.1.0.json"
    /// The rule of a type whose live count went over its budget.
    public static let budgetExceededRuleID = FindingRule.budgetExceeded.id
    /// The rule of a test that left instances alive after it finished (`--leaks-per-test`).
    public static let testLeakedRuleID = FindingRule.testLeaked.id
    /// The rule of a group of unreachable objects of the program's types; declared only in the
    /// log of a run that checked for them.
    public static let unreachableObjectsRuleID = FindingRule.unreachableObjects.id
    /// The URI base id of paths under the working directory.
    public static let sourceRootBaseID = "%SRCROOT%"

    /// Paths under this directory are written relative to `%SRCROOT%`.
    public var workingDirectory: String

    /// Creates the renderer; `workingDirectory` defaults to the process's.
    public init(workingDirectory: String? = nil) {
        self.workingDirectory = workingDirectory ?? FileManager.default.currentDirectoryPath
    }

    /// Renders the report as a pretty-printed SARIF log with sorted keys.
    public func render(_ report: AuditReport) -> String {
        stableJSON(log(report), what: "the SARIF log")
    }

    private var phrases: ReportPhrases { ReportPhrases(workingDirectory: workingDirectory) }

    private func log(_ report: AuditReport) -> SARIFLog {
        var notifications: [SARIFLog.Notification] = []
        if let explanation = phrases.notAuditedExplanation(report) {
            notifications.append(.init(level: "error", message: .init(explanation.joined(separator: "\n"))))
        }
        if let losses = phrases.incompleteness(report) {
            notifications.append(.init(level: "error", message: .init("the report is incomplete: \(losses)")))
        }
        for warning in report.warnings { notifications.append(.init(level: "warning", message: .init(warning))) }
        let root = workingDirectory.hasSuffix("/") ? workingDirectory : workingDirectory + "/"
        let run = SARIFLog.Run(
            tool: .init(
                driver: .init(
                    name: report.tool.name, version: report.tool.version, semanticVersion: report.tool.version,
                    rules: [Self.budgetExceededRule, Self.testLeakedRule]
                        + (report.unreachable == nil ? [] : [Self.unreachableObjectsRule]))),
            invocations: [
                .init(
                    executionSuccessful: report.notAudited == nil && !report.isIncomplete,
                    toolExecutionNotifications: notifications.isEmpty ? nil : notifications)
            ],
            originalUriBaseIds: [Self.sourceRootBaseID: .init(uri: "file://" + Self.percentEncoded(root))],
            columnKind: "unicodeCodePoints",
            results: report.notAudited == nil
                ? report.exceededTypes.map { result($0, report.baseline) } + testResults(report)
                    + report.unreachableFindings.map { result($0, report.baseline) } : [],
            properties: .init(
                target: report.target.path, targetArguments: report.target.arguments,
                targetOutcome: report.target.outcome.phrase, verdict: report.verdict.name,
                baseline: report.baseline?.path, goneFromBaseline: report.baseline?.gone.map(\.key.description)))
        return SARIFLog(runs: [run])
    }

    /// One result per test and type it left alive (`--leaks-per-test`).
    private func testResults(_ report: AuditReport) -> [SARIFLog.Result] {
        (report.tests ?? []).flatMap { test in test.leaked.map { result(test, $0, report.baseline) } }
    }

    private static let budgetExceededRule = rule(.budgetExceeded, tags: ["memory", "leak"])

    private static let testLeakedRule = rule(.testLeaked, tags: ["memory", "leak", "test"])

    private static let unreachableObjectsRule = rule(.unreachableObjects, tags: ["memory", "leak", "cycle"])

    /// One result per group of unreachable objects of the program's types, at the line that
    /// allocated them when that was recorded, else at the type the structure starts at.
    private func result(_ group: UnreachableObjects.Group, _ baseline: AuditReport.BaselineComparison?) -> SARIFLog.Result {
        let typeName = group.path.first?.type ?? ""
        return result(
            ruleID: Self.unreachableObjectsRuleID, ruleIndex: 2, message: ReportPhrases.unreachableSentence(group),
            typeName: typeName, allocations: group.allocations,
            allocated: { "\($0) of the \(group.objects) objects were allocated here." },
            fingerprint: ("leakAuditUnreachable/v1", group.identity), status: group.status, baseline: baseline,
            properties: .init(
                typeName: typeName, structure: group.identity, shape: group.shape.rawValue, structures: group.count,
                unreachableObjects: group.objects, unreachableBytes: group.bytes))
    }

    /// A finding rule as SARIF declares it.
    private static func rule(_ rule: FindingRule, tags: [String]) -> SARIFLog.Rule {
        SARIFLog.Rule(
            id: rule.id, name: rule.name, shortDescription: .init(rule.summary), fullDescription: .init(rule.explanation),
            help: .init(rule.help), defaultConfiguration: .init(level: "error"), properties: .init(tags: tags))
    }

    private func result(_ type: AuditReport.TrackedType, _ baseline: AuditReport.BaselineComparison?) -> SARIFLog.Result {
        let surplus = type.peakLive.subtractingReportingOverflow(type.max).partialValue
        var message =
            "\(ReportPhrases.escaped(type.name)) exceeded its budget: "
            + "\(phrases.budget(type))\(type.budget == .code ? " (declared in code)" : ""), "
            + "peak \(type.peakLive), alive at exit \(type.liveAtExit) (\(surplus) over budget)."
        if type.retainers?.isEmpty == false { message += " " + ReportPhrases.retainerSentences(type.retainers) }
        return result(
            ruleID: Self.budgetExceededRuleID, ruleIndex: 0, message: message, typeName: type.name,
            allocations: type.allocations, allocated: { "\($0) of the \(type.peakLive) alive at the peak were allocated here." },
            fingerprint: ("leakAuditType/v1", type.name), status: type.status, baseline: baseline,
            properties: .init(
                typeName: type.name, max: type.max, peakLive: type.peakLive, liveAtExit: type.liveAtExit,
                allocatedTotal: type.allocatedTotal, budgetSource: type.budget.source,
                budgetPattern: type.budget.pattern?.description, budgetOrigin: type.budget.pattern?.origin))
    }

    private func result(
        _ test: AuditReport.TestReport, _ leaked: AuditReport.TestReport.LeakedType,
        _ baseline: AuditReport.BaselineComparison?
    ) -> SARIFLog.Result {
        var message =
            "\(ReportPhrases.escaped(test.name)) left \(leaked.count) \(ReportPhrases.escaped(leaked.type)) "
            + "alive after it finished."
        if leaked.retainers?.isEmpty == false { message += " " + ReportPhrases.retainerSentences(leaked.retainers) }
        return result(
            ruleID: Self.testLeakedRuleID, ruleIndex: 1, message: message, typeName: leaked.type,
            allocations: leaked.allocations, allocated: { "\($0) of them were allocated here." },
            fingerprint: ("leakAuditTest/v1", test.name + "\n" + leaked.type), status: leaked.status, baseline: baseline,
            properties: .init(typeName: leaked.type, testName: test.name, leakedInstances: leaked.count),
            testName: test.name)
    }

    /// A result located at the first source line of the first (largest) allocation group that has
    /// one, or at the type itself when no frame has a source line (no debug information). A test's
    /// finding is located at the test's own line when its function is on a stack (the constructing
    /// line is then a related location).
    private func result(
        ruleID: String, ruleIndex: Int, message: String, typeName: String, allocations: [AuditReport.AllocationGroup],
        allocated: (Int) -> String, fingerprint: (String, String), status: FindingStatus,
        baseline: AuditReport.BaselineComparison?, properties: SARIFLog.ResultProperties, testName: String? = nil
    ) -> SARIFLog.Result {
        var message = message
        var properties = properties
        properties.findingStatus = status.name
        properties.baselineCount = status.recorded
        var suppressions: [SARIFLog.Suppression]?
        var baselineState: String?
        switch status {
        case .suppressed(let suppression):
            suppressions = [
                SARIFLog.Suppression(
                    kind: "external",
                    justification: (suppression.reason.map { $0 + " " } ?? "")
                        + "(\(suppression.rule), \(suppression.origin))")
            ]
            message += " Suppressed by \(suppression.rule)."
        case .failing: baselineState = baseline == nil ? nil : "new"
        case .largerThanBaseline(let recorded):
            baselineState = "updated"
            message += " Larger than the baseline, which records \(recorded)."
        case .baselined(let recorded):
            baselineState = "unchanged"
            message += " Within the baseline, which records \(recorded)."
        }
        let primary = allocations.first { $0.locatedFrame(typeName: typeName) != nil }
        let location: SARIFLog.Location
        var related: [SARIFLog.Location] = []
        let constructing = primary?.locatedFrame(typeName: typeName)
        // A test's line, when it is not the constructing line itself (a library constructed them).
        let inTest = testName.flatMap { name in allocations.lazy.compactMap { $0.testFrame(ofTest: name) }.first }
            .flatMap { $0 == constructing ? nil : $0 }
        if let inTest {
            location = self.location(inTest)
            message += " The test's line that led to the allocation is shown; related locations are where it was constructed."
        } else if let primary, let frame = constructing {
            message += " " + allocated(primary.count)
            location = self.location(frame)
        } else {
            location = SARIFLog.Location(
                logicalLocations: [.init(name: typeName, fullyQualifiedName: typeName, kind: "type")])
        }
        for group in allocations where group != primary || inTest != nil {
            guard let frame = group.locatedFrame(typeName: typeName), frame != inTest else { continue }
            var other = self.location(frame)
            other.id = related.count
            other.message = .init("\(group.count) × allocated at \(phrases.describe(frame))")
            related.append(other)
        }
        let stacks = allocations.map { group in
            SARIFLog.Stack(
                message: .init("\(group.count) × allocated at" + (group.truncated ? " (deeper frames not recorded)" : "")),
                frames: group.frames.map { SARIFLog.StackFrame(location: stackLocation($0), module: $0.module) })
        }
        let flows = allocations.compactMap { group -> SARIFLog.CodeFlow? in
            let steps = phrases.readableFrames(group.frames).filter(\.hasSourceLine).reversed()
            guard !steps.isEmpty else { return nil }
            return SARIFLog.CodeFlow(
                message: .init("\(group.count) × allocated"),
                threadFlows: [.init(locations: steps.map { SARIFLog.ThreadFlowLocation(location: self.location($0)) })])
        }
        return SARIFLog.Result(
            ruleId: ruleID,
            ruleIndex: ruleIndex,
            level: baselineState == "unchanged" ? "note" : "error",
            message: .init(message),
            suppressions: suppressions,
            baselineState: baselineState,
            locations: [location],
            relatedLocations: related.isEmpty ? nil : related,
            stacks: stacks.isEmpty ? nil : stacks,
            codeFlows: flows.isEmpty ? nil : flows,
            partialFingerprints: [fingerprint.0: fingerprint.1],
            properties: properties)
    }

    /// A frame with a source line as a location: its file and line, and its function.
    private func location(_ frame: SymbolizedFrame) -> SARIFLog.Location {
        SARIFLog.Location(
            physicalLocation: physicalLocation(frame),
            logicalLocations: frame.function.map { [.init(name: nil, fullyQualifiedName: $0, kind: "function")] })
    }

    /// Any frame as a stack frame's location: a physical location when it has a source line.
    private func stackLocation(_ frame: SymbolizedFrame) -> SARIFLog.Location {
        var location = SARIFLog.Location(
            physicalLocation: frame.hasSourceLine ? physicalLocation(frame) : nil,
            logicalLocations: frame.function.map { [.init(name: nil, fullyQualifiedName: $0, kind: "function")] })
        if location.physicalLocation == nil && location.logicalLocations == nil {
            location.message = .init("0x" + String(frame.address, radix: 16))
        }
        return location
    }

    private func physicalLocation(_ frame: SymbolizedFrame) -> SARIFLog.PhysicalLocation? {
        guard let file = frame.file, let line = frame.line, line > 0 else { return nil }
        let relative = relativePath(file, under: workingDirectory)
        let artifact: SARIFLog.ArtifactLocation =
            relative == file
            ? .init(uri: (file.hasPrefix("/") ? "file://" : "") + Self.percentEncoded(file))
            : .init(uri: Self.percentEncoded(relative), uriBaseId: Self.sourceRootBaseID)
        let column = frame.column.flatMap { $0 > 0 ? $0 : nil }
        return .init(artifactLocation: artifact, region: .init(startLine: line, startColumn: column))
    }

    /// A path as a URI reference: every byte but unreserved characters and `/` percent-encoded.
    static func percentEncoded(_ path: String) -> String {
        var result = ""
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"), UInt8(ascii: "/"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                result += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return result
    }
}

extension AuditReport.BudgetOrigin {
    /// `code` or `pattern`, as in the JSON report.
    fileprivate var source: String {
        switch self {
        case .code: "code"
        case .pattern: "pattern"
        }
    }

    fileprivate var pattern: BudgetPattern? {
        switch self {
        case .code: nil
        case .pattern(let pattern): pattern
        }
    }
}

/// The SARIF 2.1.0 objects leak-audit writes: separate from the report model, and only the
/// properties it fills. Optional properties that are nil are left out, as SARIF expects.
struct SARIFLog: Encodable {
    struct Message: Encodable {
        var text: String
        init(_ text: String) { self.text = text }
    }
    struct Run: Encodable {
        var tool: Tool
        var invocations: [Invocation]
        var originalUriBaseIds: [String: ArtifactLocation]
        var columnKind: String
        var results: [Result]
        var properties: RunProperties
    }
    struct RunProperties: Encodable {
        var target: String
        var targetArguments: [String]
        var targetOutcome: String
        var verdict: String
        var baseline: String?
        var goneFromBaseline: [String]?
    }
    struct Tool: Encodable {
        var driver: Driver
    }
    struct Driver: Encodable {
        var name: String
        var version: String
        var semanticVersion: String
        var rules: [Rule]
    }
    struct Rule: Encodable {
        var id: String
        var name: String
        var shortDescription: Message
        var fullDescription: Message
        var help: Message
        var defaultConfiguration: Configuration
        var properties: RuleProperties
    }
    struct Configuration: Encodable {
        var level: String
    }
    struct RuleProperties: Encodable {
        var tags: [String]
    }
    struct Invocation: Encodable {
        var executionSuccessful: Bool
        var toolExecutionNotifications: [Notification]?
    }
    struct Notification: Encodable {
        var level: String
        var message: Message
    }
    struct Result: Encodable {
        var ruleId: String
        var ruleIndex: Int
        var level: String
        var message: Message
        var suppressions: [Suppression]?
        var baselineState: String?
        var locations: [Location]
        var relatedLocations: [Location]?
        var stacks: [Stack]?
        var codeFlows: [CodeFlow]?
        var partialFingerprints: [String: String]
        var properties: ResultProperties
    }
    struct Suppression: Encodable {
        var kind: String
        var justification: String
    }
    struct ResultProperties: Encodable {
        var typeName: String
        var findingStatus: String? = nil
        var baselineCount: Int? = nil
        var testName: String?
        var leakedInstances: Int?
        var max: Int?
        var peakLive: Int?
        var liveAtExit: Int?
        var allocatedTotal: Int?
        var budgetSource: String?
        var budgetPattern: String?
        var budgetOrigin: String?
        /// A group of unreachable objects: its identity, shape, and how many structures, objects
        /// and bytes it has.
        var structure: String? = nil
        var shape: String? = nil
        var structures: Int? = nil
        var unreachableObjects: Int? = nil
        var unreachableBytes: Int? = nil
    }
    struct Location: Encodable {
        var id: Int?
        var physicalLocation: PhysicalLocation?
        var logicalLocations: [LogicalLocation]?
        var message: Message?
    }
    struct PhysicalLocation: Encodable {
        var artifactLocation: ArtifactLocation
        var region: Region
    }
    struct ArtifactLocation: Encodable {
        var uri: String
        var uriBaseId: String?
    }
    struct Region: Encodable {
        var startLine: Int
        var startColumn: Int?
    }
    struct LogicalLocation: Encodable {
        var name: String?
        var fullyQualifiedName: String
        var kind: String
    }
    struct Stack: Encodable {
        var message: Message
        var frames: [StackFrame]
    }
    struct StackFrame: Encodable {
        var location: Location
        var module: String?
    }
    struct CodeFlow: Encodable {
        var message: Message
        var threadFlows: [ThreadFlow]
    }
    struct ThreadFlow: Encodable {
        var locations: [ThreadFlowLocation]
    }
    struct ThreadFlowLocation: Encodable {
        var location: Location
    }

    var schema = SARIFReportRenderer.schemaURI
    var version = "2.1.0"
    var runs: [Run]

    enum CodingKeys: String, CodingKey {
        case schema = "$schema"
        case version, runs
    }
}
