import FoundationEssentials
import LeakAuditModel

/// The report for tools: JSON of schema version 2, described by docs/report-schema.json.
public struct JSONReportRenderer: ReportRenderer {
    /// The schema version this renderer writes.
    public static let schemaVersion = 2

    /// The schema version written: 2, or 1 (every frame inside each allocation group) to make the
    /// reports older releases wrote, for tests and fuzz seeds of the reader.
    let writtenVersion: Int

    /// Creates the renderer.
    public init() {
        writtenVersion = Self.schemaVersion
    }

    /// A renderer of schema 1, the shape older releases wrote: for tests and fuzz seeds that read
    /// such reports back.
    package static var schema1: JSONReportRenderer { JSONReportRenderer(writtenVersion: 1) }

    private init(writtenVersion: Int) {
        self.writtenVersion = writtenVersion
    }

    /// Renders the report as pretty-printed JSON with sorted keys.
    public func render(_ report: AuditReport) -> String {
        stableJSON(JSONReportWire(report, schemaVersion: writtenVersion), what: "the JSON report")
    }
}

/// The JSON report's wire form: separate from the in-memory model so that the model can change
/// without changing the format. Schema 2 writes each distinct frame once, in `frames`, and each
/// distinct stack once, in `stacks` (indexes into `frames`); an allocation group names its stack
/// by index. Schema 1 wrote each group's frames whole. Missing values are written as null, never
/// omitted, except in a frame of `frames`, which holds only what is known. `JSONReportReader`
/// reads both versions back; fields added since schema 1's first release (`@AddedField`) are read
/// as absent from a report written before them.
struct JSONReportWire: Codable, Equatable {
    struct Tool: Codable, Equatable {
        var name: String
        var version: String
    }
    struct Exit: Codable, Equatable {
        var code: Int32?
        var signal: Int32?
        /// true for a process inspected while it ran (`leak-audit inspect`).
        var running: Bool? = nil
    }
    struct Process: Codable, Equatable {
        var pid: Int32
        var commandLine: [String]
        @ExplicitNull var testingLibrary: String?
        @ExplicitNull var testsRun: Int?
        /// Added after the first release of schema 1: absent, none.
        @AddedField var interruptedTests: [String]?
        /// Added after the first release of schema 1: absent, null.
        @AddedField var startedByTestProcess: Int32?
        /// Added after the first release of schema 1: absent, null (not observed).
        @AddedField var skippedTests: [String]?
    }
    struct Target: Codable, Equatable {
        var path: String
        var arguments: [String]
        var attached: Bool
        var attachedProcesses: Int
        var exit: Exit
        @ExplicitNull var notAuditedReason: String?
        var processes: [Process]
        var skippedProcesses: Int
        @ExplicitNull var testsRun: Int?
        /// Added after the first release of schema 1: absent, null (not measured).
        @AddedField var durationMilliseconds: Int?
        /// What the target's file is; null when it was not inspected. Added after the first release
        /// of schema 1: absent, null.
        @AddedField var kind: String?
        /// Added after the first release of schema 1: absent, null (not observed).
        @AddedField var testsSkipped: Int?
        /// Added after the first release of schema 2, written only by `leak-audit inspect`:
        /// absent for a run.
        var stoppedMicroseconds: Int?
    }
    struct Summary: Codable, Equatable {
        var verdict: String
        var trackedTypes: Int
        var exceededTypes: Int
        var instancesOverBudget: Int
        var findings: Findings
        var droppedRecords: UInt64
        var tornRecords: UInt64
        var damagedRecords: UInt64
        var incomplete: Bool
        var warnings: [String]
        /// Added after the first release of schema 1: absent, derived from `incomplete` and the
        /// record counts.
        @AddedField var exceededCapacity: Bool?
        /// Added after the first release of schema 1: absent, 0 (none counted).
        @AddedField var watchedInstances: Int?
    }
    /// A frame of schema 2, in the report's `frames`: only what is known (no null), and `inlined`
    /// only when true.
    struct Frame: Codable, Equatable, Hashable {
        var address: String
        var module: String?
        var moduleOffset: String?
        var function: String?
        var file: String?
        var line: Int?
        var column: Int?
        var inlined: Bool?
    }
    /// A frame of schema 1, inside its allocation group: every field, null when unknown.
    struct FrameV1: Codable, Equatable {
        var address: String
        @ExplicitNull var module: String?
        @ExplicitNull var moduleOffset: String?
        @ExplicitNull var function: String?
        @ExplicitNull var file: String?
        @ExplicitNull var line: Int?
        @ExplicitNull var column: Int?
        var inlined: Bool
    }
    /// Instances allocated by one stack. Schema 2 names the stack by its index in `stacks`;
    /// schema 1 wrote its frames.
    struct Allocation: Codable, Equatable {
        var count: Int
        var truncated: Bool
        @ExplicitNull var test: String?
        /// Schema 2: the index of the group's stack in the report's `stacks`.
        var stack: Int?
        /// Schema 1: the group's frames, written whole.
        var frames: [FrameV1]?
    }
    struct Suppression: Codable, Equatable {
        var rule: String
        var kind: String
        var pattern: String
        @ExplicitNull var reason: String?
        var origin: String
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
    }
    struct LeakedType: Codable, Equatable {
        var type: String
        var count: Int
        var allocations: [Allocation]
        @ExplicitNull var status: String?
        @ExplicitNull var suppression: Suppression?
        @ExplicitNull var baselineCount: Int?
        /// Only with --retainers (absent otherwise).
        var retainers: [Retainer]? = nil
        /// Only with --retainers (absent otherwise): why some instances have no retainers.
        var retainersUnavailable: [String]? = nil
    }
    /// Who holds instances: a group of the same path shape (docs/retainers.md).
    struct Retainer: Codable, Equatable {
        struct Root: Codable, Equatable {
            var kind: String
            var name: String
            var thread: String?
        }
        struct Step: Codable, Equatable {
            var via: String
            var type: String
            /// Added after the first release of schema 1: absent, false.
            @AddedField var collectionStorage: Bool?
        }
        var count: Int
        var retainedBytes: Int
        var root: Root
        var path: [Step]
        /// Added after the first release of schema 1: absent, none. The objects of a long path
        /// left out of `path`, and where: before `path[after]`.
        @AddedField var omittedSteps: OmittedSteps?
        struct OmittedSteps: Codable, Equatable {
            var after: Int
            var count: Int
        }

