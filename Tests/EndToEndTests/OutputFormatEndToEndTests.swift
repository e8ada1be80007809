import Foundation
import LeakAuditRendering
import XCTest

/// `--format sarif|junit|github` and the `--output-FORMAT FILE` options on real fixtures: several
/// reports from one run, the SARIF log valid against the official schema and located at the
/// allocating line, JUnit XML that parses with the right counts, workflow commands one a line.
final class OutputFormatEndToEndTests: XCTestCase {
    private static let source = "Fixtures/Sources/ViewModelRetention/main.swift"

    /// Every extra output of one run, by format.
    private struct Outputs {
        var directory: URL
        var paths: [String: String]

        init() throws {
            let directory = URL(fileURLWithPath: try Harness.scratchFolder("formats"))
            let files = [
                "text": "report.txt", "json": "report.json", "sarif": "report.sarif", "junit": "report.xml",
                "github": "report.gh",
            ]
            self.directory = directory
            paths = files.mapValues { directory.appendingPathComponent($0).path }
        }

        /// `--output-text FILE --output-json FILE …`.
        var options: [String] { paths.keys.sorted().flatMap { ["--output-\($0)", paths[$0] ?? ""] } }

        func contents(_ format: String) throws -> String {
            try String(contentsOfFile: try XCTUnwrap(paths[format]), encoding: .utf8)
        }

        /// A SARIF log or JUnit file parsed as JSON: formats that are not leak-audit's report.
        func json(_ format: String) throws -> [String: Any] {
            let data = try Data(contentsOf: URL(fileURLWithPath: try XCTUnwrap(paths[format])))
            return try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }
    }

    /// Runs leak-audit from the package root with `--format github` (to standard error) and every
    /// extra output.
    private func run(_ fixture: String, _ arguments: [String] = [], outputs: Outputs) throws -> Harness.CommandResult {
        Harness.run(
            [Harness.leakAudit, "run", "--format", "github"] + outputs.options + [try Harness.fixture(fixture)] + arguments,
            directory: Harness.packageRoot.path)
    }

