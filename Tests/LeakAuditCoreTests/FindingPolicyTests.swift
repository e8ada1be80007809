import Foundation
import LeakAuditRendering
import XCTest

@testable import LeakAuditCore
@testable import LeakAuditModel

/// Suppressions and baselines on reports built by hand: which findings match, how the baseline
/// classifies them, that its file is stable, and how each renderer shows the result.
final class FindingPolicyTests: XCTestCase {
    private static let cwd = "/home/dev/project"

    private func frame(_ function: String, _ file: String, _ line: Int) -> SymbolizedFrame {
        SymbolizedFrame(
            address: UInt64(0x1000 + line), module: "\(Self.cwd)/.build/debug/App", moduleOffset: 0x1000,
            function: function, file: file, line: line, column: nil, inlined: false)
    }

    /// A stack allocating `type` from `caller` in `file`, at `line`.
    private func group(
        _ count: Int, type: String = "App.Cache", caller: String, file: String = "\(cwd)/Sources/App/Main.swift",
        line: Int = 10
    ) -> AuditReport.AllocationGroup {
        .init(
            count: count,
            frames: [
                frame("\(type).init() -> \(type)", "\(Self.cwd)/Sources/App/\(type).swift", 3),
                frame("\(caller) -> ()", file, line),
                frame("App_main", "\(Self.cwd)/Sources/App/main.swift", 40),
            ], truncated: false)
    }

    private func type(
        _ name: String, max: Int = 1, peak: Int, allocations: [AuditReport.AllocationGroup] = []
    ) -> AuditReport.TrackedType {
        AuditReport.TrackedType(
            name: name, max: max, peakLive: peak, liveAtExit: peak, allocatedTotal: peak, allocations: allocations)
    }

    private func report(
        _ types: [AuditReport.TrackedType], tests: [AuditReport.TestReport]? = nil,
        notAudited: AuditReport.NotAuditedReason? = nil
    ) -> AuditReport {
        var report = AuditReport(
            tool: .init(name: "leak-audit", version: "0.1.0"),
            target: .init(
                path: ".build/debug/App", arguments: [], attached: true, attachedProcesses: 1, outcome: .exited(code: 0)),
            notAudited: notAudited, types: types, droppedRecords: 0, tornRecords: 0, warnings: [])
        report.tests = tests
        return report
    }

    private func applied(
        _ report: AuditReport, suppressions: [Suppression] = [], baseline: Baseline? = nil
    ) -> AuditReport {
        var report = report
        FindingPolicy(suppressions: suppressions, baseline: baseline, workingDirectory: Self.cwd).apply(to: &report)
        return report
    }

    private func rule(_ criterion: Suppression.Criterion, reason: String? = "legacy, see #12") -> Suppression {
        Suppression(criterion, reason: reason, origin: ".leak-audit.json")
    }

    // MARK: - Matching

    func testPatternsMatchExactlyAsTheShimMatchesBudgets() {
        let cases: [(String, String, Bool)] = [
            ("App.*ViewModel", "App.LoginViewModel", true),
            ("App.*ViewModel", "App.LoginViewModel.Inner", false),
            ("App.Box<*>", "App.Box<Swift.Array<Swift.Int>>", true),
            ("App.Cache<[Swift.Int]>", "App.Cache<[Swift.Int]>", true),
            ("App.Cache<[Swift.Int]>", "App.Cache<I>", false),
            ("App.?", "App.é", true),
            ("App.?", "App.ab", false),
            ("*", "", true),
            ("", "A", false),
        ]
        for (pattern, name, expected) in cases {
            XCTAssertEqual(globMatches(pattern, name), expected, "\(pattern) ~ \(name)")
        }
    }

    func testTypeSuppressionMarksTheFindingAndDoesNotGate() {
        let result = applied(
            report([type("App.LegacyCache", peak: 3, allocations: [group(3, caller: "App.f()")])]),
            suppressions: [rule(.type("App.Legacy*"))])
        let status = result.types[0].status
        XCTAssertEqual(status, .suppressed(rule(.type("App.Legacy*"))))
        XCTAssertEqual(result.verdict, .clean)
        XCTAssertTrue(result.types[0].exceeded, "the counts are unchanged")
        XCTAssertEqual(result.warnings, [])
    }