        init(_ retainer: LeakAuditModel.Retainer) {
            count = retainer.count
            retainedBytes = retainer.retainedBytes
            root = Root(kind: retainer.root.kind.rawValue, name: retainer.root.name, thread: retainer.root.thread)
            path = retainer.path.map { Step(via: $0.via, type: $0.type, collectionStorage: $0.isCollectionStorage) }
            if retainer.omittedSteps > 0 {
                omittedSteps = OmittedSteps(after: retainer.omittedAfter, count: retainer.omittedSteps)
            }
        }
    }
    struct GlobalState: Codable, Equatable {
        var type: String
        var count: Int
        var reason: String
        var allocations: [Allocation]
        /// Only with --retainers (absent otherwise).
        var retainers: [Retainer]? = nil
        /// Only for `releasedLater` (absent otherwise): how long after the test finished the last
        /// of them was released.
        var releasedAfterMilliseconds: Int? = nil
    }
    /// Instances only a test case object held (`TestReport.keptByTestCase`).
    struct KeptByTestCase: Codable, Equatable {
        var type: String
        var count: Int
        var allocations: [Allocation]
        /// Only with --retainers (absent otherwise); the first step after the root is the property.
        var retainers: [Retainer]? = nil
    }
    struct Test: Codable, Equatable {
        var name: String
        var ran: Bool
        var leaked: [LeakedType]
        var globalState: [GlobalState]
        /// Added after the first release of schema 1: absent, none.
        @AddedField var keptByTestCase: [KeptByTestCase]?
        /// Added after the first release of schema 1: absent, null (not seen).
        @AddedField var startedAtMilliseconds: Int?
        /// Added after the first release of schema 1: absent, null (not seen).
        @AddedField var finishedAtMilliseconds: Int?
    }
    /// Instances alive over time: each sample is `[time, low, high, last]`, time in milliseconds
    /// since the target started (docs/report-schema.json).
    struct Timeline: Codable, Equatable {
        var bucketMilliseconds: Int
        var samples: [Sample]

