import Foundation
import LeakAuditRendering
import XCTest

/// `leak-audit report`: a run saved with --output-json renders in every format as the run itself
/// wrote it, with the run's exit code; `--diff` between a clean twin's run and the leaky run names
/// the leak as appeared; a bad report file is one line and exit 64.
final class ReportCommandTests: XCTestCase {
    /// Every format of one run of a leaky fixture (with the census), each written by the run
    /// itself, and the run's exit code.
    private struct SavedRun {
        var directory: URL
        var status: Int32
        /// The file each format was written to, by format name.
        var files: [String: String]

        var json: String { files["json"] ?? "" }

        func contents(_ format: String) throws -> String {
            try String(contentsOfFile: try XCTUnwrap(files[format]), encoding: .utf8)
        }
    }

    /// Every format `leak-audit report --format` takes, read from its --help (the cases of
    /// ReportFormat), so that a format added later is compared too with no change here.
    private static let formats: [String] = {
        let help = leakAudit(["report", "--help"]).stdout
        guard let start = help.range(of: "(values: "), let end = help[start.upperBound...].firstIndex(of: ";") else { return [] }
        return help[start.upperBound..<end].split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
    }()

    /// Runs leak-audit from the package root, as CI would, so that paths read the same.
    private static func leakAudit(_ arguments: [String]) -> Harness.CommandResult {
        Harness.run([Harness.leakAudit] + arguments, directory: Harness.packageRoot.path)
    }

    /// Runs `fixture arguments…` under `leak-audit run --census`, writing every format to a file.
    private static func save(_ fixture: String, _ arguments: [String] = []) throws -> SavedRun {
        let directory = URL(fileURLWithPath: try Harness.scratchFolder("report"))
        let files = Dictionary(uniqueKeysWithValues: formats.map { ($0, directory.appendingPathComponent("run.\($0)").path) })
        let options = formats.flatMap { ["--output-\($0)", files[$0] ?? ""] }
        let result = leakAudit(["run", "--census"] + options + [try Harness.fixture(fixture)] + arguments)
        return SavedRun(directory: directory, status: result.status, files: files)
    }

    private static let leaky = Result { try save("ViewModelRetention") }

    func testEveryFormatRendersFromTheSavedReportAsTheRunWroteIt() throws {
        let run = try Self.leaky.get()
        XCTAssertEqual(run.status, 1, "the fixture leaks")
        XCTAssertTrue(Set(Self.formats).isSuperset(of: ["text", "json", "sarif", "junit", "github"]), "\(Self.formats)")
        for format in Self.formats {
            let rendered = Self.leakAudit(["report", run.json, "--format", format])
            XCTAssertEqual(rendered.status, run.status, "\(format): the run's exit code\n\(rendered.log)")
            XCTAssertEqual(rendered.stdout, try run.contents(format), "\(format) differs from what the run wrote")
            XCTAssertEqual(rendered.stderr, "", format)
        }
        // To a file, and several formats at once, as run writes them.
        let text = run.directory.appendingPathComponent("again.txt").path
        let sarif = run.directory.appendingPathComponent("again.sarif").path
        let again = Self.leakAudit(["report", run.json, "-o", text, "--output-sarif", sarif])
        XCTAssertEqual(again.status, 1, again.log)
        XCTAssertEqual(again.stdout, "")
        XCTAssertEqual(try String(contentsOfFile: text, encoding: .utf8), try run.contents("text"))
        XCTAssertEqual(try String(contentsOfFile: sarif, encoding: .utf8), try run.contents("sarif"))
        try Harness.validateAgainstSchema(run.json)
    }

    /// `json` (a schema-2 report) in schema 1's shape, as earlier releases wrote it: each group's
    /// frames inside it, every field of a frame written, null when unknown. Read by leak-audit's
    /// reader and written by its schema-1 writer, whose output JSONReportReaderTests holds equal to
    /// the last schema-1 golden reports.
    private static func schema1(_ json: String) throws -> String {
        let report = try JSONReportReader().decode(Array(json.utf8), path: "run.json")
        return JSONReportRenderer.schema1.render(report)
    }

