import Foundation
import XCTest

@testable import LeakAuditModel
@testable import LeakAuditRendering

/// `leak-audit report --diff`: what appeared, grew, shrank, stayed and disappeared between two
/// reports, its verdict, and its text and JSON.
final class ReportDiffTests: XCTestCase {
    private func type(
        _ name: String, max: Int = 1, peak: Int, atExit: Int, status: FindingStatus = .failing
    ) -> AuditReport.TrackedType {
        AuditReport.TrackedType(
            name: name, max: max, peakLive: peak, liveAtExit: atExit, allocatedTotal: peak, allocations: [], status: status)
    }

    private func report(
        _ types: [AuditReport.TrackedType], tests: [AuditReport.TestReport]? = nil, census: [(String, Int)]? = nil,
        notAudited: AuditReport.NotAuditedReason? = nil, path: String = ".build/debug/App"
    ) -> AuditReport {
        var report = AuditReport(
            tool: .init(name: "leak-audit", version: "0.1.0"),
            target: .init(path: path, arguments: [], attached: true, attachedProcesses: 1, outcome: .exited(code: 0)),
            notAudited: notAudited, types: types, tests: tests, droppedRecords: 0, tornRecords: 0, warnings: [])
        report.census = census.map { entries in
            .init(
                entries: entries.map { .init(name: $0.0, liveAtExit: $0.1, isInternal: false, allocations: []) }, foldedTypes: 0,
                foldedInstances: 0)
        }
        return report
    }

    private func leak(_ test: String, _ type: String, _ count: Int, status: FindingStatus = .failing) -> AuditReport.TestReport {
        .init(name: test, leaked: [.init(type: type, count: count, allocations: [], status: status)])
    }

    /// One type for each change, one within budget in both (not listed), and one whose name
    /// differs only by a local type's address (matched).
    private var old: AuditReport {
        report([
            type("App.Grew", peak: 3, atExit: 2), type("App.Shrank", peak: 5, atExit: 5), type("App.Same", peak: 2, atExit: 2),
            type("App.Fixed", peak: 4, atExit: 4), type("App.Appeared", peak: 1, atExit: 0),
            type("App.Within", max: 5, peak: 1, atExit: 0),
            type("App.(unknown context at $55d7f1c0b9dc).Node", peak: 2, atExit: 2),
        ])
    }

    private var new: AuditReport {
        report([
            type("App.Grew", peak: 3, atExit: 3), type("App.Shrank", peak: 4, atExit: 1), type("App.Same", peak: 2, atExit: 2),
            type("App.Appeared", peak: 3, atExit: 3), type("App.Within", max: 5, peak: 4, atExit: 4),
            type("App.Untracked", peak: 2, atExit: 0),
            type("App.(unknown context at $7f0a12345678).Node", peak: 3, atExit: 2),
        ])
    }

    func testEachTypeOverBudgetIsClassified() {
        let diff = ReportDiff(old: old, oldPath: "old.json", new: new, newPath: "new.json")
        let changes = diff.types.map { "\($0.change.rawValue) \($0.name)" }
        XCTAssertEqual(
            changes,
            [
                "appeared App.Appeared", "appeared App.Untracked", "grew App.(unknown context at $7f0a12345678).Node",
                "grew App.Grew",
                "shrank App.Shrank", "unchanged App.Same", "disappeared App.Fixed",
            ])
        let grew = diff.types.first { $0.name == "App.Grew" }
        XCTAssertEqual(grew?.old, ReportDiff.TypeCounts(max: 1, peakLive: 3, liveAtExit: 2, overBudget: 2))
        XCTAssertEqual(grew?.new, ReportDiff.TypeCounts(max: 1, peakLive: 3, liveAtExit: 3, overBudget: 2))
        XCTAssertNil(diff.types.first { $0.name == "App.Untracked" }?.old, "not tracked in the old run")
        XCTAssertNil(diff.types.first { $0.name == "App.Fixed" }?.new, "not tracked in the new run")
        XCTAssertEqual(diff.verdict, .grew)
        XCTAssertEqual(diff.failingFindings, 4)
        XCTAssertEqual(ReportDiff.Change.allCases.map(diff.findings), [2, 2, 1, 1, 1])
    }