        init(_ timeline: LiveCountTimeline) {
            bucketMilliseconds = timeline.bucketMilliseconds
            samples = timeline.samples.map { Sample(values: [$0.time, $0.low, $0.high, $0.last]) }
        }
    }
    /// `[time, low, high, last]`, held without an array of its own: a saved report may hold
    /// millions. `count` is how many values the file's array had (the reader refuses all but 4).
    struct Sample: Codable, Equatable {
        var first = (0, 0, 0, 0)
        var count = 0

        init(values: [Int]) {
            count = values.count
            for (index, value) in values.prefix(4).enumerated() { set(index, value) }
        }

        /// The values read, at most the first four.
        var values: [Int] { Array([first.0, first.1, first.2, first.3].prefix(count)) }

        private mutating func set(_ index: Int, _ value: Int) {
            switch index {
            case 0: first.0 = value
            case 1: first.1 = value
            case 2: first.2 = value
            default: first.3 = value
            }
        }

        init(from decoder: any Decoder) throws {
            var array = try decoder.unkeyedContainer()
            while !array.isAtEnd {
                let value = try array.decode(Int.self)
                if count < 4 { set(count, value) }
                count += 1
            }
        }

        func encode(to encoder: any Encoder) throws {
            var array = encoder.unkeyedContainer()
            for value in values { try array.encode(value) }
        }

        static func == (left: Sample, right: Sample) -> Bool { left.count == right.count && left.values == right.values }
    }
    struct Budget: Codable, Equatable {
        var source: String
        var pattern: String?
        var origin: String?
    }
    struct TrackedType: Codable, Equatable {
        var name: String
        var budget: Budget
        var max: Int
        var peakLive: Int
        var liveAtExit: Int
        var allocatedTotal: Int
        var exceeded: Bool
        var allocations: [Allocation]
        @ExplicitNull var status: String?
        @ExplicitNull var suppression: Suppression?
        @ExplicitNull var baselineCount: Int?
        /// Only with --retainers (absent otherwise).
        var retainers: [Retainer]? = nil
        /// Only with --retainers: why some instances have no path.
        var retainersUnavailable: [String]? = nil
        /// Added after the first release of schema 1, like the next two: absent, empty.
        @AddedField var allocationsAtExit: [Allocation]? = nil
        /// Absent: null (not recorded).
        @AddedField var timeline: Timeline? = nil
        /// Absent: null (not recorded).
        @AddedField var peakTimeMilliseconds: Int? = nil
    }
    struct Findings: Codable, Equatable {
        var failing: Int
        var suppressed: Int
        var baselined: Int
    }
    struct BaselineEntry: Codable, Equatable {
        var kind: String
        var type: String
        var test: String?
        var overBudget: Int?
        var count: Int?
        /// A group of unreachable objects: its identity.
        var path: String? = nil
    }
    struct Baseline: Codable, Equatable {
        var path: String
        var gone: [BaselineEntry]
    }

    struct CensusEntry: Codable, Equatable {
        var name: String
        var liveAtExit: Int
        var `internal`: Bool
        var testCase: Bool
        var allocations: [Allocation]
        /// Added after the first release of schema 1: absent, null.
        @AddedField var timeline: Timeline?
        /// Added after the first release of schema 2, written only by `leak-audit inspect`
        /// (a heap walk's bytes): absent for a run's census.
        var bytes: Int?
    }
    struct Census: Codable, Equatable {
        var types: [CensusEntry]
        var foldedTypes: Int
        var foldedInstances: Int
        var foldedTestCaseTypes: Int
        var foldedTestCaseInstances: Int
    }

    /// One type among the unreachable objects.
    struct UnreachableType: Codable, Equatable {
        var name: String
        var count: Int
        var bytes: Int
        var `internal`: Bool
    }
    /// Unreachable structures of one shape: a cycle, or an object alone (over-retained).
    struct UnreachableGroup: Codable, Equatable {
        var count: Int
        var objects: Int
        var bytes: Int
        var shape: String
        var path: [Retainer.Step]
        var allocations: [Allocation]
        var `internal`: Bool
        /// Null for an internal group, which is no finding.
        @ExplicitNull var status: String?
        @ExplicitNull var suppression: Suppression?
        @ExplicitNull var baselineCount: Int?
    }
    /// The Swift objects nothing reached (`AuditReport.unreachable`).
    struct Unreachable: Codable, Equatable {
        var objects: Int
        var bytes: Int
        var types: [UnreachableType]
        var groups: [UnreachableGroup]
        var processesChecked: Int
        var unavailable: [String]
    }