    func testAReportSavedInSchema1RendersAndComparesAsTheRunWroteIt() throws {
        let run = try Self.leaky.get()
        let old = run.directory.appendingPathComponent("schema-1.json").path
        try Data(try Self.schema1(try run.contents("json")).utf8).write(to: URL(fileURLWithPath: old))
        try Harness.validateAgainstSchema(old, schema: "docs/report-schema-v1.json")
        for format in Self.formats {
            let rendered = Self.leakAudit(["report", old, "--format", format])
            XCTAssertEqual(rendered.status, run.status, "\(format): the run's exit code\n\(rendered.log)")
            XCTAssertEqual(rendered.stdout, try run.contents(format), "\(format) differs from what the run wrote")
        }
        let diff = Self.leakAudit(["report", "--diff", old, run.json])
        XCTAssertEqual(diff.status, 0, diff.log)
        XCTAssertTrue(diff.stdout.contains("\n  UNCHANGED ViewModelRetention.LoginViewModel: "), diff.stdout)
        XCTAssertFalse(diff.stdout.contains("APPEARED") || diff.stdout.contains("GREW"), diff.stdout)
    }

    func testTheCleanTwinsReportExitsZero() throws {
        let clean = try Self.save("ViewModelRetention", ["clean"])
        XCTAssertEqual(clean.status, 0)
        let rendered = Self.leakAudit(["report", clean.json])
        XCTAssertEqual(rendered.status, 0, rendered.log)
        XCTAssertEqual(rendered.stdout, try clean.contents("text"))
    }

    func testDiffFromTheCleanTwinShowsTheLeakAppeared() throws {
        let leaky = try Self.leaky.get()
        let clean = try Self.save("ViewModelRetention", ["clean"])
        XCTAssertEqual(clean.status, 0)

        let text = Self.leakAudit(["report", "--diff", clean.json, leaky.json])
        XCTAssertEqual(text.status, 1, "a finding appeared\n\(text.log)")
        XCTAssertTrue(text.stdout.hasPrefix("leak-audit diff: '\(clean.json)' → '\(leaky.json)'\n"), text.stdout)
        XCTAssertTrue(
            text.stdout.contains(
                "\n  APPEARED ViewModelRetention.LoginViewModel: max 1, peak 1 → 3 (+2), alive at exit 0 → 3 (+3), over budget 0 → 2 (+2)\n"
            ), text.stdout)
        XCTAssertTrue(text.stdout.contains("\ncensus (alive at exit; informs, fails nothing):\n"), text.stdout)
        XCTAssertTrue(text.stdout.contains("\n  APPEARED ViewModelRetention.LoginViewModel: 0 → 3 (+3)\n"), text.stdout)
        XCTAssertTrue(
            text.stdout.hasSuffix("leak-audit: 1 finding appeared or grew and fails the new run (1 appeared)\n"), text.stdout)

        let json = Self.leakAudit(["report", "--diff", clean.json, leaky.json, "--format", "json"])
        XCTAssertEqual(json.status, 1, json.log)
        // A comparison (docs/diff-schema.json), not a report: no typed reader reads it back.
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(object["diffSchemaVersion"] as? Int, 1)
        let types = try XCTUnwrap(object["types"] as? [[String: Any]])
        XCTAssertEqual(types.count, 1)
        XCTAssertEqual(types.first?["name"] as? String, "ViewModelRetention.LoginViewModel")
        XCTAssertEqual(types.first?["change"] as? String, "appeared")
        XCTAssertEqual(types.first?["fails"] as? Bool, true)
        XCTAssertEqual((object["summary"] as? [String: Any])?["verdict"] as? String, "grew")
        try validateAgainstDiffSchema(json.stdout)

        // The other way round the leak was fixed, and nothing grew.
        let fixed = Self.leakAudit(["report", "--diff", leaky.json, clean.json])
        XCTAssertEqual(fixed.status, 0, fixed.log)
        XCTAssertTrue(fixed.stdout.contains("\n  DISAPPEARED ViewModelRetention.LoginViewModel: "), fixed.stdout)
        // A run compared with itself: unchanged.
        let same = Self.leakAudit(["report", "--diff", leaky.json, leaky.json])
        XCTAssertEqual(same.status, 0, same.log)
        XCTAssertTrue(same.stdout.contains("\n  UNCHANGED ViewModelRetention.LoginViewModel: "), same.stdout)
    }