    func testFrameSuppressionMatchesOnlyWhenEveryGroupHasAMatchingFrame() {
        let legacy = group(2, caller: "App.ImageCache.shared.getter")
        let fresh = group(1, caller: "App.NewScreen.load()")
        let rules = [rule(.function("*ImageCache.shared*"))]
        // One legacy call site: suppressed.
        XCTAssertNotNil(
            applied(report([type("App.Cache", peak: 3, allocations: [legacy])]), suppressions: rules).types[0].status.suppression)
        // A new call site of the same type: the finding fails, and the rule is not hiding it.
        let both = applied(report([type("App.Cache", peak: 4, allocations: [legacy, fresh])]), suppressions: rules)
        XCTAssertEqual(both.types[0].status, .failing)
        XCTAssertEqual(both.verdict, .budgetExceeded)
        XCTAssertEqual(both.warnings.count, 1, "the rule matched no finding: \(both.warnings)")
        // No stack at all: a frame rule cannot vouch for it.
        XCTAssertEqual(applied(report([type("App.Cache", peak: 3)]), suppressions: rules).types[0].status, .failing)
    }

    func testFunctionRulesMatchWithOrWithoutTheReturnTypeAndFileRulesAbsoluteOrRelative() {
        let found = type(
            "App.Cache", peak: 2, allocations: [group(2, caller: "App.Legacy.make()", file: "\(Self.cwd)/Vendor/Legacy.swift")])
        let matching: [Suppression.Criterion] = [
            .function("App.Legacy.make()"),  // as the text report shows it
            .function("App.Legacy.make() -> ()"),  // as JSON has it
            .file("*/Vendor/*"),
            .file("Vendor/Legacy.swift"),  // relative to the working directory
            .file("\(Self.cwd)/Vendor/*.swift"),
        ]
        for criterion in matching {
            XCTAssertNotNil(applied(report([found]), suppressions: [rule(criterion)]).types[0].status.suppression, "\(criterion)")
        }
        for criterion: Suppression.Criterion in [.function("Legacy.make()"), .file("Legacy.swift"), .type("App.Cach")] {
            XCTAssertEqual(applied(report([found]), suppressions: [rule(criterion)]).types[0].status, .failing, "\(criterion)")
        }
    }

    func testTheFirstMatchingRuleNamesTheSuppressionAndUnusedRulesWarn() {
        let rules = [rule(.type("Other.*")), rule(.type("App.*"), reason: nil), rule(.file("*/Sources/*"))]
        let result = applied(
            report([type("App.Cache", peak: 2, allocations: [group(2, caller: "App.f()")])]), suppressions: rules)
        XCTAssertEqual(result.types[0].status.suppression?.rule, "type:App.*")
        XCTAssertEqual(
            result.warnings,
            [
                "suppression 'type:Other.*' (.leak-audit.json) matched no finding; remove it if that leak is fixed",
                "suppression 'file:*/Sources/*' (.leak-audit.json) matched no finding; remove it if that leak is fixed",
            ])
    }

    func testTestLeaksAreFindingsToo() {
        let tests = [
            AuditReport.TestReport(
                name: "AppTests.CacheTests/testLoad",
                leaked: [.init(type: "App.LegacyCache", count: 2, allocations: [group(2, caller: "App.f()")])])
        ]
        let result = applied(report([], tests: tests), suppressions: [rule(.type("App.Legacy*"))])
        XCTAssertNotNil(result.tests?[0].leaked[0].status.suppression)
        XCTAssertEqual(result.verdict, .clean)
        XCTAssertEqual(report([], tests: tests).verdict, .testsLeaked, "no type over budget: the tests leaked")
    }

    // MARK: - Baseline