    var schemaVersion: Int
    var tool: Tool
    var target: Target
    var summary: Summary
    var types: [TrackedType]
    @ExplicitNull var census: Census?  // null without --census
    /// Added after the first release of schema 2, written only by `leak-audit inspect`: absent
    /// for a run.
    var largestRetained: [Retainer]?

    @ExplicitNull var tests: [Test]?  // null without --leaks-per-test
    @ExplicitNull var baseline: Baseline?  // null without --baseline
    /// Schema 2: null when unreachable objects were not checked; absent from a report written
    /// before the key (read as not checked) and from schema 1.
    var unreachable: ExplicitNull<Unreachable>?
    /// Schema 2: every distinct frame of the report, once.
    var frames: [Frame]?
    /// Schema 2: every distinct stack of the report, once, as indexes into `frames`, innermost
    /// first.
    var stacks: [[Int]]?

    /// The report's wire form in `schemaVersion` (2, or 1 for tests), step by step.
    init(_ report: AuditReport, schemaVersion: Int = JSONReportRenderer.schemaVersion) {
        self.schemaVersion = schemaVersion
        var table = StackTable(inline: schemaVersion < 2)
        tool = Tool(name: report.tool.name, version: report.tool.version)
        target = Target(report)
        summary = Summary(report)
        types = report.types.map { TrackedType($0, table: &table) }
        tests = report.tests.map { tests in tests.map { Test($0, table: &table) } }
        census = report.census.map { Census($0, table: &table) }
        largestRetained = report.largestRetained.map { $0.map(Retainer.init) }
        baseline = report.baseline.map(Baseline.init)
        if schemaVersion >= 2 {
            unreachable = ExplicitNull(wrappedValue: report.unreachable.map { Unreachable($0, table: &table) })
        }
        if !table.inline {
            frames = table.frames
            stacks = table.stacks
        }
    }
}

/// The report's distinct frames and stacks as they are met, each kept once and named by its index
/// (schema 2); or, for schema 1, every group's frames written where the group is.
struct StackTable {
    /// Whether groups hold their frames (schema 1) rather than an index into `stacks`.
    let inline: Bool
    private(set) var frames: [JSONReportWire.Frame] = []
    private(set) var stacks: [[Int]] = []
    private var frameIndexes: [SymbolizedFrame: Int] = [:]
    private var stackIndexes: [[Int]: Int] = [:]
    /// Stacks met already, by the address of their frames' storage: the groups of one stack share
    /// its array (the report's symbolized stack), so most are found without hashing a frame (each
    /// frame's strings: most of the table's time in a report of 800 tests' leaks). Only while
    /// `report`, which holds every array met, is alive: one table a report.
    private var stacksByStorage: [StackStorage: Int] = [:]

    private struct StackStorage: Hashable {
        let address: UnsafeRawPointer
        let count: Int
    }

    init(inline: Bool) {
        self.inline = inline
    }

    /// The wire form of `groups`, each naming its stack (which is added to the table when new).
    mutating func allocations(_ groups: [AuditReport.AllocationGroup]) -> [JSONReportWire.Allocation] {
        groups.map { group in
            var allocation = JSONReportWire.Allocation(count: group.count, truncated: group.truncated, test: group.test)
            if inline {
                allocation.frames = group.frames.map(JSONReportWire.FrameV1.init)
            } else {
                allocation.stack = index(of: group.frames)
            }
            return allocation
        }
    }

    private mutating func index(of stack: [SymbolizedFrame]) -> Int {
        let storage = stack.withUnsafeBufferPointer { buffer in
            buffer.baseAddress.map { StackStorage(address: UnsafeRawPointer($0), count: buffer.count) }
        }
        if let storage, let known = stacksByStorage[storage] { return known }
        let index = index(ofFrames: stack)
        if let storage { stacksByStorage[storage] = index }
        return index
    }

    private mutating func index(ofFrames stack: [SymbolizedFrame]) -> Int {
        let frameIndexes = stack.map { frame in
            if let known = self.frameIndexes[frame] { return known }
            self.frameIndexes[frame] = frames.count
            frames.append(JSONReportWire.Frame(frame))
            return frames.count - 1
        }
        if let known = stackIndexes[frameIndexes] { return known }
        stackIndexes[frameIndexes] = stacks.count
        stacks.append(frameIndexes)
        return stacks.count - 1
    }
}