    func testNothingGrewWhenOnlyShrinkingAndFixing() {
        let before = report([type("App.A", peak: 5, atExit: 5), type("App.B", peak: 2, atExit: 2)])
        let after = report([type("App.A", peak: 3, atExit: 0), type("App.B", peak: 2, atExit: 2)])
        let diff = ReportDiff(old: before, oldPath: "old.json", new: after, newPath: "new.json")
        XCTAssertEqual(diff.types.map(\.change), [.shrank, .unchanged])
        XCTAssertEqual(diff.verdict, .noGrowth)
        let same = ReportDiff(old: before, oldPath: "a.json", new: before, newPath: "a.json")
        XCTAssertEqual(same.types.map(\.change), [.unchanged, .unchanged])
        XCTAssertEqual(same.verdict, .noGrowth)
        XCTAssertTrue(ReportDiff(old: report([]), oldPath: "a", new: report([]), newPath: "b").types.isEmpty)
    }

    func testGrowthThatDoesNotFailTheNewRunFailsNoComparison() {
        let suppression = Suppression(.type("App.*"), origin: ".leak-audit.json")
        let before = report([type("App.A", peak: 2, atExit: 2)])
        let after = report([
            type("App.A", peak: 4, atExit: 4, status: .baselined(recorded: 5)),
            type("App.B", peak: 2, atExit: 2, status: .suppressed(suppression)),
        ])
        let diff = ReportDiff(old: before, oldPath: "old.json", new: after, newPath: "new.json")
        XCTAssertEqual(diff.types.map(\.change), [.appeared, .grew])
        XCTAssertEqual(diff.types.map(\.fails), [false, false])
        XCTAssertEqual(diff.verdict, .noGrowth)
        let text = TextDiffRenderer().render(diff)
        XCTAssertTrue(
            text.contains(
                "  APPEARED App.B: max 1, peak 2, alive at exit 2, over budget 1, not tracked in the old run (suppressed)\n"),
            text)
        XCTAssertTrue(
            text.hasSuffix("leak-audit: no finding that fails the new run appeared or grew (1 appeared, 1 grew)\n"), text)
    }

    func testTestsLeaksAreComparedWhenBothRunsHaveThem() {
        let before = report([], tests: [leak("T/a", "App.X", 1), leak("T/b", "App.X", 2), leak("T/c", "App.Y", 1)])
        let after = report(
            [],
            tests: [
                leak("T/a", "App.X", 3), leak("T/b", "App.X", 1), leak("T/d", "App.Z", 1),
                // The source location that ends a Swift Testing test's ID is no part of its name.
                leak("AppTests/swiftTest()/AppTests.swift:12:3", "App.X", 1),
            ])
        var beforeWithSwiftTest = before
        beforeWithSwiftTest.tests?.append(leak("AppTests/swiftTest()/AppTests.swift:10:3", "App.X", 1))
        let diff = ReportDiff(old: beforeWithSwiftTest, oldPath: "old.json", new: after, newPath: "new.json")
        XCTAssertEqual(
            diff.testLeaks?.map { "\($0.change.rawValue) \($0.test) \($0.type) \($0.old)→\($0.new)" },
            [
                "appeared T/d App.Z 0→1", "grew T/a App.X 1→3", "shrank T/b App.X 2→1",
                "unchanged AppTests/swiftTest()/AppTests.swift:12:3 App.X 1→1", "disappeared T/c App.Y 1→0",
            ])
        XCTAssertEqual(diff.verdict, .grew)
        let onlyNew = ReportDiff(old: report([]), oldPath: "old.json", new: after, newPath: "new.json")
        XCTAssertNil(onlyNew.testLeaks)
        XCTAssertEqual(onlyNew.notes, [.testsInOneRun(old: false)])
        XCTAssertEqual(onlyNew.verdict, .noGrowth, "leaks of a run the old one could not have seen fail nothing")
    }

    func testTheCensusIsComparedAndFailsNothing() {
        let before = report([], census: [("App.Node", 10), ("App.Gone", 1), ("App.Same", 2)])
        let after = report([], census: [("App.Node", 30), ("App.New", 4), ("App.Same", 2)])
        let diff = ReportDiff(old: before, oldPath: "old.json", new: after, newPath: "new.json")
        XCTAssertEqual(
            diff.census?.map { "\($0.change.rawValue) \($0.type) \($0.old)→\($0.new)" },
            ["appeared App.New 0→4", "grew App.Node 10→30", "unchanged App.Same 2→2", "disappeared App.Gone 1→0"])
        XCTAssertEqual(diff.verdict, .noGrowth)
        XCTAssertEqual(ReportDiff.Change.allCases.map(diff.findings), [0, 0, 0, 0, 0], "the census holds no finding")
    }