    /// Two types over budget (in a given order, each with its groups in a given order), one within
    /// budget, and a test's leak; `lineShift` moves every source line.
    private func legacyReport(reversed: Bool = false, lineShift: Int = 0) -> AuditReport {
        var groups = [
            group(2, caller: "App.A.open()", line: 10 + lineShift), group(1, caller: "App.B.open()", line: 20 + lineShift),
        ]
        if reversed { groups.reverse() }
        var types = [
            type("App.Cache", peak: 4, allocations: groups),
            type(
                "App.Model", max: 2, peak: 3,
                allocations: [group(3, type: "App.Model", caller: "App.C.run()", line: 5 + lineShift)]),
            type("App.Fine", peak: 1),
        ]
        if reversed { types.reverse() }
        let tests = [
            AuditReport.TestReport(name: "AppTests.T/testClean", leaked: []),
            AuditReport.TestReport(
                name: "AppTests.T/testLeaky",
                leaked: [.init(type: "App.Model", count: 3, allocations: [group(3, type: "App.Model", caller: "App.C.run()")])]),
        ]
        return report(types, tests: reversed ? tests.reversed() : tests)
    }

    func testBaselineFileIsStableUnderReorderingAndLineShifts() {
        let original = Baseline(findingsOf: legacyReport()).encoded()
        XCTAssertEqual(Baseline(findingsOf: legacyReport(reversed: true)).encoded(), original, "same findings, other order")
        XCTAssertEqual(Baseline(findingsOf: legacyReport(lineShift: 37)).encoded(), original, "unrelated code moved")
        XCTAssertFalse(original.contains("0x"), "no addresses")
        XCTAssertFalse(original.contains(".swift"), "no files or lines")
        let expected = """
            {
              "findings" : [
                {
                  "kind" : "type",
                  "overBudget" : 3,
                  "sites" : [
                    "App.A.open()",
                    "App.B.open()"
                  ],
                  "type" : "App.Cache"
                },
                {
                  "kind" : "type",
                  "overBudget" : 1,
                  "sites" : [
                    "App.C.run()"
                  ],
                  "type" : "App.Model"
                },
                {
                  "count" : 3,
                  "kind" : "test",
                  "sites" : [
                    "App.C.run()"
                  ],
                  "test" : "AppTests.T/testLeaky",
                  "type" : "App.Model"
                }
              ],
              "tool" : "leak-audit",
              "version" : 1
            }

            """
        XCTAssertEqual(original.replacingOccurrences(of: " : ", with: ": "), expected.replacingOccurrences(of: " : ", with: ": "))
    }

    func testBaselineKeysLeaveOutAddressesAndSwiftTestingSourceLocations() {
        XCTAssertEqual(
            Baseline.stableKey(.type("App.(unknown context at $5581f2a0c4e8).Local")), .type("App.(unknown context).Local"))
        XCTAssertEqual(
            Baseline.stableKey(.test(test: "M.Suite/leaks()/Suite.swift:18:6", type: "M.X")),
            .test(test: "M.Suite/leaks()", type: "M.X"))
        XCTAssertEqual(Baseline.stableKey(.test(test: "M.C/testA", type: "M.X")), .test(test: "M.C/testA", type: "M.X"))
        XCTAssertEqual(
            Baseline.stableKey(.test(test: "M.Suite/f(a:)/x:y", type: "M.X")), .test(test: "M.Suite/f(a:)/x:y", type: "M.X"))
    }

    func testNewLargerBaselinedAndGoneFindings() {
        let baseline = Baseline(entries: [
            .init(key: .type("App.Cache"), count: 3),  // today 3: baselined
            .init(key: .type("App.Model"), count: 0),  // today 1: larger
            .init(key: .type("App.Fixed"), count: 5),  // not over budget today: gone
            .init(key: .test(test: "AppTests.T/testLeaky", type: "App.Model"), count: 4),  // today 3: baselined, smaller
            .init(key: .test(test: "AppTests.T/testGone", type: "App.Model"), count: 1),  // gone
        ])
        var today = legacyReport()
        today.types.append(type("App.New", peak: 2, allocations: [group(2, caller: "App.D.run()")]))
        let result = applied(today, baseline: baseline)
        let statuses = Dictionary(uniqueKeysWithValues: result.exceededTypes.map { ($0.name, $0.status) })
        XCTAssertEqual(
            statuses,
            [
                "App.Cache": .baselined(recorded: 3), "App.Model": .largerThanBaseline(recorded: 0), "App.New": .failing,
            ])
        XCTAssertEqual(result.tests?[1].leaked[0].status, .baselined(recorded: 4))
        XCTAssertEqual(
            result.baseline?.gone.map(\.key), [.type("App.Fixed"), .test(test: "AppTests.T/testGone", type: "App.Model")])
        XCTAssertEqual(result.verdict, .budgetExceeded)
        XCTAssertEqual(result.failingTypes.map(\.name), ["App.Model", "App.New"])

        // Everything at or below the baseline: clean.
        let within = Baseline(entries: [
            .init(key: .type("App.Cache"), count: 3), .init(key: .type("App.Model"), count: 1),
            .init(key: .test(test: "AppTests.T/testLeaky", type: "App.Model"), count: 3),
        ])
        let clean = applied(legacyReport(), baseline: within)
        XCTAssertEqual(clean.verdict, .clean)
        XCTAssertEqual(clean.baseline?.gone, [])
    }