extension JSONReportWire.Target {
    init(_ report: AuditReport) {
        let exit: JSONReportWire.Exit =
            switch report.target.outcome {
            case .exited(let code): .init(code: code)
            case .signaled(let signal): .init(signal: signal)
            case .running: .init(running: true)
            }
        self.init(
            path: report.target.path, arguments: report.target.arguments, attached: report.target.attached,
            attachedProcesses: report.target.attachedProcesses, exit: exit,
            notAuditedReason: report.notAudited?.name,
            processes: report.target.processes.map {
                JSONReportWire.Process(
                    pid: $0.pid, commandLine: $0.commandLine, testingLibrary: $0.testingLibrary?.rawValue, testsRun: $0.testsRun,
                    interruptedTests: $0.interruptedTests, startedByTestProcess: $0.startedByTestProcess,
                    skippedTests: $0.skippedTests)
            },
            skippedProcesses: report.target.skippedProcesses, testsRun: report.target.testsRun,
            durationMilliseconds: report.target.durationMilliseconds, kind: report.target.kind?.name,
            testsSkipped: report.target.testsSkipped, stoppedMicroseconds: report.target.stoppedMicroseconds)
    }
}

extension JSONReportWire.Summary {
    /// The summary, derived from the rest of the report (the reader checks a saved one against it).
    init(_ report: AuditReport) {
        self.init(
            verdict: report.verdict.name,
            trackedTypes: report.types.count,
            exceededTypes: report.exceededTypes.count,
            instancesOverBudget: report.exceededTypes.reduce(0) { $0 + $1.peakLive - $1.max },
            findings: JSONReportWire.Findings(
                failing: report.findingStatuses.filter(\.fails).count,
                suppressed: report.findingStatuses.filter { $0.suppression != nil }.count,
                baselined: report.findingStatuses.filter { if case .baselined = $0 { true } else { false } }.count),
            droppedRecords: report.droppedRecords,
            tornRecords: report.tornRecords,
            damagedRecords: report.damagedRecords,
            incomplete: report.isIncomplete,
            warnings: report.warnings,
            exceededCapacity: report.exceededCapacity,
            watchedInstances: report.watchedInstances
        )
    }
}

extension JSONReportWire.Test {
    init(_ test: AuditReport.TestReport, table: inout StackTable) {
        self.init(
            name: test.name, ran: test.ran,
            leaked: test.leaked.map {
                var leaked = JSONReportWire.LeakedType(
                    type: $0.type, count: $0.count, allocations: table.allocations($0.allocations),
                    finding: JSONReportWire.Finding($0.status))
                leaked.retainers = $0.retainers?.map(JSONReportWire.Retainer.init)
                if $0.retainers != nil { leaked.retainersUnavailable = $0.retainersUnavailable }
                return leaked
            },
            globalState: test.globalState.map {
                JSONReportWire.GlobalState(
                    type: $0.type, count: $0.count, reason: ($0.globalStateReason ?? .oneTimeInitializer).rawValue,
                    allocations: table.allocations($0.allocations), retainers: $0.retainers?.map(JSONReportWire.Retainer.init),
                    releasedAfterMilliseconds: $0.releasedAfterMilliseconds)
            },
            keptByTestCase: test.keptByTestCase.map {
                JSONReportWire.KeptByTestCase(
                    type: $0.type, count: $0.count, allocations: table.allocations($0.allocations),
                    retainers: $0.retainers?.map(JSONReportWire.Retainer.init))
            },
            startedAtMilliseconds: test.startedAt, finishedAtMilliseconds: test.finishedAt)
    }
}

extension JSONReportWire.TrackedType {
    init(_ type: AuditReport.TrackedType, table: inout StackTable) {
        let budget: JSONReportWire.Budget =
            switch type.budget {
            case .code: .init(source: "code")
            case .pattern(let pattern): .init(source: "pattern", pattern: pattern.description, origin: pattern.origin)
            }
        let finding = JSONReportWire.Finding(type.exceeded ? type.status : nil)
        self.init(
            name: type.name, budget: budget, max: type.max, peakLive: type.peakLive, liveAtExit: type.liveAtExit,
            allocatedTotal: type.allocatedTotal, exceeded: type.exceeded, allocations: table.allocations(type.allocations),
            status: finding.status, suppression: finding.suppression, baselineCount: finding.baselineCount)
        retainers = type.retainers?.map(JSONReportWire.Retainer.init)
        if type.retainers != nil { retainersUnavailable = type.retainersUnavailable }
        allocationsAtExit = table.allocations(type.allocationsAtExit)
        timeline = type.timeline.map(JSONReportWire.Timeline.init)
        peakTimeMilliseconds = type.peakTime
    }
}