    /// Two reports of `leak-audit inspect`: their censuses have bytes, and a type whose bytes grew
    /// with the same count grew (a cache whose entries got larger); text and JSON carry both.
    func testTwoInspectedCensusesCompareCountsAndBytes() throws {
        func inspected(_ entries: [(String, Int, Int)]) -> AuditReport {
            var inspected = report([], census: entries.map { ($0.0, $0.1) })
            inspected.target.outcome = .running
            inspected.target.kind = .inspectedProcess
            for index in entries.indices { inspected.census?.entries[index].bytes = entries[index].2 }
            return inspected
        }
        let before = inspected([("App.Request", 10, 400), ("App.Cache", 1, 1_000), ("App.Entry", 50, 2_000)])
        let after = inspected([("App.Request", 20, 800), ("App.Cache", 1, 3_000), ("App.Entry", 50, 2_000)])
        let diff = ReportDiff(old: before, oldPath: "old.json", new: after, newPath: "new.json")
        XCTAssertEqual(
            diff.census?.map {
                "\($0.change.rawValue) \($0.type) \($0.old)→\($0.new) \($0.bytes.map { "\($0.old)→\($0.new)" } ?? "-")"
            },
            ["grew App.Cache 1→1 1000→3000", "grew App.Request 10→20 400→800", "unchanged App.Entry 50→50 2000→2000"])
        XCTAssertEqual(diff.verdict, .noGrowth, "the census fails nothing")
        let text = TextDiffRenderer().render(diff)
        XCTAssertTrue(text.contains("census (alive when inspected; informs, fails nothing):"), text)
        XCTAssertTrue(text.contains("  GREW App.Cache: 1, 1 KB → 3 KB (+2 KB)"), text)
        let json = try XCTUnwrap(
            JSONSerialization.jsonObject(with: Data(JSONDiffRenderer().render(diff).utf8)) as? [String: Any])
        let census = try XCTUnwrap(json["census"] as? [[String: Any]])
        XCTAssertEqual(census.first?["bytesDelta"] as? Int, 2_000)
        // A run's census has no bytes: none compared, none written.
        let runs = ReportDiff(
            old: report([], census: [("App.Node", 1)]), oldPath: "a", new: report([], census: [("App.Node", 1)]), newPath: "b")
        XCTAssertNil(runs.census?.first?.bytes)
        XCTAssertFalse(JSONDiffRenderer().render(runs).contains("bytesDelta"))
    }

    func testARunThatWasNotAuditedIsNotCompared() {
        let diff = ReportDiff(
            old: old, oldPath: "old.json", new: report([], notAudited: .neverAttached, path: "./Other"), newPath: "new.json")
        XCTAssertEqual(diff.verdict, .notComparable)
        XCTAssertTrue(diff.types.isEmpty)
        XCTAssertEqual(
            diff.notes,
            [.notAudited(old: false, reason: .neverAttached), .differentTargets(old: ".build/debug/App", new: "./Other")])
        let text = TextDiffRenderer().render(diff)
        XCTAssertTrue(text.contains("note: the new run could not be audited (neverAttached), so there is nothing to compare\n"))
        XCTAssertTrue(text.hasSuffix("leak-audit: not compared: a run could not be audited\n"), text)
    }