    func testTestEntriesAreComparedOnlyWhenTheRunReportsTests() {
        let baseline = Baseline(entries: [.init(key: .test(test: "AppTests.T/testLeaky", type: "App.Model"), count: 3)])
        var withoutTests = legacyReport()
        withoutTests.tests = nil
        XCTAssertEqual(applied(withoutTests, baseline: baseline).baseline?.gone, [], "not gone: tests were not audited")
        XCTAssertEqual(applied(report([], tests: []), baseline: baseline).baseline?.gone.count, 1)
    }

    func testSuppressionsComeBeforeTheBaselineAndSuppressedFindingsAreNotRecorded() {
        let baseline = Baseline(entries: [.init(key: .type("App.Cache"), count: 3)])
        let result = applied(legacyReport(), suppressions: [rule(.type("App.Cache"))], baseline: baseline)
        XCTAssertNotNil(result.types.first { $0.name == "App.Cache" }?.status.suppression)
        XCTAssertEqual(result.baseline?.gone.map(\.key), [.type("App.Cache")], "no unsuppressed finding matches it")
        XCTAssertEqual(
            Baseline(findingsOf: result).entries.map(\.key),
            [.type("App.Model"), .test(test: "AppTests.T/testLeaky", type: "App.Model")])
    }

    func testAReportThatWasNotAuditedIsLeftAlone() {
        let result = applied(
            report([], notAudited: .neverAttached), baseline: Baseline(entries: [.init(key: .type("A"), count: 1)]))
        XCTAssertNil(result.baseline, "nothing ran that could be compared")
        XCTAssertEqual(result.verdict, .notAudited)
    }

    // MARK: - Unreachable objects

    private func cycle(
        _ types: [String], count: Int, allocations: [AuditReport.AllocationGroup] = [], isInternal: Bool = false
    ) -> UnreachableObjects.Group {
        let path = [Retainer.Step(via: "", type: types[0])] + types.dropFirst().map { Retainer.Step(via: "other", type: $0) }
        return UnreachableObjects.Group(
            count: count, objects: count * (types.count - 1), bytes: 96 * count, shape: .cycle, path: path,
            allocations: allocations, isInternal: isInternal)
    }

    private func unreachableReport(_ groups: [UnreachableObjects.Group]) -> AuditReport {
        var checked = report([])
        checked.unreachable = UnreachableObjects(
            objects: groups.reduce(0) { $0 + $1.objects }, bytes: groups.reduce(0) { $0 + $1.bytes }, types: [],
            groups: groups, processesChecked: 1)
        return checked
    }

