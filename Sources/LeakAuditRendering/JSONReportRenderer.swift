import FoundationEssentials
import LeakAuditModel

/// The report for tools: JSON of schema version 1, described by docs/report-schema.json.
public struct JSONReportRenderer: ReportRenderer {
    /// The schema version this renderer writes.
    public static let schemaVersion = 1

    /// Creates the renderer.
    public init() {}

    /// Renders the report as pretty-printed JSON with sorted keys.
    public func render(_ report: AuditReport) -> String {
        stableJSON(JSONReportV1(report), what: "the JSON report")
    }
}

/// The JSON report's wire form, version 1: separate from the in-memory model so that the model
/// can change without changing the format. Missing values are written as null, never omitted.
struct JSONReportV1: Encodable {
    struct Tool: Encodable {
        var name: String
        var version: String
    }
    struct Exit: Encodable {
        var code: Int32?
        var signal: Int32?
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(code, forKey: .code)
            try container.encodeIfPresent(signal, forKey: .signal)
        }
        enum CodingKeys: String, CodingKey { case code, signal }
    }
    struct Process: Encodable {
        var pid: Int32
        var commandLine: [String]
        var testingLibrary: String?
        var testsRun: Int?
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(pid, forKey: .pid)
            try container.encode(commandLine, forKey: .commandLine)
            try container.encode(testingLibrary, forKey: .testingLibrary)
            try container.encode(testsRun, forKey: .testsRun)
        }
        enum CodingKeys: String, CodingKey { case pid, commandLine, testingLibrary, testsRun }
    }
    struct Target: Encodable {
        var path: String
        var arguments: [String]
        var attached: Bool
        var attachedProcesses: Int
        var exit: Exit
        var notAuditedReason: String?
        var processes: [Process]
        var skippedProcesses: Int
        var testsRun: Int?
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(path, forKey: .path)
            try container.encode(arguments, forKey: .arguments)
            try container.encode(attached, forKey: .attached)
            try container.encode(attachedProcesses, forKey: .attachedProcesses)
            try container.encode(exit, forKey: .exit)
            try container.encode(notAuditedReason, forKey: .notAuditedReason)
            try container.encode(processes, forKey: .processes)
            try container.encode(skippedProcesses, forKey: .skippedProcesses)
            try container.encode(testsRun, forKey: .testsRun)
        }
        enum CodingKeys: String, CodingKey {
            case path, arguments, attached, attachedProcesses, exit, notAuditedReason, processes, skippedProcesses, testsRun
        }
    }
    struct Summary: Encodable {
        var verdict: String
        var trackedTypes: Int
        var exceededTypes: Int
        var instancesOverBudget: Int
        var findings: Findings
        var droppedRecords: UInt64
        var tornRecords: UInt64
        var warnings: [String]
    }
    struct Frame: Encodable {
        var address: String
        var module: String?
        var moduleOffset: String?
        var function: String?
        var file: String?
        var line: Int?
        var column: Int?
        var inlined: Bool
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(address, forKey: .address)
            try container.encode(module, forKey: .module)
            try container.encode(moduleOffset, forKey: .moduleOffset)
            try container.encode(function, forKey: .function)
            try container.encode(file, forKey: .file)
            try container.encode(line, forKey: .line)
            try container.encode(column, forKey: .column)
            try container.encode(inlined, forKey: .inlined)
        }
        enum CodingKeys: String, CodingKey { case address, module, moduleOffset, function, file, line, column, inlined }
    }
    struct Allocation: Encodable {
        var count: Int
        var truncated: Bool
        var test: String?
        var frames: [Frame]
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(count, forKey: .count)
            try container.encode(truncated, forKey: .truncated)
            try container.encode(test, forKey: .test)  // null outside tests
            try container.encode(frames, forKey: .frames)
        }
        enum CodingKeys: String, CodingKey { case count, truncated, test, frames }
    }
    struct Suppression: Encodable {
        var rule: String
        var kind: String
        var pattern: String
        var reason: String?
        var origin: String
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(rule, forKey: .rule)
            try container.encode(kind, forKey: .kind)
            try container.encode(pattern, forKey: .pattern)
            try container.encode(reason, forKey: .reason)
            try container.encode(origin, forKey: .origin)
        }
        enum CodingKeys: String, CodingKey { case rule, kind, pattern, reason, origin }
    }
    /// How a finding counts: `status`, the suppression that matched, and what the baseline records.
    struct Finding {
        var status: String?
        var suppression: Suppression?
        var baselineCount: Int?

        init(_ status: FindingStatus?) {
            self.status = status?.name
            suppression = status?.suppression.map {
                Suppression(rule: $0.rule, kind: $0.kind, pattern: $0.pattern, reason: $0.reason, origin: $0.origin)
            }
            baselineCount = status?.recorded
        }

        func encode<Key: CodingKey>(
            into container: inout KeyedEncodingContainer<Key>, status statusKey: Key, suppression suppressionKey: Key,
            baselineCount baselineKey: Key
        ) throws {
            try container.encode(status, forKey: statusKey)
            try container.encode(suppression, forKey: suppressionKey)
            try container.encode(baselineCount, forKey: baselineKey)
        }
    }
    struct LeakedType: Encodable {
        var type: String
        var count: Int
        var allocations: [Allocation]
        var finding: Finding
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(type, forKey: .type)
            try container.encode(count, forKey: .count)
            try container.encode(allocations, forKey: .allocations)
            try finding.encode(into: &container, status: .status, suppression: .suppression, baselineCount: .baselineCount)
        }
        enum CodingKeys: String, CodingKey { case type, count, allocations, status, suppression, baselineCount }
    }
    struct GlobalState: Encodable {
        var type: String
        var count: Int
        var reason: String
        var allocations: [Allocation]
    }
    struct Test: Encodable {
        var name: String
        var ran: Bool
        var leaked: [LeakedType]
        var globalState: [GlobalState]
    }
    struct Budget: Encodable {
        var source: String
        var pattern: String?
        var origin: String?
    }
    struct TrackedType: Encodable {
        var name: String
        var budget: Budget
        var max: Int
        var peakLive: Int
        var liveAtExit: Int
        var allocatedTotal: Int
        var exceeded: Bool
        var allocations: [Allocation]
        var finding: Finding
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(budget, forKey: .budget)
            try container.encode(max, forKey: .max)
            try container.encode(peakLive, forKey: .peakLive)
            try container.encode(liveAtExit, forKey: .liveAtExit)
            try container.encode(allocatedTotal, forKey: .allocatedTotal)
            try container.encode(exceeded, forKey: .exceeded)
            try container.encode(allocations, forKey: .allocations)
            try finding.encode(into: &container, status: .status, suppression: .suppression, baselineCount: .baselineCount)
        }
        enum CodingKeys: String, CodingKey {
            case name, budget, max, peakLive, liveAtExit, allocatedTotal, exceeded, allocations, status, suppression,
                baselineCount
        }
    }
    struct Findings: Encodable {
        var failing: Int
        var suppressed: Int
        var baselined: Int
    }
    struct BaselineEntry: Encodable {
        var kind: String
        var type: String
        var test: String?
        var overBudget: Int?
        var count: Int?
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(kind, forKey: .kind)
            try container.encode(type, forKey: .type)
            try container.encodeIfPresent(test, forKey: .test)
            try container.encodeIfPresent(overBudget, forKey: .overBudget)
            try container.encodeIfPresent(count, forKey: .count)
        }
        enum CodingKeys: String, CodingKey { case kind, type, test, overBudget, count }
    }
    struct Baseline: Encodable {
        var path: String
        var gone: [BaselineEntry]
    }

    struct CensusEntry: Encodable {
        var name: String
        var liveAtExit: Int
        var `internal`: Bool
        var testCase: Bool
        var allocations: [Allocation]
    }
    struct Census: Encodable {
        var types: [CensusEntry]
        var foldedTypes: Int
        var foldedInstances: Int
        var foldedTestCaseTypes: Int
        var foldedTestCaseInstances: Int
    }

    var schemaVersion = JSONReportRenderer.schemaVersion
    var tool: Tool
    var target: Target
    var summary: Summary
    var types: [TrackedType]
    var census: Census?

    var tests: [Test]?
    var baseline: Baseline?

    enum CodingKeys: String, CodingKey { case schemaVersion, tool, target, summary, types, census, tests, baseline }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(schemaVersion, forKey: .schemaVersion)
        try container.encode(tool, forKey: .tool)
        try container.encode(target, forKey: .target)
        try container.encode(summary, forKey: .summary)
        try container.encode(types, forKey: .types)
        try container.encode(census, forKey: .census)  // null without --census
        try container.encode(tests, forKey: .tests)  // null without --leaks-per-test
        try container.encode(baseline, forKey: .baseline)  // null without --baseline
    }

    init(_ report: AuditReport) {
        tool = Tool(name: report.tool.name, version: report.tool.version)
        let exit: Exit =
            switch report.target.outcome {
            case .exited(let code): Exit(code: code)
            case .signaled(let signal): Exit(signal: signal)
            }
        target = Target(
            path: report.target.path, arguments: report.target.arguments, attached: report.target.attached,
            attachedProcesses: report.target.attachedProcesses, exit: exit,
            notAuditedReason: report.notAudited?.name,
            processes: report.target.processes.map {
                Process(
                    pid: $0.pid, commandLine: $0.commandLine, testingLibrary: $0.testingLibrary?.rawValue, testsRun: $0.testsRun)
            },
            skippedProcesses: report.target.skippedProcesses, testsRun: report.target.testsRun)
        summary = Summary(
            verdict: report.verdict.name,
            trackedTypes: report.types.count,
            exceededTypes: report.exceededTypes.count,
            instancesOverBudget: report.exceededTypes.reduce(0) { $0 + $1.peakLive - $1.max },
            findings: Findings(
                failing: report.findingStatuses.filter(\.fails).count,
                suppressed: report.findingStatuses.filter { $0.suppression != nil }.count,
                baselined: report.findingStatuses.filter { if case .baselined = $0 { true } else { false } }.count),
            droppedRecords: report.droppedRecords,
            tornRecords: report.tornRecords,
            warnings: report.warnings
        )
        func allocations(_ groups: [AuditReport.AllocationGroup]) -> [Allocation] {
            groups.map { Allocation(count: $0.count, truncated: $0.truncated, test: $0.test, frames: $0.frames.map(Frame.init)) }
        }
        tests = report.tests.map { tests in
            tests.map { test in
                Test(
                    name: test.name, ran: test.ran,
                    leaked: test.leaked.map {
                        LeakedType(
                            type: $0.type, count: $0.count, allocations: allocations($0.allocations),
                            finding: Finding($0.status))
                    },
                    globalState: test.globalState.map {
                        GlobalState(
                            type: $0.type, count: $0.count,
                            reason: ($0.globalStateReason ?? .oneTimeInitializer).rawValue,
                            allocations: allocations($0.allocations))
                    })
            }
        }
        types = report.types.map { type in
            let budget: Budget =
                switch type.budget {
                case .code: Budget(source: "code")
                case .pattern(let pattern): Budget(source: "pattern", pattern: pattern.description, origin: pattern.origin)
                }
            return TrackedType(
                name: type.name, budget: budget, max: type.max, peakLive: type.peakLive, liveAtExit: type.liveAtExit,
                allocatedTotal: type.allocatedTotal, exceeded: type.exceeded, allocations: allocations(type.allocations),
                finding: Finding(type.exceeded ? type.status : nil))
        }
        baseline = report.baseline.map { comparison in
            Baseline(
                path: comparison.path,
                gone: comparison.gone.map { entry in
                    switch entry.key {
                    case .type(let type): BaselineEntry(kind: "type", type: type, overBudget: entry.count)
                    case .test(let test, let type): BaselineEntry(kind: "test", type: type, test: test, count: entry.count)
                    }
                })
        }
        census = report.census.map { census in
            Census(
                types: census.entries.map {
                    CensusEntry(
                        name: $0.name, liveAtExit: $0.liveAtExit, internal: $0.isInternal, testCase: $0.isTestCase,
                        allocations: allocations($0.allocations))
                },
                foldedTypes: census.foldedTypes, foldedInstances: census.foldedInstances,
                foldedTestCaseTypes: census.foldedTestCaseTypes, foldedTestCaseInstances: census.foldedTestCaseInstances)
        }
    }
}

extension JSONReportV1.Frame {
    init(_ frame: SymbolizedFrame) {
        self.init(
            address: "0x" + String(frame.address, radix: 16),
            module: frame.module,
            moduleOffset: frame.moduleOffset.map { "0x" + String($0, radix: 16) },
            function: frame.function,
            file: frame.file,
            line: frame.line,
            column: frame.column,
            inlined: frame.inlined
        )
    }
}