    /// Validates a comparison against docs/diff-schema.json with Python's jsonschema.
    private func validateAgainstDiffSchema(_ json: String) throws {
        let path = URL(fileURLWithPath: Harness.scratchPath("diff.json"))
        try Data(json.utf8).write(to: path)
        try Harness.validateAgainstSchema(path.path, schema: "docs/diff-schema.json")
    }

    func testABadReportFileIsOneLineAndExit64() throws {
        let directory = URL(fileURLWithPath: try Harness.scratchFolder("bad"))
        func file(_ name: String, _ text: String) throws -> String {
            let path = directory.appendingPathComponent(name).path
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
        let cases: [(path: String, says: String)] = [
            (try file("empty.json", ""), "cannot be read: it is empty"),
            (directory.path, "cannot be read: is a directory"),
            ("/dev/zero", "cannot be read: larger than 64 megabytes"),
            (try file("garbage.json", "{\"schemaVersion\": 1, \"tool\""), "is not a report to render: it is not valid JSON"),
            (try file("v9.json", "{\"schemaVersion\": 9}"), "is a JSON report of schema version 9"),
        ]
        for (path, says) in cases {
            let result = Self.leakAudit(["report", path, "--format", "sarif"])
            XCTAssertEqual(result.status, 64, result.log)
            XCTAssertEqual(result.stdout, "", "nothing rendered")
            XCTAssertTrue(result.stderr.hasPrefix("leak-audit: error: '\(path)' \(says)"), result.stderr)
            XCTAssertEqual(result.stderr.filter { $0 == "\n" }.count, 1, "one line: \(result.stderr)")
        }
        // A bad report costs no output file.
        let output = directory.appendingPathComponent("out.txt").path
        XCTAssertEqual(Self.leakAudit(["report", cases[0].path, "-o", output]).status, 64)
        XCTAssertFalse(FileManager.default.fileExists(atPath: output))
        // Either side of a comparison.
        let diff = Self.leakAudit(["report", "--diff", try Self.leaky.get().json, cases[0].path])
        XCTAssertEqual(diff.status, 64, diff.log)
        XCTAssertTrue(diff.stderr.hasPrefix("leak-audit: error: '\(cases[0].path)' cannot be read"), diff.stderr)
    }

    func testOptionsThatDoNotFitAreUsageErrors() throws {
        let json = try Self.leaky.get().json
        let cases: [(arguments: [String], says: String)] = [
            (["report"], "missing the report"),
            (["report", json, json], "give one report to render, or --diff and two reports to compare"),
            (["report", "--diff", json], "--diff compares two reports"),
            (["report", "--diff", json, json, "--format", "sarif"], "--diff writes text or json, not 'sarif'"),
            (["report", "--diff", json, json, "--output-junit", "x.xml"], "--diff writes one comparison"),
            (["report", json, "--format", "pdf"], "'pdf'"),
        ]
        for (arguments, says) in cases {
            let result = Self.leakAudit(arguments)
            XCTAssertEqual(result.status, 64, "\(arguments)\n\(result.log)")
            XCTAssertTrue(result.stderr.contains(says), "\(arguments): \(result.stderr)")
        }
        let help = Self.leakAudit(["report", "--help"])
        XCTAssertEqual(help.status, 0)
        XCTAssertTrue(help.stdout.contains("Exit codes, with --diff:"), help.stdout)
        XCTAssertTrue(help.stdout.contains("json, sarif, junit"), "every format, from ReportFormat: \(help.stdout)")
    }
}
