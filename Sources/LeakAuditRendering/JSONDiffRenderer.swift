import LeakAuditModel
import LeakAuditPresentation

/// A comparison of two reports for tools: JSON of diff schema version 1, described by
/// docs/diff-schema.json.
public struct JSONDiffRenderer: ReportDiffRenderer {
    /// The diff schema version this renderer writes.
    public static let diffSchemaVersion = 1

    /// Creates the renderer.
    public init() {}

    /// Renders the comparison as pretty-printed JSON with sorted keys.
    public func render(_ diff: ReportDiff) -> String {
        stableJSON(JSONDiffV1(diff), what: "the JSON comparison")
    }
}

/// The comparison's wire form, version 1: separate from `ReportDiff` so that the model can change
/// without changing the format. Missing values are written as null, never omitted.
struct JSONDiffV1: Encodable {
    struct Tool: Encodable {
        var name = "leak-audit"
        var version = leakAuditVersion
    }
    struct Side: Encodable {
        var path: String
        var target: String
        var exit: Exit
        var verdict: String
        @ExplicitNull var notAuditedReason: String?
        var incomplete: Bool
        var toolVersion: String
    }
    struct Exit: Encodable {
        var code: Int32?
        var signal: Int32?
        /// true for a process inspected while it ran (`leak-audit inspect`).
        var running: Bool?
    }
    struct Counts: Encodable {
        var max: Int
        var peakLive: Int
        var liveAtExit: Int
        var overBudget: Int
    }
    struct Delta: Encodable {
        var peakLive: Int
        var liveAtExit: Int
        var overBudget: Int
    }
    struct TypeChange: Encodable {
        var name: String
        var change: String
        var fails: Bool
        var status: String
        @ExplicitNull var old: Counts?
        @ExplicitNull var new: Counts?
        var delta: Delta
    }
    struct TestLeakChange: Encodable {
        var test: String
        var type: String
        var change: String
        var fails: Bool
        var status: String
        var old: Int
        var new: Int
        var delta: Int
    }
    struct CensusChange: Encodable {
        var type: String
        var change: String
        var old: Int
        var new: Int
        var delta: Int
        /// Only when both censuses have bytes (reports of `leak-audit inspect`): absent otherwise.
        var oldBytes: Int? = nil
        var newBytes: Int? = nil
        var bytesDelta: Int? = nil
    }
    struct Step: Encodable {
        var via: String
        var type: String
    }
    struct UnreachableCounts: Encodable {
        var count: Int
        var objects: Int
        var bytes: Int
    }
    struct UnreachableChange: Encodable {
        var identity: String
        var shape: String
        var path: [Step]
        var change: String
        var fails: Bool
        var status: String
        @ExplicitNull var old: UnreachableCounts?
        @ExplicitNull var new: UnreachableCounts?
        var delta: UnreachableCounts
    }
    struct Summary: Encodable {
        var verdict: String
        var failing: Int
        var appeared: Int
        var grew: Int
        var shrank: Int
        var unchanged: Int
        var disappeared: Int
    }

    var diffSchemaVersion = JSONDiffRenderer.diffSchemaVersion
    var tool = Tool()
    var old: Side
    var new: Side
    var summary: Summary
    var types: [TypeChange]
    @ExplicitNull var tests: [TestLeakChange]?
    @ExplicitNull var census: [CensusChange]?
    /// Null unless both runs checked for unreachable objects.
    @ExplicitNull var unreachable: [UnreachableChange]?
    var notes: [String]

    init(_ diff: ReportDiff) {
        func side(_ side: ReportDiff.Side) -> Side {
            let exit: Exit =
                switch side.outcome {
                case .exited(let code): Exit(code: code)
                case .signaled(let signal): Exit(signal: signal)
                case .running: Exit(running: true)
                }
            return Side(
                path: side.path, target: side.target, exit: exit, verdict: side.verdict.name,
                notAuditedReason: side.notAudited?.name, incomplete: side.incomplete, toolVersion: side.toolVersion)
        }
        func counts(_ counts: ReportDiff.TypeCounts?) -> Counts? {
            counts.map { Counts(max: $0.max, peakLive: $0.peakLive, liveAtExit: $0.liveAtExit, overBudget: $0.overBudget) }
        }
        old = side(diff.old)
        new = side(diff.new)
        let verdict =
            switch diff.verdict {
            case .noGrowth: "noGrowth"
            case .grew: "grew"
            case .notComparable: "notComparable"
            }
        summary = Summary(
            verdict: verdict, failing: diff.failingFindings, appeared: diff.findings(.appeared), grew: diff.findings(.grew),
            shrank: diff.findings(.shrank), unchanged: diff.findings(.unchanged), disappeared: diff.findings(.disappeared))
        types = diff.types.map { type in
            // A run that did not track the type had none of it.
            let (was, now) = (type.old, type.new)
            return TypeChange(
                name: type.name, change: type.change.rawValue, fails: type.fails, status: type.status.name, old: counts(was),
                new: counts(now),
                delta: Delta(
                    peakLive: (now?.peakLive ?? 0) - (was?.peakLive ?? 0),
                    liveAtExit: (now?.liveAtExit ?? 0) - (was?.liveAtExit ?? 0),
                    overBudget: (now?.overBudget ?? 0) - (was?.overBudget ?? 0)))
        }
        tests = diff.testLeaks.map { leaks in
            leaks.map {
                TestLeakChange(
                    test: $0.test, type: $0.type, change: $0.change.rawValue, fails: $0.fails, status: $0.status.name,
                    old: $0.old, new: $0.new, delta: $0.new - $0.old)
            }
        }
        census = diff.census.map { entries in
            entries.map {
                CensusChange(
                    type: $0.type, change: $0.change.rawValue, old: $0.old, new: $0.new, delta: $0.new - $0.old,
                    oldBytes: $0.bytes?.old, newBytes: $0.bytes?.new, bytesDelta: $0.bytes.map { $0.new - $0.old })
            }
        }
        unreachable = diff.unreachable.map { groups in
            groups.map { group in
                let counts = { (counts: ReportDiff.UnreachableCounts?) in
                    counts.map { UnreachableCounts(count: $0.count, objects: $0.objects, bytes: $0.bytes) }
                }
                let (was, now) = (group.old, group.new)
                return UnreachableChange(
                    identity: group.identity, shape: group.shape.rawValue,
                    path: group.path.map { Step(via: $0.via, type: $0.type) }, change: group.change.rawValue,
                    fails: group.fails, status: group.status.name, old: counts(was), new: counts(now),
                    delta: UnreachableCounts(
                        count: (now?.count ?? 0) - (was?.count ?? 0), objects: (now?.objects ?? 0) - (was?.objects ?? 0),
                        bytes: (now?.bytes ?? 0) - (was?.bytes ?? 0)))
            }
        }
        notes = diff.notes.map(ReportPhrases.note)
    }
}
