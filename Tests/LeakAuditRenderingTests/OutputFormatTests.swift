import Foundation
import XCTest

@testable import LeakAuditModel
@testable import LeakAuditRendering

/// The SARIF, JUnit and GitHub Actions renderers on reports built by hand: structure, schema
/// validity, counts, well-formedness and escaping.
final class OutputFormatTests: XCTestCase {
    // MARK: - Fixtures

    private static let cwd = "/home/dev/project"
    private static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// A type name with everything that needs escaping somewhere: quotes, markup, a comma and a
    /// colon, a percent sign, a line break, a tab, a bell, a non-character and non-ASCII letters.
    private static let trickyName = "App.Tricky<\"q\" & 'a', b: 100%>\nnext\ttab\u{7}bell\u{FFFE} ünï 🦊"

    private func frame(
        _ function: String?, _ file: String? = nil, _ line: Int? = nil, address: UInt64 = 0x1000,
        module: String? = "/home/dev/project/.build/debug/App", column: Int? = nil, inlined: Bool = false
    ) -> SymbolizedFrame {
        SymbolizedFrame(
            address: address, module: module, moduleOffset: module == nil ? nil : 0x1000, function: function, file: file,
            line: line, column: column, inlined: inlined)
    }

    private func type(
        _ name: String, max: Int, peak: Int, atExit: Int, budget: AuditReport.BudgetOrigin = .code,
        allocations: [AuditReport.AllocationGroup] = []
    ) -> AuditReport.TrackedType {
        AuditReport.TrackedType(
            name: name, budget: budget, max: max, peakLive: peak, liveAtExit: atExit, allocatedTotal: peak,
            allocations: allocations)
    }

    private func report(
        path: String = ".build/debug/App", outcome: TargetOutcome = .exited(code: 0),
        notAudited: AuditReport.NotAuditedReason? = nil, types: [AuditReport.TrackedType] = [],
        census: AuditReport.Census? = nil, tests: [AuditReport.TestReport]? = nil, warnings: [String] = []
    ) -> AuditReport {
        var report = AuditReport(
            tool: .init(name: "leak-audit", version: "0.1.0"),
            target: .init(path: path, arguments: ["--flag"], attached: true, attachedProcesses: 1, outcome: outcome),
            notAudited: notAudited, types: types, droppedRecords: 0, tornRecords: 0, warnings: warnings)
        report.census = census
        report.tests = tests
        return report
    }

    private var mainStack: [SymbolizedFrame] {
        [
            frame(
                "App.LoginViewModel.init(title: Swift.String) -> App.LoginViewModel", "\(Self.cwd)/Sources/App/Login.swift", 11,
                column: 9),
            frame("reabstraction thunk helper", "\(Self.cwd)/<compiler-generated>", 0),
            frame("App.Presenter.open(Swift.String) -> ()", "\(Self.cwd)/Sources/App/Presenter.swift", 29),
            frame("App_main", "\(Self.cwd)/Sources/App/main.swift", 43),
            frame("__libc_start_call_main", nil, nil, module: "/lib/x86_64-linux-gnu/libc.so.6"),
            frame(nil, nil, nil, address: 0xdef0, module: nil),
        ]
    }

    /// One exceeded type with two stacks (the second outside the working directory) and one
    /// type within budget.
    private func leakyReport() -> AuditReport {
        let other = [
            frame("libfoo_alloc", nil, nil, module: "/usr/lib/libfoo.so"),
            frame("App.Factory.make() -> App.LoginViewModel", "/elsewhere/Factory.swift", 7),
        ]
        return report(types: [
            type(
                "App.LoginViewModel", max: 1, peak: 3, atExit: 2,
                allocations: [
                    .init(count: 2, frames: mainStack, truncated: false),
                    .init(count: 1, frames: other, truncated: true),
                ]),
            type("App.Settings", max: 2, peak: 1, atExit: 0),
        ])
    }

    /// A report with the tricky name over budget, a warning with a line break, and a census.
    private func trickyReport() -> AuditReport {
        let file = "\(Self.cwd)/Sources/My App, v2: Ünï/Tricky%.swift"
        let pattern = BudgetPattern(pattern: "App.*<\"&'>", max: 0, origin: "--budget")
        return report(
            path: "./run <&> \"me\"",
            types: [
                type(
                    Self.trickyName, max: 0, peak: 1, atExit: 1, budget: .pattern(pattern),
                    allocations: [.init(count: 1, frames: [frame("App.f<A>(A) -> ()", file, 3)], truncated: false)])
            ],
            census: .init(
                entries: [
                    .init(
                        name: "App.Cache<&>", liveAtExit: 2, isInternal: false,
                        allocations: [.init(count: 2, frames: mainStack, truncated: false)])
                ], foldedTypes: 0, foldedInstances: 0),
            warnings: ["pattern 'X' matched no type\nsecond line: 100%"])
    }

