import Foundation
import LeakAuditModel
import XCTest

/// Suppressions from the configuration file and `--baseline`/`--write-baseline` on real fixtures:
/// what gates, what is reported, and the files they read and write.
final class SuppressionAndBaselineTests: XCTestCase {
    private let bundle = "FixturesPackageTests.xctest"

    /// Writes `text` to a new file in a new directory and returns its path.
    private func file(_ text: String, named name: String = "file.json") throws -> String {
        let path = try Harness.scratchFolder("policy") + "/" + name
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private func configuration(_ suppressions: String) throws -> String {
        try file(#"{"version": 1, "suppressions": \#(suppressions)}"#, named: "leak-audit.json")
    }

    /// A baseline file or SARIF log parsed as JSON: what is checked is the file's own shape.
    private func baselineJSON(_ path: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    private func findings(_ path: String) throws -> [[String: Any]] {
        try XCTUnwrap(try baselineJSON(path)["findings"] as? [[String: Any]])
    }

    /// How many findings fail the run, are suppressed and are baselined.
    private func summaryFindings(_ audit: Harness.Audit) -> [String: Int] {
        let statuses = audit.report.findingStatuses
        return [
            "failing": statuses.filter(\.fails).count, "suppressed": statuses.filter { $0.suppression != nil }.count,
            "baselined": statuses.filter { if case .baselined = $0 { true } else { false } }.count,
        ]
    }

    // MARK: - Suppressions

    func testTypeSuppressionIsReportedNotFailingInEveryFormat() throws {
        let config = try configuration(#"[{"type": "ViewModelRetention.Login*", "reason": "fixed in the new presenter"}]"#)
        let directory = try Harness.scratchFolder("policy")
        let sarif = directory + "/report.sarif"
        let text = directory + "/report.txt"
        let junit = directory + "/report.xml"
        let audit = try Harness.audit(
            "ViewModelRetention",
            extraOptions: ["--config", config, "--output-sarif", sarif, "--output-text", text, "--output-junit", junit])
        XCTAssertEqual(audit.status, 0, audit.stderr)

        let model = try audit.trackedType(".LoginViewModel")
        XCTAssertEqual(model.exceeded, true, "the counts are unchanged")
        XCTAssertEqual(model.peakLive, 3)
        let suppression = try XCTUnwrap(model.status.suppression, "\(model.status)")
        XCTAssertEqual(suppression.rule, "type:ViewModelRetention.Login*")
        XCTAssertEqual(suppression.reason, "fixed in the new presenter")
        XCTAssertEqual(suppression.origin, config)
        XCTAssertEqual(summaryFindings(audit), ["failing": 0, "suppressed": 1, "baselined": 0])
        XCTAssertEqual(audit.report.verdict, .clean)
        XCTAssertFalse(model.allocations.isEmpty, "suppressed, not hidden: the stacks are there")

        let report = try String(contentsOfFile: text, encoding: .utf8)
        XCTAssertTrue(
            Harness.prose(report).contains(
                "SUPPRESSED ViewModelRetention.LoginViewModel: max 1, peak 3, alive at exit 3 (2 over budget)"),
            report)
        XCTAssertTrue(
            Harness.prose(report).contains("by type:ViewModelRetention.Login* (\(config)): fixed in the new presenter"), report)
        XCTAssertFalse(report.contains("EXCEEDED"), report)
        XCTAssertTrue(report.contains("leak-audit: nothing failing (1 tracked; 1 suppressed)"), report)

        try Harness.validateAgainstSARIFSchema(sarif)
        let log = try baselineJSON(sarif)
        let result = try XCTUnwrap(((log["runs"] as? [[String: Any]])?.first?["results"] as? [[String: Any]])?.first)
        let suppressions = try XCTUnwrap(result["suppressions"] as? [[String: Any]])
        XCTAssertEqual(suppressions.first?["kind"] as? String, "external")
        XCTAssertTrue((suppressions.first?["justification"] as? String)?.hasPrefix("fixed in the new presenter") == true)

        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        XCTAssertTrue(xml.contains("<skipped message=\"suppressed by type:ViewModelRetention.Login*"), xml)
        XCTAssertTrue(xml.contains("failures=\"0\" errors=\"0\" skipped=\"1\""), xml)
    }

    func testFrameSuppressionCoversAFindingOnlyWhenEveryAllocationSiteMatches() throws {
        // ProfileScreen's peak holds instances from two tests, so two allocation groups.
        let onlyOne = try Harness.audit(
            bundle, ["ScreenTests.ScreenTests"],
            extraOptions: ["--config", try configuration(#"[{"function": "*testLeaksScreens*", "reason": "legacy test"}]"#)])
        XCTAssertEqual(onlyOne.status, 1, "a new call site is not hidden: \(onlyOne.stderr)")
        let screen = try onlyOne.trackedType(".ProfileScreen")
        XCTAssertEqual(screen.allocations.count, 2)
        XCTAssertEqual(screen.status, .failing)
        let warnings = onlyOne.report.warnings
        XCTAssertTrue(
            warnings.contains { $0.contains("suppression 'function:*testLeaksScreens*'") && $0.contains("matched no finding") })

        let both = try Harness.audit(
            bundle, ["ScreenTests.ScreenTests"],
            extraOptions: ["--config", try configuration(#"[{"file": "*/Tests/ScreenTests/ScreenTests.swift"}]"#)])
        XCTAssertEqual(both.status, 0, both.stderr)
        let suppression = try XCTUnwrap(try both.trackedType(".ProfileScreen").status.suppression)
        XCTAssertNil(suppression.reason)
    }

    func testSuppressionsCoverTestLeaks() throws {
        let audit = try Harness.audit(
            bundle, ["ScreenTests.ScreenTests/testLeaksScreens"],
            extraOptions: ["--leaks-per-test", "--config", try configuration(#"[{"type": "ScreenTests.ProfileScreen"}]"#)])
        XCTAssertEqual(audit.status, 0, audit.stderr)
        let test = try XCTUnwrap(audit.report.tests?.first)
        let leaked = try XCTUnwrap(test.leaked.first)
        XCTAssertNotNil(leaked.status.suppression, "\(leaked.status)")
        XCTAssertEqual(summaryFindings(audit), ["failing": 0, "suppressed": 2, "baselined": 0])
    }

    // MARK: - Baselines

    func testAWrittenBaselineMakesTheSameRunPassAsBaselined() throws {
        let baseline = try Harness.scratchFolder("policy") + "/leaks.baseline.json"
        let first = try Harness.audit("ViewModelRetention", extraOptions: ["--write-baseline", baseline])
        XCTAssertEqual(first.status, 1, "writing a baseline does not change the exit code")
        XCTAssertTrue(first.stderr.contains("leak-audit: wrote the baseline '\(baseline)' (1 finding)"), first.stderr)
        let written = try baselineJSON(baseline)
        XCTAssertEqual(written["version"] as? Int, 1)
        XCTAssertEqual(written["tool"] as? String, "leak-audit")
        let entry = try XCTUnwrap(try findings(baseline).first)
        XCTAssertEqual(entry["kind"] as? String, "type")
        XCTAssertEqual(entry["type"] as? String, "ViewModelRetention.LoginViewModel")
        XCTAssertEqual(entry["overBudget"] as? Int, 2)
        XCTAssertEqual(entry["sites"] as? [String], ["ViewModelRetention.Presenter.open(Swift.String)"])
        let bytes = try String(contentsOfFile: baseline, encoding: .utf8)
        XCTAssertFalse(bytes.contains("main.swift"), "no files or lines in the baseline: \(bytes)")

        let second = try Harness.audit("ViewModelRetention", extraOptions: ["--baseline", baseline])
        XCTAssertEqual(second.status, 0, second.stderr)
        let model = try second.trackedType(".LoginViewModel")
        XCTAssertEqual(model.status, .baselined(recorded: 2))
        XCTAssertEqual(second.report.baseline?.path, baseline)
        XCTAssertEqual(second.report.baseline?.gone.count, 0)

        let text = Harness.run([Harness.leakAudit, "run", "--baseline", baseline, try Harness.fixture("ViewModelRetention")])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(
            Harness.prose(text.stderr).contains(
                "BASELINED ViewModelRetention.LoginViewModel: max 1, peak 3, alive at exit 3 (2 over budget, the baseline records 2)"
            ),
            text.stderr)

        // Written again from the same run: the same bytes.
        let again = try Harness.scratchFolder("policy") + "/again.json"
        _ = try Harness.audit("ViewModelRetention", extraOptions: ["--baseline", baseline, "--write-baseline", again])
        XCTAssertEqual(try String(contentsOfFile: again, encoding: .utf8), bytes)
    }

    func testMoreInstancesThanTheBaselineRecordsFailAsLarger() throws {
        // ConcurrentSessions keeps 320 sessions over its budget of 8; the baseline remembers 100.
        let baseline = try file(
            #"{"version": 1, "tool": "leak-audit", "findings": [{"kind": "type", "type": "ConcurrentSessions.Session", "overBudget": 100}]}"#
        )
        let audit = try Harness.audit("ConcurrentSessions", extraOptions: ["--baseline", baseline])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let session = try audit.trackedType(".Session")
        XCTAssertEqual(session.status, .largerThanBaseline(recorded: 100))
        XCTAssertEqual(summaryFindings(audit), ["failing": 1, "suppressed": 0, "baselined": 0])

        let text = Harness.run([Harness.leakAudit, "run", "--baseline", baseline, try Harness.fixture("ConcurrentSessions")])
        XCTAssertEqual(text.status, 1)
        XCTAssertTrue(text.stderr.contains("EXCEEDED ConcurrentSessions.Session"), text.stderr)
        // A long baseline path wraps the line at 80 columns: its words are all there.
        let unwrapped = text.stderr.replacingOccurrences(of: "\n    ", with: " ")
        XCTAssertTrue(unwrapped.contains("  larger than the baseline '\(baseline)', which records 100 over budget"), text.stderr)

        // A finding the baseline does not know is new, and fails.
        let other = try file(#"{"version": 1, "findings": [{"kind": "type", "type": "Another.Type", "overBudget": 1}]}"#)
        let new = try Harness.audit("ConcurrentSessions", extraOptions: ["--baseline", other])
        XCTAssertEqual(new.status, 1)
        XCTAssertEqual(try new.trackedType(".Session").status, .failing)
        XCTAssertEqual(new.report.baseline?.gone.first?.key, .type("Another.Type"))
    }

    func testTheCleanTwinReportsTheBaselineEntriesAsGone() throws {
        let baseline = try Harness.scratchFolder("policy") + "/leaks.baseline.json"
        _ = try Harness.audit("ViewModelRetention", extraOptions: ["--write-baseline", baseline])
        let audit = try Harness.audit("ViewModelRetention", ["clean"], extraOptions: ["--baseline", baseline])
        XCTAssertEqual(audit.status, 0, audit.stderr)
        let gone = try XCTUnwrap(audit.report.baseline?.gone)
        XCTAssertEqual(gone.count, 1)
        XCTAssertEqual(gone.first?.key, .type("ViewModelRetention.LoginViewModel"))
        XCTAssertEqual(gone.first?.count, 2)

        let text = Harness.run([
            Harness.leakAudit, "run", "--baseline", baseline, try Harness.fixture("ViewModelRetention"), "clean",
        ])
        XCTAssertEqual(text.status, 0)
        XCTAssertTrue(
            Harness.prose(text.stderr).contains("GONE ViewModelRetention.LoginViewModel (the baseline records 2 over budget)"),
            text.stderr)
        XCTAssertTrue(Harness.prose(text.stderr).contains("write it again with --write-baseline"), text.stderr)
        XCTAssertTrue(text.stderr.contains("leak-audit: no type over budget (1 tracked; 1 gone from the baseline)"), text.stderr)
    }

    func testLeaksPerTestFindingsAreBaselinedByTestAndType() throws {
        let baseline = try Harness.scratchFolder("policy") + "/tests.baseline.json"
        let first = try Harness.audit(
            bundle, ["ScreenTests.ScreenTests/testLeaksScreens"],
            extraOptions: ["--leaks-per-test", "--write-baseline", baseline])
        XCTAssertEqual(first.status, 1)
        let entries = try findings(baseline)
        XCTAssertEqual(entries.map { $0["kind"] as? String }, ["type", "test"])
        XCTAssertEqual(entries.last?["test"] as? String, "ScreenTests.ScreenTests/testLeaksScreens")
        XCTAssertEqual(entries.last?["count"] as? Int, 3)

        let second = try Harness.audit(
            bundle, ["ScreenTests.ScreenTests/testLeaksScreens"], extraOptions: ["--leaks-per-test", "--baseline", baseline])
        XCTAssertEqual(second.status, 0, second.stderr)
        XCTAssertEqual(summaryFindings(second), ["failing": 0, "suppressed": 0, "baselined": 2])
    }

    func testSwiftTestingTestsAreRecordedWithoutTheirSourceLocation() throws {
        let baseline = try Harness.scratchFolder("policy") + "/swift-testing.baseline.json"
        let audit = try Harness.audit(
            bundle, ["--testing-library", "swift-testing"], extraOptions: ["--leaks-per-test", "--write-baseline", baseline])
        XCTAssertEqual(audit.status, 1)
        let tests = try findings(baseline).compactMap { $0["test"] as? String }
        XCTAssertEqual(
            tests.sorted(),
            [
                "ScreenTests.KeepsLedgers/check()", "ScreenTests.KeepsVouchers/check()",
                "ScreenTests.ParameterizedSwiftTests/archivesInvoice(amount:)", "ScreenTests.ProfileSwiftTests/leaksSettings()",
                "ScreenTests.SerializedSwiftTests/keepsStamps()", "ScreenTests.SerializedSwiftTests/keepsTickets()",
            ],
            "no file:line:column in the key")
        // The type's peak depends on how the two tests interleave; the test's own leak does not.
        let again = try Harness.audit(
            bundle, ["--testing-library", "swift-testing"], extraOptions: ["--leaks-per-test", "--baseline", baseline])
        let leaky = try XCTUnwrap(again.report.tests?.first { $0.name.contains("leaksSettings") })
        XCTAssertEqual(leaky.leaked.first?.status.name, "baselined", "\(leaky)")
    }

    // MARK: - Unreachable objects

    /// UnreachableShapes audited with `--unreachable` and `extraOptions`; a skip where this
    /// leak-audit has no unreachable check to ask for.
    private func unreachableAudit(_ arguments: [String], _ extraOptions: [String] = []) throws -> Harness.Audit {
        guard Harness.run([Harness.leakAudit, "run", "--help"]).stdout.contains("--unreachable") else {
            throw XCTSkip("this leak-audit has no --unreachable")
        }
        return try Harness.audit("UnreachableShapes", arguments, extraOptions: ["--unreachable"] + extraOptions)
    }

    func testUnreachableGroupsAreBaselinedByShapeSuppressedByTypeAndCompared() throws {
        let baseline = try Harness.scratchFolder("policy") + "/leaks.baseline.json"
        let pairs = try unreachableAudit(["leaky", "pairs"], ["--write-baseline", baseline])
        XCTAssertEqual(pairs.status, 1, pairs.stderr)
        XCTAssertEqual(pairs.report.verdict, .unreachableObjects)
        let entry = try XCTUnwrap(try findings(baseline).first)
        XCTAssertEqual(entry["kind"] as? String, "unreachable")
        XCTAssertEqual(
            entry["path"] as? String,
            "cycle UnreachableShapes.PairA.other → UnreachableShapes.PairB.other → UnreachableShapes.PairA")
        XCTAssertEqual(entry["count"] as? Int, 3)

        let again = try unreachableAudit(["leaky", "pairs"], ["--baseline", baseline])
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertEqual(again.report.unreachable?.groups.first?.status, .baselined(recorded: 3))

        // Another shape is new, and the pairs' entry is gone.
        let families = try unreachableAudit(["leaky", "families"], ["--baseline", baseline])
        XCTAssertEqual(families.status, 1, families.stderr)
        XCTAssertEqual(families.report.unreachable?.groups.first?.status, .failing)
        XCTAssertEqual(families.report.baseline?.gone.map(\.count), [3])

        // A type rule matches any type on a group's path.
        let suppressed = try unreachableAudit(
            ["leaky", "families"], ["--config", try configuration(#"[{"type": "UnreachableShapes.Folder"}]"#)])
        XCTAssertEqual(suppressed.status, 0, suppressed.stderr)
        XCTAssertEqual(suppressed.report.unreachable?.groups.first?.status.suppression?.rule, "type:UnreachableShapes.Folder")

        // What appeared and disappeared from one run to the other.
        let diff = Harness.run([Harness.leakAudit, "report", "--diff", pairs.jsonPath, families.jsonPath])
        XCTAssertEqual(diff.status, 1, diff.log)
        XCTAssertTrue(diff.stdout.contains("  APPEARED cycle File.parent → Folder.children"), diff.stdout)
        XCTAssertTrue(diff.stdout.contains("  DISAPPEARED cycle PairA.other → PairB.other → PairA: structures 3"), diff.stdout)
    }

    func testABadBaselineIsAUsageErrorBeforeTheTargetRuns() throws {
        let target = try Harness.fixture("ViewModelRetention")
        let cases: [(String, String)] = [
            (#"{"version": 2, "findings": []}"#, "has version 2; this leak-audit reads version 1"),
            (#"{"findings": []}"#, #"missing "version""#),
            ("not json", "not valid JSON"),
        ]
        for (text, expected) in cases {
            let path = try file(text)
            let result = Harness.run([Harness.leakAudit, "run", "--baseline", path, target])
            XCTAssertEqual(result.status, 64, text)
            XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, "one line: \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("'\(path)'") && result.stderr.contains(expected), "\(text): \(result.stderr)")
            XCTAssertFalse(result.stdout.contains("ViewModelRetention"), "the target did not run")
        }
        let missing = Harness.run([Harness.leakAudit, "run", "--baseline", "/nonexistent/leaks.json", target])
        XCTAssertEqual(missing.status, 64)
        XCTAssertTrue(missing.stderr.contains("cannot read baseline '/nonexistent/leaks.json'"), missing.stderr)

        let unwritable = Harness.run([Harness.leakAudit, "run", "--write-baseline", "/nonexistent/dir/leaks.json", target])
        XCTAssertEqual(unwritable.status, 64)
        XCTAssertTrue(unwritable.stderr.contains("cannot write the baseline to '/nonexistent/dir/leaks.json'"), unwritable.stderr)
        XCTAssertFalse(unwritable.stdout.contains("ViewModelRetention"), "the target did not run")

        let same = try Harness.scratchFolder("policy") + "/same.json"
        let clash = Harness.run([Harness.leakAudit, "run", "--output", same, "--write-baseline", same, target])
        XCTAssertEqual(clash.status, 64)
        XCTAssertTrue(clash.stderr.contains("give each its own file"), clash.stderr)

        let badSuppression = Harness.run([
            Harness.leakAudit, "run", "--config", try configuration(#"[{"type": "A", "function": "B"}]"#), target,
        ])
        XCTAssertEqual(badSuppression.status, 64)
        XCTAssertTrue(badSuppression.stderr.contains("suppressions[0] needs exactly one of"), badSuppression.stderr)
    }
}