    func testTheTextSaysEachChangeWithOldNewAndDelta() {
        let diff = ReportDiff(old: old, oldPath: "old.json", new: new, newPath: "new.json")
        XCTAssertEqual(
            TextDiffRenderer().render(diff),
            """
            leak-audit diff: 'old.json' → 'new.json'
              old: '.build/debug/App' exited with code 0 (budgetExceeded)
              new: '.build/debug/App' exited with code 0 (budgetExceeded)

            types over budget:
              APPEARED App.Appeared: max 1, peak 1 → 3 (+2), alive at exit 0 → 3 (+3), over budget 0 → 2 (+2)
              APPEARED App.Untracked: max 1, peak 2, alive at exit 0, over budget 1, not tracked in the old run
              GREW App.(unknown context at $7f0a12345678).Node: max 1, peak 2 → 3 (+1), alive at exit 2, over budget 1 → 2 (+1)
              GREW App.Grew: max 1, peak 3, alive at exit 2 → 3 (+1), over budget 2
              SHRANK App.Shrank: max 1, peak 5 → 4 (-1), alive at exit 5 → 1 (-4), over budget 4 → 3 (-1)
              UNCHANGED App.Same: max 1, peak 2, alive at exit 2, over budget 1
              DISAPPEARED App.Fixed: max 1, peak 4, alive at exit 4, over budget 3, not tracked in the new run

            leak-audit: 4 findings appeared or grew and fail the new run (2 appeared, 2 grew, 1 shrank, 1 unchanged, 1 disappeared)

            """)
    }

    func testTheJSONCarriesEveryChangeWithItsDelta() throws {
        var before = old
        before.tests = [leak("T/a", "App.X", 1)]
        before.census = .init(
            entries: [.init(name: "App.Node", liveAtExit: 10, isInternal: false, allocations: [])], foldedTypes: 0,
            foldedInstances: 0)
        var after = new
        after.tests = [leak("T/a", "App.X", 3)]
        after.census = .init(entries: [], foldedTypes: 0, foldedInstances: 0)
        let diff = ReportDiff(old: before, oldPath: "old.json", new: after, newPath: "new.json")
        let json = JSONDiffRenderer().render(diff)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        XCTAssertEqual(object["diffSchemaVersion"] as? Int, 1)
        XCTAssertEqual((object["old"] as? [String: Any])?["path"] as? String, "old.json")
        XCTAssertEqual((object["new"] as? [String: Any])?["verdict"] as? String, "budgetExceeded")
        let summaryObject = try XCTUnwrap(object["summary"] as? [String: Any])
        XCTAssertEqual(summaryObject["verdict"] as? String, "grew")
        XCTAssertEqual(summaryObject["failing"] as? Int, 5)
        XCTAssertEqual(summaryObject["appeared"] as? Int, 2)
        XCTAssertEqual(summaryObject["grew"] as? Int, 3)
        let types = try XCTUnwrap(object["types"] as? [[String: Any]])
        XCTAssertEqual(types.count, 7)
        let appeared = try XCTUnwrap(types.first { $0["name"] as? String == "App.Untracked" })
        XCTAssertEqual(appeared["change"] as? String, "appeared")
        XCTAssertEqual(appeared["fails"] as? Bool, true)
        XCTAssertEqual(appeared["status"] as? String, "failing")
        XCTAssertTrue(appeared["old"] is NSNull, "null, never left out")
        XCTAssertEqual((appeared["new"] as? [String: Any])?["overBudget"] as? Int, 1)
        XCTAssertEqual((appeared["delta"] as? [String: Any])?["peakLive"] as? Int, 2)
        let shrank = try XCTUnwrap(types.first { $0["name"] as? String == "App.Shrank" })
        XCTAssertEqual((shrank["delta"] as? [String: Any])?["liveAtExit"] as? Int, -4)
        let tests = try XCTUnwrap(object["tests"] as? [[String: Any]])
        XCTAssertEqual(tests.first?["change"] as? String, "grew")
        XCTAssertEqual(tests.first?["delta"] as? Int, 2)
        let census = try XCTUnwrap(object["census"] as? [[String: Any]])
        XCTAssertEqual(census.first?["change"] as? String, "disappeared")
        XCTAssertEqual(census.first?["delta"] as? Int, -10)
        XCTAssertEqual(object["notes"] as? [String], [])
    }

    // MARK: - Unreachable objects

    private func group(
        _ types: [String], count: Int, objects: Int? = nil, bytes: Int = 96, status: FindingStatus = .failing,
        isInternal: Bool = false
    ) -> UnreachableObjects.Group {
        let path =
            [Retainer.Step(via: "", type: types[0])]
            + types.dropFirst().map { Retainer.Step(via: "other", type: $0) }
        return UnreachableObjects.Group(
            count: count, objects: objects ?? count * Swift.max(1, types.count - 1), bytes: bytes,
            shape: types.count > 1 ? .cycle : .overRetained, path: path, allocations: [], isInternal: isInternal,
            status: status)
    }