    private func json(_ text: String) throws -> [String: Any] {
        try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    /// Runs a Python script with `input` on standard input and returns its standard output.
    private func python(_ script: String, _ arguments: [String] = [], input: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script] + arguments
        let stdin = Pipe()
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        // Feed the input from another thread so that a full output pipe cannot block the writer.
        let writer = Thread {
            stdin.fileHandleForWriting.write(Data(input.utf8))
            try? stdin.fileHandleForWriting.close()
        }
        writer.start()
        nonisolated(unsafe) var errors = Data()
        let reader = Thread { errors = stderr.fileHandleForReading.readDataToEndOfFile() }
        reader.start()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while !reader.isFinished || !writer.isFinished { usleep(1_000) }
        guard process.terminationStatus == 0 else {
            throw PythonError(message: String(decoding: errors, as: UTF8.self))
        }
        return String(decoding: output, as: UTF8.self)
    }

    private struct PythonError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    /// Validates a SARIF log against the official SARIF 2.1.0 schema (draft-07), kept in docs/.
    private func assertValidSARIF(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        let schema = Self.packageRoot.appendingPathComponent("docs/sarif-schema-2.1.0.json").path
        let script = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            jsonschema.Draft7Validator.check_schema(schema)
            validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
            errors = sorted(validator.iter_errors(json.loads(sys.stdin.read())), key=lambda e: list(e.path))
            for error in errors: print(list(error.path), error.message, file=sys.stderr)
            sys.exit(1 if errors else 0)
            """
        XCTAssertNoThrow(try python(script, [schema], input: text), "not valid SARIF 2.1.0", file: file, line: line)
    }

    /// A JUnit document as parsed by Python's XML parser: per suite its attributes, and per test
    /// case its attributes, its failure or error element and their text.
    private func parseJUnit(_ xml: String) throws -> [String: Any] {
        let script = """
            import json, sys, xml.etree.ElementTree as ET
            root = ET.fromstring(sys.stdin.buffer.read())
            def element(e):
                return None if e is None else {"attributes": dict(e.attrib), "text": e.text or ""}
            print(json.dumps({
                "tag": root.tag, "attributes": dict(root.attrib),
                "suites": [{
                    "attributes": dict(s.attrib),
                    "properties": {p.get("name"): p.get("value") for p in s.iter("property")},
                    "systemOut": element(s.find("system-out")), "systemErr": element(s.find("system-err")),
                    "cases": [{
                        "attributes": dict(c.attrib), "failure": element(c.find("failure")), "error": element(c.find("error")),
                    } for c in s.findall("testcase")],
                } for s in root.findall("testsuite")],
            }))
            """
        return try json(try python(script, input: xml))
    }

    // MARK: - Formats

    func testEveryFormatHasARendererAndAFileExtensionOfItsOwn() {
        let formats = ReportFormat.allCases
        XCTAssertEqual(Set(formats.map { "\(Swift.type(of: $0.renderer))" }).count, formats.count, "one renderer per format")
        XCTAssertEqual(Set(formats.map(\.fileExtension)).count, formats.count, "one file extension per format")
        XCTAssertTrue(ReportFormat.text.renderer is TextReportRenderer)
        XCTAssertTrue(ReportFormat.html.renderer is HTMLReportRenderer)
        XCTAssertTrue(ReportFormat.sarif.renderer is SARIFReportRenderer)
        XCTAssertTrue(ReportFormat.junit.renderer is JUnitReportRenderer)
        XCTAssertTrue(ReportFormat.github.renderer is GitHubActionsReportRenderer)
    }

    func testModuleNameIsTheNamePartBeforeTheFirstTopLevelDot() {
        XCTAssertEqual(type("App.LoginViewModel", max: 1, peak: 0, atExit: 0).moduleName, "App")
        XCTAssertEqual(type("GenericBoxes.Box<Swift.String>", max: 1, peak: 0, atExit: 0).moduleName, "GenericBoxes")
        XCTAssertNil(type("Tricky \"quoted\" name", max: 1, peak: 0, atExit: 0).moduleName)
        XCTAssertNil(type("Tricky a.b", max: 1, peak: 0, atExit: 0).moduleName, "a space before the dot: no module")
        XCTAssertNil(type("<A.B>", max: 1, peak: 0, atExit: 0).moduleName)
    }

    // MARK: - SARIF

    func testSARIFHasOneResultPerExceededTypeAtItsAllocatingLine() throws {
        let text = SARIFReportRenderer(workingDirectory: Self.cwd).render(leakyReport())
        let log = try json(text)
        XCTAssertEqual(log["$schema"] as? String, "https://json.schemastore.org/sarif-2.1.0.json")
        XCTAssertEqual(log["version"] as? String, "2.1.0")
        let runs = try XCTUnwrap(log["runs"] as? [[String: Any]])
        XCTAssertEqual(runs.count, 1)
        let run = runs[0]
        let driver = try XCTUnwrap((run["tool"] as? [String: Any])?["driver"] as? [String: Any])
        XCTAssertEqual(driver["name"] as? String, "leak-audit")
        XCTAssertEqual(driver["version"] as? String, "0.1.0")
        let rules = try XCTUnwrap(driver["rules"] as? [[String: Any]])
        XCTAssertEqual(rules.map { $0["id"] as? String }, ["budget-exceeded", "test-leaked"])
        let baseIDs = try XCTUnwrap(run["originalUriBaseIds"] as? [String: [String: String]])
        XCTAssertEqual(baseIDs["%SRCROOT%"]?["uri"], "file:///home/dev/project/")

        let results = try XCTUnwrap(run["results"] as? [[String: Any]])
        XCTAssertEqual(results.count, 1, "one result per exceeded type; App.Settings is within budget")
        let result = results[0]
        XCTAssertEqual(result["ruleId"] as? String, "budget-exceeded")
        XCTAssertEqual(result["ruleIndex"] as? Int, 0)
        XCTAssertEqual(result["level"] as? String, "error")
        XCTAssertEqual(
            (result["message"] as? [String: Any])?["text"] as? String,
            "App.LoginViewModel exceeded its budget: max 1 (declared in code), peak 3, alive at exit 2 (2 over budget). "
                + "2 of the 3 alive at the peak were allocated here.")

        let location = try XCTUnwrap((result["locations"] as? [[String: Any]])?.first)
        let physical = try XCTUnwrap(location["physicalLocation"] as? [String: Any])
        let artifact = try XCTUnwrap(physical["artifactLocation"] as? [String: Any])
        // The line that constructed the instances, not the type's own initializer (the same line for
        // every instance).
        XCTAssertEqual(artifact["uri"] as? String, "Sources/App/Presenter.swift")
        XCTAssertEqual(artifact["uriBaseId"] as? String, "%SRCROOT%")
        let region = try XCTUnwrap(physical["region"] as? [String: Any])
        XCTAssertEqual(region["startLine"] as? Int, 29)
        let logical = try XCTUnwrap((location["logicalLocations"] as? [[String: Any]])?.first)
        XCTAssertEqual(logical["fullyQualifiedName"] as? String, "App.Presenter.open(Swift.String) -> ()")

        // The second group's first frame with a source line, outside the working directory.
        let related = try XCTUnwrap(result["relatedLocations"] as? [[String: Any]])
        XCTAssertEqual(related.count, 1)
        let relatedPhysical = try XCTUnwrap(related[0]["physicalLocation"] as? [String: Any])
        XCTAssertEqual(
            (relatedPhysical["artifactLocation"] as? [String: Any])?["uri"] as? String, "file:///elsewhere/Factory.swift")
        XCTAssertNil((relatedPhysical["artifactLocation"] as? [String: Any])?["uriBaseId"])
        XCTAssertEqual((relatedPhysical["region"] as? [String: Any])?["startLine"] as? Int, 7)
        XCTAssertEqual(
            (related[0]["message"] as? [String: Any])?["text"] as? String,
            "1 × allocated at App.Factory.make() at /elsewhere/Factory.swift:7")

        // Every frame of every group is in the stacks; frames without a line have no region.
        let stacks = try XCTUnwrap(result["stacks"] as? [[String: Any]])
        XCTAssertEqual(stacks.map { ($0["frames"] as? [Any])?.count }, [6, 2])
        let thunk = try XCTUnwrap((stacks[0]["frames"] as? [[String: Any]])?[1]["location"] as? [String: Any])
        XCTAssertNil(thunk["physicalLocation"], "<compiler-generated> at line 0 is no place to point at")
        // The code flow reads from the entry point down to the allocation.
        let flow = try XCTUnwrap((result["codeFlows"] as? [[String: Any]])?.first)
        let steps = try XCTUnwrap((flow["threadFlows"] as? [[String: Any]])?.first?["locations"] as? [[String: Any]])
        let lines = steps.compactMap {
            (($0["location"] as? [String: Any])?["physicalLocation"] as? [String: Any]).flatMap {
                ($0["region"] as? [String: Any])?["startLine"] as? Int
            }
        }
        XCTAssertEqual(lines, [43, 29, 11])
        XCTAssertEqual((result["partialFingerprints"] as? [String: String])?["leakAuditType/v1"], "App.LoginViewModel")
        assertValidSARIF(text)
    }

    func testSARIFOfEveryKindOfReportIsValid() {
        let renderer = SARIFReportRenderer(workingDirectory: Self.cwd)
        let noDebugInfo = type(
            "App.Stripped", max: 0, peak: 1, atExit: 1,
            allocations: [.init(count: 1, frames: [frame(nil, nil, nil, address: 0x42, module: nil)], truncated: true)])
        let reports = [
            leakyReport(),
            trickyReport(),
            report(types: [type("App.Settings", max: 1, peak: 1, atExit: 0)]),
            report(types: [noDebugInfo], warnings: ["a warning"]),
            report(outcome: .signaled(signal: 6), notAudited: .neverAttached, warnings: ["w"]),
            report(types: [], tests: testsReport()),
        ]
        for report in reports { assertValidSARIF(renderer.render(report)) }
    }

    func testSARIFWithoutASourceLineLocatesTheType() throws {
        let stripped = type(
            "App.Stripped", max: 0, peak: 1, atExit: 1,
            allocations: [.init(count: 1, frames: [frame("f", nil, nil)], truncated: false)])
        let log = try json(SARIFReportRenderer(workingDirectory: Self.cwd).render(report(types: [stripped])))
        let result = try XCTUnwrap(((log["runs"] as? [[String: Any]])?.first?["results"] as? [[String: Any]])?.first)
        let location = try XCTUnwrap((result["locations"] as? [[String: Any]])?.first)
        XCTAssertNil(location["physicalLocation"])
        let logical = try XCTUnwrap((location["logicalLocations"] as? [[String: Any]])?.first)
        XCTAssertEqual(logical["fullyQualifiedName"] as? String, "App.Stripped")
        XCTAssertEqual(logical["kind"] as? String, "type")
        XCTAssertNil(result["codeFlows"])
    }

    func testSARIFOfACleanRunHasNoResultsAndANotAuditedRunSaysWhy() throws {
        let renderer = SARIFReportRenderer(workingDirectory: Self.cwd)
        let clean = try json(renderer.render(report(types: [type("App.Settings", max: 1, peak: 1, atExit: 0)])))
        let cleanRun = try XCTUnwrap((clean["runs"] as? [[String: Any]])?.first)
        XCTAssertEqual((cleanRun["results"] as? [Any])?.count, 0)
        XCTAssertEqual((cleanRun["invocations"] as? [[String: Any]])?.first?["executionSuccessful"] as? Bool, true)

        let unaudited = try json(renderer.render(report(notAudited: .staticRuntime, warnings: ["careful"])))
        let run = try XCTUnwrap((unaudited["runs"] as? [[String: Any]])?.first)
        XCTAssertEqual((run["results"] as? [Any])?.count, 0)
        let invocation = try XCTUnwrap((run["invocations"] as? [[String: Any]])?.first)
        XCTAssertEqual(invocation["executionSuccessful"] as? Bool, false)
        let notifications = try XCTUnwrap(invocation["toolExecutionNotifications"] as? [[String: Any]])
        XCTAssertEqual(notifications.map { $0["level"] as? String }, ["error", "warning"])
        let reason = try XCTUnwrap((notifications[0]["message"] as? [String: Any])?["text"] as? String)
        XCTAssertTrue(reason.contains("-static-stdlib"), reason)
        XCTAssertEqual((run["properties"] as? [String: Any])?["verdict"] as? String, "notAudited")
    }

    func testSARIFEscapesNamesAndEncodesPaths() throws {
        let text = SARIFReportRenderer(workingDirectory: Self.cwd).render(trickyReport())
        XCTAssertFalse(
            text.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" }, "no raw control characters in the JSON text")
        let log = try json(text)
        let result = try XCTUnwrap(((log["runs"] as? [[String: Any]])?.first?["results"] as? [[String: Any]])?.first)
        XCTAssertEqual(
            (result["properties"] as? [String: Any])?["typeName"] as? String, Self.trickyName, "the exact name round-trips")
        XCTAssertEqual((result["properties"] as? [String: Any])?["budgetPattern"] as? String, "App.*<\"&'>=0")
        let message = try XCTUnwrap((result["message"] as? [String: Any])?["text"] as? String)
        XCTAssertTrue(message.hasPrefix("App.Tricky<\"q\" & 'a', b: 100%>\\u{a}next\\u{9}tab\\u{7}bell"), message)
        XCTAssertTrue(message.contains("from 'App.*<\"&'>=0' (--budget)"), message)
        let artifact = try XCTUnwrap(
            (((result["locations"] as? [[String: Any]])?.first?["physicalLocation"] as? [String: Any])?["artifactLocation"]
                as? [String: Any])?["uri"] as? String)
        XCTAssertEqual(artifact, "Sources/My%20App%2C%20v2%3A%20%C3%9Cn%C3%AF/Tricky%25.swift")
        assertValidSARIF(text)
    }

    // MARK: - Tests (--leaks-per-test)

    private func testsReport() -> [AuditReport.TestReport] {
        [
            .init(name: "AppTests.LoginTests/testOpen", leaked: []),
            .init(
                name: "AppTests.LoginTests/testClose",
                leaked: [
                    .init(
                        type: "App.LoginViewModel", count: 2,
                        allocations: [.init(count: 2, frames: mainStack, truncated: false, test: "AppTests.LoginTests/testClose")]
                    )
                ]),
        ]
    }

    func testLeakingTestsAreResultsTestCasesAndAnnotations() throws {
        let leaky = report(types: [type("App.LoginViewModel", max: 5, peak: 2, atExit: 2)], tests: testsReport())

        let log = try json(SARIFReportRenderer(workingDirectory: Self.cwd).render(leaky))
        let results = try XCTUnwrap((log["runs"] as? [[String: Any]])?.first?["results"] as? [[String: Any]])
        XCTAssertEqual(results.map { $0["ruleId"] as? String }, ["test-leaked"])
        XCTAssertEqual(results.first?["ruleIndex"] as? Int, 1)
        XCTAssertEqual(
            (results.first?["message"] as? [String: Any])?["text"] as? String,
            "AppTests.LoginTests/testClose left 2 App.LoginViewModel alive after it finished. 2 of them were allocated here.")

        let junit = try parseJUnit(JUnitReportRenderer(workingDirectory: Self.cwd).render(leaky))
        let suites = try XCTUnwrap(junit["suites"] as? [[String: Any]])
        XCTAssertEqual(suites.map { ($0["attributes"] as? [String: String])?["name"] }, ["leak-audit", "leak-audit tests"])
        XCTAssertEqual((junit["attributes"] as? [String: String])?["tests"], "3")
        XCTAssertEqual((junit["attributes"] as? [String: String])?["failures"], "1")
        let cases = try XCTUnwrap(suites[1]["cases"] as? [[String: Any]])
        XCTAssertEqual(
            cases.map { ($0["attributes"] as? [String: String])?["classname"] }, ["AppTests.LoginTests", "AppTests.LoginTests"])
        XCTAssertEqual(cases.map { ($0["attributes"] as? [String: String])?["name"] }, ["testOpen", "testClose"])
        XCTAssertTrue(cases[0]["failure"] is NSNull)
        let failure = try XCTUnwrap(cases[1]["failure"] as? [String: Any])
        XCTAssertEqual((failure["attributes"] as? [String: String])?["type"], "test-leaked")
        XCTAssertEqual(
            (failure["attributes"] as? [String: String])?["message"], "left 2 App.LoginViewModel alive after it finished")
        XCTAssertTrue(
            (failure["text"] as? String)?.contains("App.Presenter.open(_:) at Sources/App/Presenter.swift:29") == true)

        let github = GitHubActionsReportRenderer(workingDirectory: Self.cwd).render(leaky)
        let first = try XCTUnwrap(github.split(separator: "\n").first)
        XCTAssertTrue(
            first.hasPrefix(
                "::error file=Sources/App/Presenter.swift,line=29,title=leak-audit%3A AppTests.LoginTests/testClose leaked App.LoginViewModel::LEAKED "
            ), String(first))
    }

    // MARK: - Retainers

    /// Who holds the leaked instances: a global array and a closure cycle.
    private var retainers: [Retainer] {
        [
            Retainer(
                count: 2, root: .init(kind: .global, name: "App.router"),
                path: [
                    .init(via: "App.router", type: "App.AppRouter"),
                    .init(via: "stack", type: "[App.Screen]", isCollectionStorage: true),
                    .init(via: "[i]", type: "App.Screen"), .init(via: "viewModel", type: "App.LoginViewModel"),
                ], retainedBytes: 1_200_000),
            Retainer(
                count: 1, root: .init(kind: .cycle, name: "a cycle of 2 objects that nothing else holds"),
                path: [
                    .init(via: "", type: "App.LoginViewModel"),
                    .init(via: "onFinish", type: "context of closure #1 in App.LoginViewModel.init()"),
                    .init(via: "captured", type: "App.LoginViewModel"),
                ]),
        ]
    }

    func testEveryFormatCarriesWhoHoldsTheInstances() throws {
        var held = type("App.LoginViewModel", max: 1, peak: 3, atExit: 3)
        held.retainers = retainers
        var tests = testsReport()
        tests[1].leaked[0].retainers = retainers
        let leaky = report(types: [held], tests: tests)
        let global =
            "Held by global App.router: AppRouter.stack → [i] Screen.viewModel → LoginViewModel (2 instances, retains 1.2 MB)."
        let cycle =
            "Held by a cycle of 2 objects that nothing else holds: LoginViewModel.onFinish → context of closure #1 in LoginViewModel.init() → (captured) → LoginViewModel (1 instance)."

        let text = TextReportRenderer(workingDirectory: Self.cwd).render(leaky)
        XCTAssertTrue(text.contains("2 × held by global App.router"), text)

        let log = try json(SARIFReportRenderer(workingDirectory: Self.cwd).render(leaky))
        let results = try XCTUnwrap((log["runs"] as? [[String: Any]])?.first?["results"] as? [[String: Any]])
        let messages = results.compactMap { ($0["message"] as? [String: Any])?["text"] as? String }
        XCTAssertEqual(messages.count, 2)
        for message in messages {
            XCTAssertTrue(message.contains(global) && message.contains(cycle), message)
        }
        assertValidSARIF(SARIFReportRenderer(workingDirectory: Self.cwd).render(leaky))

        let junit = JUnitReportRenderer(workingDirectory: Self.cwd).render(leaky)
        let parsed = try parseJUnit(junit)
        let suites = try XCTUnwrap(parsed["suites"] as? [[String: Any]])
        let failures = suites.flatMap { $0["cases"] as? [[String: Any]] ?? [] }.compactMap { $0["failure"] as? [String: Any] }
        XCTAssertEqual(failures.count, 2)
        for failure in failures {
            let message = (failure["attributes"] as? [String: String])?["message"] ?? ""
            XCTAssertTrue(message.contains(global) && message.contains(cycle), message)
            XCTAssertTrue((failure["text"] as? String)?.contains("1 × held by a cycle") == true, "\(failure)")
        }

        let github = GitHubActionsReportRenderer(workingDirectory: Self.cwd).render(leaky)
        let errors = github.split(separator: "\n").filter { $0.hasPrefix("::error") }
        XCTAssertEqual(errors.count, 2)
        for error in errors { XCTAssertTrue(error.contains("held by global App.router"), String(error)) }
    }

    func testUnreachableGroupsAreResultsATestCaseAndAnnotations() throws {
        let report = GoldenOutputTests.unreachable()
        let sarif = SARIFReportRenderer(workingDirectory: Self.cwd).render(report)
        assertValidSARIF(sarif)
        assertValidSARIF(SARIFReportRenderer(workingDirectory: Self.cwd).render(GoldenOutputTests.unreachableUnwatched()))
        let run = try XCTUnwrap((try json(sarif)["runs"] as? [[String: Any]])?.first)
        let rules = try XCTUnwrap(((run["tool"] as? [String: Any])?["driver"] as? [String: Any])?["rules"] as? [[String: Any]])
        let results = try XCTUnwrap(run["results"] as? [[String: Any]])
        XCTAssertEqual(results.count, 4, "one result per group of the program's types, none for the internal one")
        for result in results {
            let index = try XCTUnwrap(result["ruleIndex"] as? Int)
            XCTAssertEqual(rules[index]["id"] as? String, "unreachable-objects")
            XCTAssertEqual(result["ruleId"] as? String, "unreachable-objects")
        }
        let first = results[0]
        let region =
            (((first["locations"] as? [[String: Any]])?.first?["physicalLocation"] as? [String: Any])?["region"]
                as? [String: Any])
        XCTAssertEqual(region?["startLine"] as? Int, 21, "the line that constructed the pairs")
        XCTAssertEqual(
            (first["partialFingerprints"] as? [String: String])?["leakAuditUnreachable/v1"],
            "cycle App.PairA.other → App.PairB.other → App.PairA")
        XCTAssertEqual(results.compactMap { $0["baselineState"] as? String }, ["new", "updated", "unchanged"])
        XCTAssertEqual(results.filter { $0["suppressions"] != nil }.count, 1)
        // A run that did not check declares no such rule.
        let unchecked = try json(SARIFReportRenderer(workingDirectory: Self.cwd).render(leakyReport()))
        let declared =
            ((((unchecked["runs"] as? [[String: Any]])?.first?["tool"] as? [String: Any])?["driver"]
            as? [String: Any])?["rules"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
        XCTAssertEqual(declared, ["budget-exceeded", "test-leaked"])

        let parsed = try parseJUnit(JUnitReportRenderer(workingDirectory: Self.cwd).render(report))
        let cases = try XCTUnwrap((parsed["suites"] as? [[String: Any]])?.first?["cases"] as? [[String: Any]])
        let unreachable = try XCTUnwrap(
            cases.first { ($0["attributes"] as? [String: String])?["name"] == "unreachable objects" })
        let failure = try XCTUnwrap(unreachable["failure"] as? [String: Any])
        XCTAssertEqual((failure["attributes"] as? [String: String])?["type"], "unreachable-objects")
        XCTAssertTrue(
            (failure["text"] as? String)?.contains("UNREACHABLE 3 × cycle of 2 objects (288 bytes): PairA.other") == true,
            "\(failure)")
        let none = try parseJUnit(JUnitReportRenderer(workingDirectory: Self.cwd).render(GoldenOutputTests.unreachableNone()))
        let passing = try XCTUnwrap((none["suites"] as? [[String: Any]])?.first?["cases"] as? [[String: Any]])
        XCTAssertEqual(passing.count, 1)
        XCTAssertTrue(passing[0]["failure"] is NSNull, "nothing of the program's types: the check passes")

        let github = GitHubActionsReportRenderer(workingDirectory: Self.cwd).render(report).split(separator: "\n")
        XCTAssertEqual(
            github.filter { $0.hasPrefix("::error") }.map { $0.split(separator: ",title=").first.map(String.init) },
            ["::error file=Sources/App/Pairs.swift,line=21,col=17", "::error file=Sources/App/main.swift,line=12"])
        XCTAssertEqual(github.filter { $0.hasPrefix("::notice") }.count, 4, "baselined, suppressed, gone, the verdict")
    }

    // MARK: - JUnit

    func testJUnitHasOneTestCasePerTypeWithCountsAndTheStackInTheFailure() throws {
        let xml = JUnitReportRenderer(workingDirectory: Self.cwd).render(leakyReport())
        XCTAssertTrue(xml.hasPrefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites "), xml)
        let document = try parseJUnit(xml)
        XCTAssertEqual(document["tag"] as? String, "testsuites")
        let counts = ["tests": "2", "failures": "1", "errors": "0", "skipped": "0", "time": "0"]
        let rootAttributes = try XCTUnwrap(document["attributes"] as? [String: String])
        for (key, value) in counts { XCTAssertEqual(rootAttributes[key], value, key) }
        let suites = try XCTUnwrap(document["suites"] as? [[String: Any]])
        XCTAssertEqual(suites.count, 1)
        let suite = suites[0]
        let attributes = try XCTUnwrap(suite["attributes"] as? [String: String])
        XCTAssertEqual(attributes["name"], "leak-audit")
        for (key, value) in counts { XCTAssertEqual(attributes[key], value, key) }
        XCTAssertEqual((suite["properties"] as? [String: String])?["target"], ".build/debug/App")

        let cases = try XCTUnwrap(suite["cases"] as? [[String: Any]])
        XCTAssertEqual(cases.map { ($0["attributes"] as? [String: String])?["classname"] }, ["App", "App"])
        XCTAssertEqual(cases.map { ($0["attributes"] as? [String: String])?["name"] }, ["App.LoginViewModel", "App.Settings"])
        let failure = try XCTUnwrap(cases[0]["failure"] as? [String: Any])
        XCTAssertEqual(
            failure["attributes"] as? [String: String],
            ["message": "max 1, peak 3, alive at exit 2 (2 over budget)", "type": "budget-exceeded"])
        let body = try XCTUnwrap(failure["text"] as? String)
        XCTAssertTrue(body.hasPrefix("EXCEEDED App.LoginViewModel: max 1, peak 3, alive at exit 2\n"), body)
        XCTAssertTrue(body.contains("App.Presenter.open(_:) at Sources/App/Presenter.swift:29"), body)
        XCTAssertTrue(body.contains("App.Factory.make() at /elsewhere/Factory.swift:7"), body)
        XCTAssertTrue(cases[1]["failure"] is NSNull)
        XCTAssertTrue(cases[1]["error"] is NSNull)
    }

    func testJUnitEscapesEverythingAndDropsWhatXMLCannotHold() throws {
        let xml = JUnitReportRenderer(workingDirectory: Self.cwd).render(trickyReport())
        XCTAssertFalse(
            xml.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\n") || $0.value == 0xFFFE }, "nothing XML 1.0 forbids")
        let document = try parseJUnit(xml)
        let suite = try XCTUnwrap((document["suites"] as? [[String: Any]])?.first)
        let testCase = try XCTUnwrap((suite["cases"] as? [[String: Any]])?.first)
        let attributes = try XCTUnwrap(testCase["attributes"] as? [String: String])
        // Quotes, markup, the line break and the tab survive exactly; the bell and U+FFFE cannot.
        XCTAssertEqual(attributes["name"], "App.Tricky<\"q\" & 'a', b: 100%>\nnext\ttab\\u{7}bell\\u{fffe} ünï 🦊")
        XCTAssertEqual(attributes["classname"], "App")
        XCTAssertEqual((suite["properties"] as? [String: String])?["target"], "./run <&> \"me\"")
        let failure = try XCTUnwrap(testCase["failure"] as? [String: Any])
        XCTAssertEqual(
            (failure["attributes"] as? [String: String])?["message"],
            "max 0 from 'App.*<\"&'>=0' (--budget), peak 1, alive at exit 1 (1 over budget)")
        let body = try XCTUnwrap(failure["text"] as? String)
        XCTAssertTrue(body.contains("App.f<A>(_:) at Sources/My App, v2: Ünï/Tricky%.swift:3"), body)
        let census = try XCTUnwrap((suite["systemOut"] as? [String: Any])?["text"] as? String)
        XCTAssertTrue(census.hasPrefix("census: 2 instances of 1 type alive at exit\n  2 App.Cache<&>"), census)
        let warnings = try XCTUnwrap((suite["systemErr"] as? [String: Any])?["text"] as? String)
        XCTAssertEqual(warnings, "warning: pattern 'X' matched no type\nsecond line: 100%")
    }

    func testJUnitEscapingFunctions() {
        XCTAssertEqual(JUnitReportRenderer.attribute("a\"b'c<d>e&f\tg\nh\ri"), "a&quot;b&apos;c&lt;d&gt;e&amp;f&#9;g&#10;h&#13;i")
        XCTAssertEqual(JUnitReportRenderer.text("a\"b'c<d>e&f\tg\nh\ri"), "a\"b'c&lt;d&gt;e&amp;f\tg\nh&#13;i")
        XCTAssertEqual(JUnitReportRenderer.text("\u{0}\u{1B}[31m\u{FFFF}é"), "\\u{0}\\u{1b}[31m\\u{ffff}é")
        XCTAssertEqual(JUnitReportRenderer.text("]]>"), "]]&gt;")
    }

    func testJUnitOfAnUnauditedTargetIsOneError() throws {
        let xml = JUnitReportRenderer(workingDirectory: Self.cwd)
            .render(report(outcome: .exited(code: 3), notAudited: .neverAttached))
        let document = try parseJUnit(xml)
        XCTAssertEqual((document["attributes"] as? [String: String])?["errors"], "1")
        XCTAssertEqual((document["attributes"] as? [String: String])?["tests"], "1")
        let suite = try XCTUnwrap((document["suites"] as? [[String: Any]])?.first)
        let testCase = try XCTUnwrap((suite["cases"] as? [[String: Any]])?.first)
        XCTAssertEqual((testCase["attributes"] as? [String: String])?["name"], ".build/debug/App")
        let error = try XCTUnwrap(testCase["error"] as? [String: Any])
        XCTAssertEqual((error["attributes"] as? [String: String])?["type"], "not-audited")
        XCTAssertTrue((error["text"] as? String)?.contains("so nothing was audited") == true)
        XCTAssertEqual((suite["systemErr"] as? [String: Any])?["text"] as? String, "the target exited with code 3")
    }

    // MARK: - GitHub Actions

    func testGitHubAnnotatesTheAllocatingLineAndEndsWithANotice() {
        let text = GitHubActionsReportRenderer(workingDirectory: Self.cwd).render(leakyReport())
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(
            lines,
            [
                // At the line that constructed the instances.
                "::error file=Sources/App/Presenter.swift,line=29,title=leak-audit%3A App.LoginViewModel over budget::"
                    + "EXCEEDED App.LoginViewModel: max 1, peak 3, alive at exit 2%0A"
                    + "  3 alive at the peak (2 over budget), allocated at:%0A"
                    + "  2 × allocated at%0A"
                    + "      App.Presenter.open(_:) at Sources/App/Presenter.swift:29%0A"
                    + "      App_main at Sources/App/main.swift:43%0A"
                    + "  1 × allocated at%0A"
                    + "      App.Factory.make() at /elsewhere/Factory.swift:7%0A"
                    + "      … (deeper frames not recorded)",
                "::notice title=leak-audit::1 of 2 tracked types over budget; '.build/debug/App' exited with code 0",
                "",
            ])
    }

    func testGitHubCleanRunPrintsOnlyTheNotice() {
        let text = GitHubActionsReportRenderer(workingDirectory: Self.cwd)
            .render(report(types: [type("App.Settings", max: 1, peak: 1, atExit: 0)]))
        XCTAssertEqual(
            text, "::notice title=leak-audit::no type over budget (1 tracked); '.build/debug/App' exited with code 0\n")
    }

    func testGitHubEscapesPropertiesAndMessages() throws {
        let text = GitHubActionsReportRenderer(workingDirectory: Self.cwd).render(trickyReport())
        let lines = text.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 3, "an error, a warning and the notice, each on one line: \(lines)")
        XCTAssertFalse(text.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" }, "no raw control characters")
        let error = lines[0]
        XCTAssertTrue(error.hasPrefix("::error file=Sources/My App%2C v2%3A Ünï/Tricky%25.swift,line=3,title="), error)
        XCTAssertTrue(
            error.contains(
                ",title=leak-audit%3A App.Tricky<\"q\" & 'a'%2C b%3A 100%25>\\u{a}next\\u{9}tab\\u{7}bell\u{FFFE} ünï 🦊 over budget::"
            ), error)
        XCTAssertTrue(error.contains("::EXCEEDED App.Tricky<\"q\" & 'a', b: 100%25>\\u{a}next"), error)
        XCTAssertEqual(lines[1], "::warning title=leak-audit::pattern 'X' matched no type%0Asecond line: 100%25")
        XCTAssertTrue(lines[2].hasPrefix("::notice title=leak-audit::1 of 1 tracked type over budget; './run <&> \"me\"'"))

        XCTAssertEqual(GitHubActionsReportRenderer.escapedProperty("a:b,c%d\re\nf"), "a%3Ab%2Cc%25d%0De%0Af")
        XCTAssertEqual(GitHubActionsReportRenderer.escapedData("a:b,c%d\re\nf"), "a:b,c%25d%0De%0Af")
    }

    func testGitHubWithoutASourceFrameOrAnAuditIsAnErrorWithoutAFile() {
        let renderer = GitHubActionsReportRenderer(workingDirectory: Self.cwd)
        let stripped = type(
            "App.Stripped", max: 0, peak: 1, atExit: 1,
            allocations: [.init(count: 1, frames: [frame("f", nil, nil)], truncated: false)])
        let lines = renderer.render(report(types: [stripped])).split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 2)
        XCTAssertTrue(lines[0].hasPrefix("::error title=leak-audit%3A App.Stripped over budget::EXCEEDED App.Stripped"), lines[0])

        let unaudited = renderer.render(report(notAudited: .neverAttached)).split(separator: "\n").map(String.init)
        XCTAssertEqual(unaudited.count, 2)
        XCTAssertTrue(
            unaudited[0].hasPrefix(
                "::error title=leak-audit%3A not audited::leak-audit: '.build/debug/App' started no Swift program whose types opted in"
            ), unaudited[0])
        XCTAssertTrue(unaudited[1].hasPrefix("::notice title=leak-audit::not audited;"), unaudited[1])
    }

    /// A test's leak whose instances a library constructed is located at the test's own line in
    /// SARIF and GitHub annotations, with the constructing line related (SARIF).
    func testATestsLeakMadeByALibraryIsLocatedAtTheTest() throws {
        let stack = [
            frame("Lib.Histogram.init() -> Lib.Histogram", "\(Self.cwd)/Sources/Lib/Histogram.swift", 5),
            frame("Lib.Registry.makeHistogram(name: Swift.String) -> Lib.Histogram", "\(Self.cwd)/Sources/Lib/Registry.swift", 9),
            frame("AppTests.MetricsTests.testRecords() -> ()", "\(Self.cwd)/Tests/AppTests/MetricsTests.swift", 12),
        ]
        let leak = AuditReport.TestReport.LeakedType(
            type: "Lib.Histogram", count: 1,
            allocations: [.init(count: 1, frames: stack, truncated: false, test: "AppTests.MetricsTests/testRecords")])
        let report = report(tests: [.init(name: "AppTests.MetricsTests/testRecords", leaked: [leak])])
        let sarif = try json(SARIFReportRenderer(workingDirectory: Self.cwd).render(report))
        let result = try XCTUnwrap(((sarif["runs"] as? [[String: Any]])?.first?["results"] as? [[String: Any]])?.first)
        func place(_ location: [String: Any]?) -> String? {
            let physical = location?["physicalLocation"] as? [String: Any]
            let file = (physical?["artifactLocation"] as? [String: Any])?["uri"] as? String
            let line = (physical?["region"] as? [String: Any])?["startLine"] as? Int
            return file.map { "\($0):\(line ?? 0)" }
        }
        XCTAssertEqual(place((result["locations"] as? [[String: Any]])?.first), "Tests/AppTests/MetricsTests.swift:12")
        XCTAssertEqual(
            (result["relatedLocations"] as? [[String: Any]])?.compactMap(place), ["Sources/Lib/Registry.swift:9"])
        let github = GitHubActionsReportRenderer(workingDirectory: Self.cwd).render(report)
        XCTAssertTrue(github.hasPrefix("::error file=Tests/AppTests/MetricsTests.swift,line=12,"), github)
    }
}