    func testUnreachableGroupsAreSuppressedByAnyTypeOnTheirPathOrByEveryStackAndBaselinedByShape() throws {
        let today = unreachableReport([
            cycle(["App.PairA", "App.PairB", "App.PairA"], count: 3),
            cycle(["App.View", "App.LegacyController", "App.View"], count: 1),
            cycle(
                ["App.Node", "App.Node"], count: 2,
                allocations: [group(2, type: "App.Node", caller: "App.Vendor.build()", file: "\(Self.cwd)/Vendor/Build.swift")]),
            cycle(["App.Parent", "App.Child", "App.Parent"], count: 4),
            cycle(["Foundation.NSTimer", "Foundation.NSTimer"], count: 9, isInternal: true),
        ])
        XCTAssertEqual(today.verdict, .unreachableObjects)
        let baseline = Baseline(entries: [
            .init(key: .unreachable("cycle App.Parent.other → App.Child.other → App.Parent"), count: 4),
            .init(key: .unreachable("cycle App.PairA.other → App.PairB.other → App.PairA"), count: 1),
            .init(key: .unreachable("overRetained App.Fixed"), count: 1),
            .init(key: .type("App.Cache"), count: 1),
        ])
        let result = applied(
            today, suppressions: [rule(.type("App.Legacy*")), rule(.file("Vendor/*")), rule(.function("*Nothing*"))],
            baseline: baseline)
        let statuses = try XCTUnwrap(result.unreachable?.groups.map(\.status))
        XCTAssertEqual(statuses[0], .largerThanBaseline(recorded: 1))
        XCTAssertEqual(statuses[1].suppression?.rule, "type:App.Legacy*", "a type rule matches any type on the path")
        XCTAssertEqual(statuses[2].suppression?.rule, "file:Vendor/*", "a file rule matches every allocation stack")
        XCTAssertEqual(statuses[3], .baselined(recorded: 4))
        XCTAssertEqual(statuses[4], .failing, "internal groups are never judged")
        XCTAssertEqual(result.verdict, .unreachableObjects, "the group larger than the baseline fails")
        XCTAssertEqual(result.unreachable?.failingGroups.count, 1)
        XCTAssertEqual(
            result.baseline?.gone.map(\.key), [.type("App.Cache"), .unreachable("overRetained App.Fixed")],
            "gone: what no group matched")
        XCTAssertTrue(result.warnings.contains { $0.contains("'function:*Nothing*'") })

        // The baseline written from this run records the unsuppressed groups by shape, and reads back.
        let written = Baseline(findingsOf: result)
        XCTAssertEqual(
            written.entries.map { "\($0.key) \($0.count)" },
            [
                "unreachable cycle App.PairA.other → App.PairB.other → App.PairA 3",
                "unreachable cycle App.Parent.other → App.Child.other → App.Parent 4",
            ])
        let path = try temporaryFile(written.encoded())
        XCTAssertTrue(written.encoded().contains(#""kind" : "unreachable""#), written.encoded())
        XCTAssertTrue(written.encoded().contains(#""type" : "App.PairA""#), written.encoded())
        XCTAssertEqual(try Baseline.load(path: path).entries, written.entries)
        let ratcheted = applied(today, suppressions: [rule(.type("App.Legacy*")), rule(.file("Vendor/*"))], baseline: written)
        XCTAssertEqual(ratcheted.verdict, .clean, "everything unreachable is now within the baseline")

        // Not checked in this run: its unreachable entries are not gone.
        XCTAssertEqual(applied(report([]), baseline: baseline).baseline?.gone.map(\.key), [.type("App.Cache")])
        XCTAssertThrowsError(
            try Baseline.load(
                path: try temporaryFile(#"{"version": 1, "findings": [{"kind": "unreachable", "type": "A", "count": 1}]}"#))
        ) { error in
            XCTAssertTrue("\(error)".contains(#"findings[0] has no "path""#), "\(error)")
        }
    }

    // MARK: - The baseline file

    private func temporaryFile(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("baseline-\(UUID().uuidString).json").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    func testBaselineRoundTripsThroughItsFile() throws {
        let written = Baseline(findingsOf: legacyReport())
        let path = try temporaryFile(written.encoded())
        let read = try Baseline.load(path: path)
        XCTAssertEqual(read.entries, written.entries)
        XCTAssertEqual(read.path, path)
        XCTAssertEqual(read.encoded(), written.encoded())
        // Hand-written, in any order, without sites or tool, with keys this version does not know.
        let hand = try Baseline.load(
            path: try temporaryFile(
                #"{"version": 1, "future": true, "findings": [{"kind": "test", "test": "M.C/t", "type": "M.X", "count": 2}, {"kind": "type", "type": "M.X", "overBudget": 1}]}"#
            ))
        XCTAssertEqual(hand.entries.map(\.key), [.type("M.X"), .test(test: "M.C/t", type: "M.X")])
    }

    func testBadBaselinesAreRefusedWithTheFileAndTheProblem() throws {
        let cases: [(String, String)] = [
            (#"{"version": 2, "findings": []}"#, "has version 2; this leak-audit reads version 1"),
            (#"{"findings": []}"#, #"missing "version""#),
            (#"{"version": 1}"#, #"missing "findings""#),
            (#"{"version": 1, "findings": [{"kind": "type", "type": "A"}]}"#, #"findings[0] has no "overBudget""#),
            (#"{"version": 1, "findings": [{"kind": "test", "type": "A", "count": 1}]}"#, #"findings[0] has no "test""#),
            (#"{"version": 1, "findings": [{"kind": "site", "type": "A"}]}"#, "has kind 'site'"),
            (#"{"version": 1, "findings": [{"kind": "type", "type": "A", "overBudget": -1}]}"#, "negative count"),
            (
                #"{"version": 1, "findings": [{"kind": "type", "type": "A", "overBudget": 1}, {"kind": "type", "type": "A", "overBudget": 2}]}"#,
                "findings[1] repeats A"
            ),
            (
                #"{"version": 1, "findings": [{"kind": "type", "type": 3, "overBudget": 1}]}"#,
                "wrong type at \"findings.[0].type\""
            ),
            (#"{"version": 1, "tool": "other", "findings": []}"#, "written by 'other'"),
            ("not json", "not valid JSON"),
        ]
        for (text, expected) in cases {
            let path = try temporaryFile(text)
            XCTAssertThrowsError(try Baseline.load(path: path), text) { error in
                let message = "\(error)"
                XCTAssertTrue(message.contains("'\(path)'") && message.contains(expected), "\(text): \(message)")
                XCTAssertFalse(message.contains("\n"))
            }
        }
        XCTAssertThrowsError(try Baseline.load(path: "/nonexistent/baseline.json")) { error in
            XCTAssertEqual(
                "\(error)",
                "cannot read baseline '/nonexistent/baseline.json': no such file or directory; write one with --write-baseline")
        }
    }

    // MARK: - Configuration

    func testConfigurationReadsSuppressions() throws {
        let path = try temporaryFile(
            #"""
            {"version": 1, "suppressions": [
              {"type": "App.Legacy*", "reason": "tracked in #12"},
              {"function": "*ImageCache.shared*"},
              {"file": "*/Vendor/*", "reason": "not ours"}]}
            """#)
        let configuration = try ConfigurationFile.load(path: path)
        XCTAssertEqual(
            configuration.suppressions,
            [
                Suppression(.type("App.Legacy*"), reason: "tracked in #12", origin: path),
                Suppression(.function("*ImageCache.shared*"), origin: path),
                Suppression(.file("*/Vendor/*"), reason: "not ours", origin: path),
            ])
        for text in [
            #"{"version": 1, "suppressions": [{"type": "A", "file": "B"}]}"#,
            #"{"version": 1, "suppressions": [{"reason": "why"}]}"#,
            #"{"version": 1, "suppressions": [{"type": ""}]}"#,
        ] {
            XCTAssertThrowsError(try ConfigurationFile.load(path: try temporaryFile(text)), text) { error in
                XCTAssertTrue("\(error)".contains("suppressions[0]"), "\(error)")
            }
        }
    }

    // MARK: - Rendering

    /// A report with one finding of each status, one baseline entry gone, and a test's leak.
    private func mixedReport() -> AuditReport {
        var today = report(
            [
                type("App.LegacyCache", peak: 3, allocations: [group(3, type: "App.LegacyCache", caller: "App.f()")]),
                type("App.Cache", peak: 4, allocations: [group(3, caller: "App.A.open()")]),
                type("App.Model", max: 2, peak: 6, allocations: [group(4, type: "App.Model", caller: "App.C.run()")]),
                type("App.New", peak: 2, allocations: [group(2, type: "App.New", caller: "App.D.run()")]),
            ],
            tests: [
                .init(
                    name: "AppTests.T/testLeaky",
                    leaked: [
                        .init(type: "App.Model", count: 2, allocations: [group(2, type: "App.Model", caller: "App.C.run()")])
                    ])
            ])
        today = applied(
            today, suppressions: [rule(.type("App.Legacy*"))],
            baseline: Baseline(
                entries: [
                    .init(key: .type("App.Cache"), count: 5), .init(key: .type("App.Model"), count: 1),
                    .init(key: .type("App.Fixed"), count: 2),
                    .init(key: .test(test: "AppTests.T/testLeaky", type: "App.Model"), count: 2),
                ], path: "leaks.baseline.json"))
        return today
    }

    func testTextShowsSuppressedBaselinedAndGoneSections() {
        let text = TextReportRenderer(workingDirectory: Self.cwd).render(mixedReport())
        XCTAssertTrue(text.contains("EXCEEDED App.Model: max 2, peak 6"), text)
        XCTAssertTrue(text.contains("  larger than the baseline 'leaks.baseline.json', which records 1 over budget"), text)
        XCTAssertTrue(text.contains("EXCEEDED App.New: max 1, peak 2"), text)
        XCTAssertTrue(text.contains("  new: not in the baseline 'leaks.baseline.json'"), text)
        XCTAssertFalse(text.contains("EXCEEDED App.LegacyCache"), "suppressed: not a failure block")
        XCTAssertFalse(text.contains("EXCEEDED App.Cache:"), "baselined: not a failure block")
        XCTAssertTrue(
            text.contains(
                """
                suppressed (reported, not failing; --format json lists their stacks):
                  SUPPRESSED App.LegacyCache: max 1, peak 3, alive at exit 3 (2 over budget)
                    by type:App.Legacy* (.leak-audit.json): legacy, see #12
                """), text)
        XCTAssertTrue(
            text.contains(
                """
                baselined (in the baseline 'leaks.baseline.json', not failing; --format json lists their stacks):
                  BASELINED App.Cache: max 1, peak 4, alive at exit 4 (3 over budget, the baseline records 5: fewer now, write the baseline again to keep it so)
                  BASELINED AppTests.T/testLeaky: 2 App.Model alive after the test (the baseline records 2)
                """), text)
        XCTAssertTrue(
            text.contains(
                """
                gone from the baseline 'leaks.baseline.json' (fixed; write it again with --write-baseline so they stay fixed):
                  GONE App.Fixed (the baseline records 2 over budget)
                """), text)
        XCTAssertTrue(
            text.hasSuffix(
                "leak-audit: 2 of 4 tracked types over budget (1 suppressed, 2 baselined, 1 gone from the baseline); '.build/debug/App' exited with code 0\n"
            ), text)
        XCTAssertFalse(text.contains("LEAKED"), "the test's only leak is baselined")
    }

    func testTextSummaryOfACleanRunWithSuppressions() {
        let result = applied(
            report([type("App.LegacyCache", peak: 3, allocations: [group(3, caller: "App.f()")]), type("App.Fine", peak: 1)]),
            suppressions: [rule(.type("App.Legacy*"))])
        let text = TextReportRenderer(workingDirectory: Self.cwd).render(result)
        XCTAssertTrue(
            text.hasSuffix("leak-audit: nothing failing (2 tracked; 1 suppressed); '.build/debug/App' exited with code 0\n"), text
        )
    }

    func testJSONCarriesEachFindingsStatusAndTheBaseline() throws {
        let data = Data(JSONReportRenderer().render(mixedReport()).utf8)
        let root = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let types = try XCTUnwrap(root["types"] as? [[String: Any]])
        let byName = Dictionary(uniqueKeysWithValues: types.map { ($0["name"] as? String ?? "", $0) })
        XCTAssertEqual(byName["App.LegacyCache"]?["status"] as? String, "suppressed")
        XCTAssertEqual(
            byName["App.LegacyCache"]?["suppression"] as? [String: String],
            [
                "rule": "type:App.Legacy*", "kind": "type", "pattern": "App.Legacy*", "reason": "legacy, see #12",
                "origin": ".leak-audit.json",
            ])
        XCTAssertEqual(byName["App.Cache"]?["status"] as? String, "baselined")
        XCTAssertEqual(byName["App.Cache"]?["baselineCount"] as? Int, 5)
        XCTAssertEqual(byName["App.Model"]?["status"] as? String, "largerThanBaseline")
        XCTAssertEqual(byName["App.New"]?["status"] as? String, "failing")
        XCTAssertTrue(byName["App.New"]?["baselineCount"] is NSNull)
        let summary = try XCTUnwrap(root["summary"] as? [String: Any])
        XCTAssertEqual(summary["findings"] as? [String: Int], ["failing": 2, "suppressed": 1, "baselined": 2])
        XCTAssertEqual(summary["exceededTypes"] as? Int, 4, "every type over budget")
        XCTAssertEqual(summary["verdict"] as? String, "budgetExceeded")
        let baseline = try XCTUnwrap(root["baseline"] as? [String: Any])
        XCTAssertEqual(baseline["path"] as? String, "leaks.baseline.json")
        let gone = try XCTUnwrap(baseline["gone"] as? [[String: Any]])
        XCTAssertEqual(gone.count, 1)
        XCTAssertEqual(Set(gone[0].keys), ["kind", "type", "overBudget"])
        XCTAssertEqual(gone[0]["type"] as? String, "App.Fixed")
        XCTAssertEqual(gone[0]["overBudget"] as? Int, 2)
        let leaked = try XCTUnwrap(((root["tests"] as? [[String: Any]])?.first?["leaked"] as? [[String: Any]])?.first)
        XCTAssertEqual(leaked["status"] as? String, "baselined")
    }

    func testSARIFJUnitAndGitHubMarkSuppressedAndBaselinedFindings() throws {
        let report = mixedReport()
        let sarif = try XCTUnwrap(
            try JSONSerialization.jsonObject(with: Data(SARIFReportRenderer(workingDirectory: Self.cwd).render(report).utf8))
                as? [String: Any])
        let run = try XCTUnwrap((sarif["runs"] as? [[String: Any]])?.first)
        let results = try XCTUnwrap(run["results"] as? [[String: Any]])
        let byType = Dictionary(
            results.map { (($0["properties"] as? [String: Any])?["typeName"] as? String ?? "", $0) }
        ) { first, _ in first }
        XCTAssertEqual(
            byType["App.LegacyCache"]?["suppressions"] as? [[String: String]],
            [["kind": "external", "justification": "legacy, see #12 (type:App.Legacy*, .leak-audit.json)"]])
        XCTAssertNil(byType["App.New"]?["suppressions"])
        XCTAssertEqual(byType["App.New"]?["baselineState"] as? String, "new")
        XCTAssertEqual(byType["App.Model"]?["baselineState"] as? String, "updated")
        XCTAssertEqual(byType["App.Cache"]?["baselineState"] as? String, "unchanged")
        XCTAssertEqual(byType["App.Cache"]?["level"] as? String, "note")
        XCTAssertEqual((run["properties"] as? [String: Any])?["goneFromBaseline"] as? [String], ["App.Fixed"])

        let junit = JUnitReportRenderer(workingDirectory: Self.cwd).render(report)
        XCTAssertTrue(
            junit.contains(
                #"<skipped message="suppressed by type:App.Legacy* (.leak-audit.json): legacy, see #12: max 1, peak 3, alive at exit 3 (2 over budget)"/>"#
            ),
            junit)
        XCTAssertTrue(junit.contains(#"<skipped message="baselined (the baseline records 5): max 1, peak 4"#), junit)
        XCTAssertTrue(junit.contains(#"tests="4" failures="2" errors="0" skipped="2""#), junit)
        XCTAssertTrue(junit.contains("gone from the baseline 'leaks.baseline.json': App.Fixed (it records 2)"), junit)

        let github = GitHubActionsReportRenderer(workingDirectory: Self.cwd).render(report).split(separator: "\n")
        XCTAssertEqual(github.filter { $0.hasPrefix("::error") }.count, 2, "\(github)")
        XCTAssertTrue(
            github.contains {
                $0.hasPrefix("::notice") && $0.contains("App.LegacyCache over budget (suppressed by type%3AApp.Legacy*")
            })
        XCTAssertTrue(github.contains { $0.hasPrefix("::notice") && $0.contains("App.Cache over budget (baselined)") })
        XCTAssertTrue(github.contains { $0.contains("gone from the baseline") && $0.contains("App.Fixed") })
    }
}