    private func checked(_ groups: [UnreachableObjects.Group]) -> AuditReport {
        var checked = report([])
        checked.unreachable = UnreachableObjects(
            objects: groups.reduce(0) { $0 + $1.objects }, bytes: groups.reduce(0) { $0 + $1.bytes }, types: [],
            groups: groups, processesChecked: 1)
        return checked
    }

    func testUnreachableGroupsAreMatchedByShapeAndFailWhenTheyAppearOrGrow() throws {
        let before = checked([
            group(["App.A", "App.B", "App.A"], count: 2), group(["App.Gone"], count: 1),
            group(["App.Same", "App.Same"], count: 1), group(["Foundation.X"], count: 5, isInternal: true),
            // A local type's address and an array index differ from run to run: still the same group.
            group(["App.(unknown context at $55d7f1c0b9dc).Node", "App.Node"], count: 1),
        ])
        var after = checked([
            group(["App.A", "App.B", "App.A"], count: 5), group(["App.New"], count: 1, status: .baselined(recorded: 1)),
            group(["App.Fresh", "App.Fresh"], count: 1), group(["App.Same", "App.Same"], count: 1),
            group(["Foundation.X"], count: 50, isInternal: true),
            group(["App.(unknown context at $7f0a12345678).Node", "App.Node"], count: 1),
        ])
        let diff = ReportDiff(old: before, oldPath: "old.json", new: after, newPath: "new.json")
        XCTAssertEqual(
            diff.unreachable?.map { "\($0.change.rawValue) \($0.identity) \($0.fails)" },
            [
                "appeared cycle App.Fresh.other → App.Fresh true", "appeared overRetained App.New false",
                "grew cycle App.A.other → App.B.other → App.A true",
                "unchanged cycle App.(unknown context).Node.other → App.Node false",
                "unchanged cycle App.Same.other → App.Same false",
                "disappeared overRetained App.Gone false",
            ])
        XCTAssertEqual(diff.verdict, .grew)
        XCTAssertEqual(diff.failingFindings, 2, "internal groups are no findings; a baselined one fails nothing")
        let text = TextDiffRenderer().render(diff)
        XCTAssertTrue(
            text.contains(
                "unreachable objects of the program's types:\n  APPEARED cycle Fresh.other → Fresh: structures 1, objects 1, bytes 96\n"
            ), text)
        XCTAssertTrue(
            text.contains("  GREW cycle A.other → B.other → A: structures 2 → 5 (+3), objects 4 → 10 (+6), bytes 96\n"), text)
        XCTAssertTrue(text.contains("  APPEARED over-retained New: structures 1, objects 1, bytes 96 (baselined)\n"), text)
        let object = try XCTUnwrap(
            try JSONSerialization.jsonObject(with: Data(JSONDiffRenderer().render(diff).utf8)) as? [String: Any])
        let groups = try XCTUnwrap(object["unreachable"] as? [[String: Any]])
        let grew = try XCTUnwrap(groups.first { $0["change"] as? String == "grew" })
        XCTAssertEqual((grew["delta"] as? [String: Any])?["count"] as? Int, 3)
        XCTAssertEqual(grew["shape"] as? String, "cycle")
        XCTAssertEqual((grew["path"] as? [[String: Any]])?.map { $0["type"] as? String }, ["App.A", "App.B", "App.A"])
        XCTAssertTrue(groups.first { $0["change"] as? String == "appeared" }?["old"] is NSNull)

        // Only shrinking and fixing: no growth.
        after.unreachable?.groups = [group(["App.A", "App.B", "App.A"], count: 1)]
        XCTAssertEqual(ReportDiff(old: before, oldPath: "old.json", new: after, newPath: "new.json").verdict, .noGrowth)
        // One run not checked: not compared, and said.
        let unchecked = ReportDiff(old: report([]), oldPath: "old.json", new: after, newPath: "new.json")
        XCTAssertNil(unchecked.unreachable)
        XCTAssertEqual(unchecked.notes, [.unreachableInOneRun(old: false)])
        XCTAssertTrue(
            TextDiffRenderer().render(unchecked).contains(
                "note: only the new run checked for unreachable objects, so they are not compared\n"))
    }
}