extension JSONReportWire.Baseline {
    init(_ comparison: AuditReport.BaselineComparison) {
        self.init(
            path: comparison.path,
            gone: comparison.gone.map { entry in
                switch entry.key {
                case .type(let type): .init(kind: "type", type: type, overBudget: entry.count)
                case .test(let test, let type): .init(kind: "test", type: type, test: test, count: entry.count)
                case .unreachable(let identity):
                    .init(kind: "unreachable", type: Baseline.shownType(ofIdentity: identity), count: entry.count, path: identity)
                }
            })
    }
}

extension JSONReportWire.Unreachable {
    init(_ unreachable: UnreachableObjects, table: inout StackTable) {
        self.init(
            objects: unreachable.objects, bytes: unreachable.bytes,
            types: unreachable.types.map {
                JSONReportWire.UnreachableType(name: $0.name, count: $0.count, bytes: $0.bytes, internal: $0.isInternal)
            },
            groups: unreachable.groups.map { group in
                let finding = JSONReportWire.Finding(group.isInternal ? nil : group.status)
                return JSONReportWire.UnreachableGroup(
                    count: group.count, objects: group.objects, bytes: group.bytes, shape: group.shape.rawValue,
                    path: group.path.map {
                        JSONReportWire.Retainer.Step(via: $0.via, type: $0.type, collectionStorage: $0.isCollectionStorage)
                    },
                    allocations: table.allocations(group.allocations), internal: group.isInternal, status: finding.status,
                    suppression: finding.suppression, baselineCount: finding.baselineCount)
            },
            processesChecked: unreachable.processesChecked, unavailable: unreachable.unavailable)
    }
}

extension JSONReportWire.Census {
    init(_ census: AuditReport.Census, table: inout StackTable) {
        self.init(
            types: census.entries.map {
                JSONReportWire.CensusEntry(
                    name: $0.name, liveAtExit: $0.liveAtExit, internal: $0.isInternal, testCase: $0.isTestCase,
                    allocations: table.allocations($0.allocations), timeline: $0.timeline.map(JSONReportWire.Timeline.init),
                    bytes: $0.bytes)
            },
            foldedTypes: census.foldedTypes, foldedInstances: census.foldedInstances,
            foldedTestCaseTypes: census.foldedTestCaseTypes, foldedTestCaseInstances: census.foldedTestCaseInstances)
    }
}

extension JSONReportWire.Frame {
    init(_ frame: SymbolizedFrame) {
        self.init(
            address: "0x" + String(frame.address, radix: 16), module: frame.module,
            moduleOffset: frame.moduleOffset.map { "0x" + String($0, radix: 16) }, function: frame.function,
            file: frame.file, line: frame.line, column: frame.column, inlined: frame.inlined ? true : nil)
    }
}

extension JSONReportWire.FrameV1 {
    init(_ frame: SymbolizedFrame) {
        let written = JSONReportWire.Frame(frame)
        self.init(
            address: written.address, module: written.module, moduleOffset: written.moduleOffset, function: written.function,
            file: written.file, line: written.line, column: written.column, inlined: frame.inlined)
    }
}

extension JSONReportWire.Frame {
    /// A schema-1 frame as schema 2 writes it, to be read as one.
    init(_ frame: JSONReportWire.FrameV1) {
        self.init(
            address: frame.address, module: frame.module, moduleOffset: frame.moduleOffset, function: frame.function,
            file: frame.file, line: frame.line, column: frame.column, inlined: frame.inlined)
    }
}

extension JSONReportWire.LeakedType {
    init(type: String, count: Int, allocations: [JSONReportWire.Allocation], finding: JSONReportWire.Finding) {
        self.init(
            type: type, count: count, allocations: allocations, status: finding.status, suppression: finding.suppression,
            baselineCount: finding.baselineCount)
    }
}