    /// A JUnit file as parsed by Python's XML parser: the root's attributes, and per test case its
    /// attributes and its failure or error.
    private func parseJUnit(_ path: String) throws -> [String: Any] {
        let script = """
            import json, sys, xml.etree.ElementTree as ET
            root = ET.parse(sys.argv[1]).getroot()
            def element(e):
                return None if e is None else {"attributes": dict(e.attrib), "text": e.text or ""}
            print(json.dumps({
                "tag": root.tag, "attributes": dict(root.attrib),
                "suites": [dict(s.attrib) for s in root.findall("testsuite")],
                "cases": [{"attributes": dict(c.attrib), "failure": element(c.find("failure")), "error": element(c.find("error"))}
                          for c in root.iter("testcase")],
            }))
            """
        let result = Harness.run(["python3", "-c", script, path])
        XCTAssertEqual(result.status, 0, "not well-formed XML: \(result.stderr)")
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    private func results(_ sarif: [String: Any]) throws -> [[String: Any]] {
        try XCTUnwrap((sarif["runs"] as? [[String: Any]])?.first?["results"] as? [[String: Any]])
    }

    func testOneLeakyRunWritesEveryFormatAtTheAllocatingLine() throws {
        let outputs = try Outputs()
        let result = try run("ViewModelRetention", outputs: outputs)
        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertEqual(result.stdout, "ViewModelRetention: opened and closed 3 screens\n", "the target's stdout is untouched")
        // Every format points at the line that constructed the view models, not at their init.
        let validateLine = try Harness.line(of: "LoginViewModel(title:", inFixtureSource: "Sources/ViewModelRetention/main.swift")

        // JSON, as --format json would write it.
        let report = try Harness.readReport(try XCTUnwrap(outputs.paths["json"]))
        XCTAssertEqual(report.exceededTypes.count, 1)

        // SARIF: valid, one result, at the line that calls LoginViewModel(title:).
        try Harness.validateAgainstSARIFSchema(try XCTUnwrap(outputs.paths["sarif"]))
        let results = try results(try outputs.json("sarif"))
        XCTAssertEqual(results.count, 1)
        let result0 = try XCTUnwrap(results.first)
        XCTAssertEqual(result0["ruleId"] as? String, "budget-exceeded")
        XCTAssertEqual(result0["level"] as? String, "error")
        let message = try XCTUnwrap((result0["message"] as? [String: Any])?["text"] as? String)
        XCTAssertTrue(
            message.hasPrefix("ViewModelRetention.LoginViewModel exceeded its budget: max 1 (declared in code), peak 3"), message)
        let physical = try XCTUnwrap((result0["locations"] as? [[String: Any]])?.first?["physicalLocation"] as? [String: Any])
        let artifact = try XCTUnwrap(physical["artifactLocation"] as? [String: Any])
        XCTAssertEqual(artifact["uri"] as? String, Self.source)
        XCTAssertEqual(artifact["uriBaseId"] as? String, "%SRCROOT%")
        XCTAssertEqual((physical["region"] as? [String: Any])?["startLine"] as? Int, validateLine)

        // JUnit: one failing test case with the stack in its failure.
        let junit = try parseJUnit(try XCTUnwrap(outputs.paths["junit"]))
        XCTAssertEqual(junit["tag"] as? String, "testsuites")
        let attributes = try XCTUnwrap(junit["attributes"] as? [String: String])
        XCTAssertEqual(attributes["tests"], "1")
        XCTAssertEqual(attributes["failures"], "1")
        XCTAssertEqual(attributes["errors"], "0")
        let testCase = try XCTUnwrap((junit["cases"] as? [[String: Any]])?.first)
        XCTAssertEqual(
            testCase["attributes"] as? [String: String],
            ["classname": "ViewModelRetention", "name": "ViewModelRetention.LoginViewModel", "time": "0"])
        let failure = try XCTUnwrap(testCase["failure"] as? [String: Any])
        XCTAssertEqual((failure["attributes"] as? [String: String])?["type"], "budget-exceeded")
        XCTAssertTrue((failure["text"] as? String)?.contains("\(Self.source):\(validateLine)") == true, "\(failure)")

        // GitHub: the same commands in the file and on standard error.
        let github = try outputs.contents("github")
        XCTAssertTrue(result.stderr.hasPrefix(github), "stderr:\n\(result.stderr)\nfile:\n\(github)")
        let commands = github.split(separator: "\n").map(String.init)
        XCTAssertEqual(commands.count, 2, github)
        XCTAssertTrue(
            commands[0].hasPrefix(
                "::error file=\(Self.source),line=\(validateLine),col=")
                && commands[0].contains(",title=leak-audit%3A ViewModelRetention.LoginViewModel over budget::EXCEEDED "),
            commands[0])
        XCTAssertTrue(commands[1].hasPrefix("::notice title=leak-audit::1 of 1 tracked type over budget; "), commands[1])

        // Text, as the log shows it.
        let text = try outputs.contents("text")
        XCTAssertTrue(text.contains("EXCEEDED ViewModelRetention.LoginViewModel: max 1, peak 3, alive at exit 3"), text)
        XCTAssertTrue(text.contains("/main.swift:\(validateLine)"), text)
    }

    func testCleanTwinWritesEmptyReportsInEveryFormat() throws {
        let outputs = try Outputs()
        let result = try run("ViewModelRetention", ["clean"], outputs: outputs)
        XCTAssertEqual(result.status, 0, result.stderr)
        try Harness.validateAgainstSARIFSchema(try XCTUnwrap(outputs.paths["sarif"]))
        XCTAssertEqual(try results(try outputs.json("sarif")).count, 0)
        let junit = try parseJUnit(try XCTUnwrap(outputs.paths["junit"]))
        XCTAssertEqual((junit["attributes"] as? [String: String])?["tests"], "1")
        XCTAssertEqual((junit["attributes"] as? [String: String])?["failures"], "0")
        let testCase = try XCTUnwrap((junit["cases"] as? [[String: Any]])?.first)
        XCTAssertTrue(testCase["failure"] is NSNull)
        let github = try outputs.contents("github")
        XCTAssertEqual(github.split(separator: "\n").count, 1, github)
        XCTAssertTrue(github.hasPrefix("::notice title=leak-audit::no type over budget (1 tracked); "), github)
        XCTAssertTrue(result.stderr.hasPrefix(github), result.stderr)
    }

    func testNamesFromTheTargetAreEscapedInEveryFormat() throws {
        let name =
            "Tricky \"quoted\" \\ ünïcödé 🦊 tab\there bell\u{7} <b>&amp; 100% a::b, c:d\nline\rcr \u{1B}[31mred\u{1B}[0m \u{202E}txt.exe"
        let outputs = try Outputs()
        let result = try run("EscapingNames", outputs: outputs)
        XCTAssertEqual(result.status, 1, result.stderr)

        try Harness.validateAgainstSARIFSchema(try XCTUnwrap(outputs.paths["sarif"]))
        let sarif = try results(try outputs.json("sarif"))
        XCTAssertEqual((sarif.first?["properties"] as? [String: Any])?["typeName"] as? String, name, "the exact name")
        let validateLine = try Harness.line(of: "Tricky() }", inFixtureSource: "Sources/EscapingNames/main.swift")
        let physical = try XCTUnwrap(
            (sarif.first?["locations"] as? [[String: Any]])?.first?["physicalLocation"] as? [String: Any])
        XCTAssertEqual((physical["region"] as? [String: Any])?["startLine"] as? Int, validateLine)

        let junit = try parseJUnit(try XCTUnwrap(outputs.paths["junit"]))
        let testCase = try XCTUnwrap((junit["cases"] as? [[String: Any]])?.first)
        // Tab, line feed and CR survive as character references (markup as entities); a bell or an
        // escape cannot be in XML 1.0 at all.
        XCTAssertEqual(
            (testCase["attributes"] as? [String: String])?["name"],
            "Tricky \"quoted\" \\ ünïcödé 🦊 tab\there bell\\u{7} <b>&amp; 100% a::b, c:d\nline\rcr \\u{1b}[31mred\\u{1b}[0m \u{202E}txt.exe"
        )
        XCTAssertEqual((testCase["attributes"] as? [String: String])?["classname"], "leak-audit")
        let xml = try outputs.contents("junit")
        XCTAssertFalse(xml.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" }, "no raw control characters in XML")

        let github = try outputs.contents("github")
        XCTAssertFalse(github.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" }, "no raw control characters")
        let commands = github.split(separator: "\n").map(String.init)
        XCTAssertEqual(commands.count, 2, github)
        // No line break, and no "::" or "," a runner could read as the end of the title.
        XCTAssertTrue(
            commands[0].contains(
                "title=leak-audit%3A Tricky \"quoted\" \\ ünïcödé 🦊 tab\\u{9}here bell\\u{7} <b>&amp; 100%25 a%3A%3Ab%2C c%3Ad\\u{a}line\\u{d}cr \\u{1b}[31mred\\u{1b}[0m \\u{202e}txt.exe over budget::"
            ), commands[0])
        // The text report (its long name shortened in the middle to fit 80 columns): control
        // characters and the right-to-left override as escapes.
        let text = try outputs.contents("text")
        XCTAssertTrue(text.contains("\\u{1b}[0m \\u{202e}txt.exe:\n  max 1, peak 2"), text)
        for output in [text, github, xml] {
            XCTAssertFalse(output.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x7 }, output)
        }
        XCTAssertFalse(text.unicodeScalars.contains { $0.value == 0x202E }, text)
    }

    func testAnUnauditedTargetIsAnErrorInEveryFormat() throws {
        let outputs = try Outputs()
        // A program with no Swift in it: a Swift one is checked for unreachable objects by default.
        let result = Harness.run(
            [Harness.leakAudit, "run", "--format", "github"] + outputs.options + ["/bin/true"],
            directory: Harness.packageRoot.path)
        XCTAssertEqual(result.status, 3, result.stderr)
        try Harness.validateAgainstSARIFSchema(try XCTUnwrap(outputs.paths["sarif"]))
        let run = try XCTUnwrap((try outputs.json("sarif")["runs"] as? [[String: Any]])?.first)
        XCTAssertEqual((run["invocations"] as? [[String: Any]])?.first?["executionSuccessful"] as? Bool, false)
        let junit = try parseJUnit(try XCTUnwrap(outputs.paths["junit"]))
        XCTAssertEqual((junit["attributes"] as? [String: String])?["errors"], "1")
        let testCase = try XCTUnwrap((junit["cases"] as? [[String: Any]])?.first)
        XCTAssertEqual(((testCase["error"] as? [String: Any])?["attributes"] as? [String: String])?["type"], "not-audited")
        let github = try outputs.contents("github")
        XCTAssertTrue(github.hasPrefix("::error title=leak-audit%3A not audited::"), github)
    }

    func testABadOutputPathExits64BeforeRunningAndLeavesNoFiles() throws {
        let outputs = try Outputs()
        let missing = outputs.directory.appendingPathComponent("no/such/dir/report.sarif").path
        let result = Harness.run(
            [
                Harness.leakAudit, "run", "--output-json", try XCTUnwrap(outputs.paths["json"]), "--output-sarif", missing,
                try Harness.fixture("ViewModelRetention"),
            ])
        XCTAssertEqual(result.status, 64, result.stderr)
        XCTAssertTrue(result.stderr.contains(missing), result.stderr)
        XCTAssertEqual(result.stdout, "", "the target did not run")
        XCTAssertFalse(
            FileManager.default.fileExists(atPath: try XCTUnwrap(outputs.paths["json"])), "the opened output was removed")
    }

    func testOnePathForTwoReportsIsAUsageError() throws {
        let path = try XCTUnwrap(try Outputs().paths["json"])
        let result = Harness.run(
            [Harness.leakAudit, "run", "--output", path, "--output-sarif", path, try Harness.fixture("ViewModelRetention")])
        XCTAssertEqual(result.status, 64, result.stderr)
        XCTAssertTrue(result.stderr.contains("is given for two reports"), result.stderr)
        XCTAssertEqual(result.stdout, "")
    }

    func testHelpListsFormatsAndOutputs() throws {
        let help = Harness.run([Harness.leakAudit, "run", "--help"]).stdout
        // Every case of ReportFormat: a new format needs its --output-FORMAT option.
        let names = ReportFormat.allCases.map(\.rawValue)
        for name in names { XCTAssertTrue(help.contains("--output-\(name) "), "--output-\(name)") }
        // Read whole, whatever the width the help is wrapped to.
        let words = help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        let last = try XCTUnwrap(names.last)
        XCTAssertTrue(words.contains(names.dropLast().joined(separator: ", ") + " or " + last), help)
    }
}
