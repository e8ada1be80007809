import Foundation
import LeakAuditModel
import LeakAuditRendering
import Synchronization
import XCTest

/// Builds Fixtures/ once per test process and runs the real leak-audit executable on it.
enum Harness {
    /// The package root, found from this file's path.
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static var fixturesRoot: URL { packageRoot.appendingPathComponent("Fixtures") }

    /// leak-audit as built for this test run: it sits beside the test bundle.
    static var leakAudit: String {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        let candidates = [bundle.deletingLastPathComponent(), bundle.deletingLastPathComponent().deletingLastPathComponent()]
        for directory in candidates {
            let path = directory.appendingPathComponent("leak-audit").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return packageRoot.appendingPathComponent(".build/debug/leak-audit").path
    }

    /// The fixtures' products directory, after building them (once) with their tests.
    static let fixturesBinDirectory: Result<String, Error> = {
        let build = run(["swift", "build", "--build-tests", "--package-path", fixturesRoot.path])
        guard build.status == 0 else {
            return .failure(HarnessError.buildFailed(build.stderr + build.stdout))
        }
        let path = run(["swift", "build", "--show-bin-path", "--package-path", fixturesRoot.path])
        return .success(path.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    }()

    /// A fixture product built with `swift build -c release`, built once per product.
    static func releaseFixture(_ name: String) throws -> String {
        releaseLock.lock()
        defer { releaseLock.unlock() }
        let build = run(["swift", "build", "-c", "release", "--product", name, "--package-path", fixturesRoot.path])
        guard build.status == 0 else { throw HarnessError.buildFailed(build.stderr + build.stdout) }
        let path = run(["swift", "build", "-c", "release", "--show-bin-path", "--package-path", fixturesRoot.path])
        return path.stdout.trimmingCharacters(in: .whitespacesAndNewlines) + "/" + name
    }

    private static let releaseLock = NSLock()

    /// This test process's directory for the files its tests write, removed when the process exits.
    static let scratchDirectory: URL = {
        // mkdtemp's six characters rather than a UUID: text reports shorten paths too wide for a line.
        let temporary = FileManager.default.temporaryDirectory
        var template = Array(temporary.appendingPathComponent("leak-audit-tests-XXXXXX").path.utf8CString)
        let path = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!).map { String(cString: $0) } }
        guard let path else { fatalError("cannot make a scratch directory: \(String(cString: strerror(errno)))") }
        atexit { try? FileManager.default.removeItem(at: Harness.scratchDirectory) }
        return URL(fileURLWithPath: path)
    }()

    private static let scratchPaths = Atomic(0)

    /// A new path in `scratchDirectory` whose last component ends with `name`: nothing is there yet.
    static func scratchPath(_ name: String) -> String {
        let (number, _) = scratchPaths.add(1, ordering: .relaxed)
        return scratchDirectory.appendingPathComponent("\(number)-\(name)").path
    }

    /// A new empty folder in `scratchDirectory` whose name ends with `name`, for a test's files.
    static func scratchFolder(_ name: String) throws -> String {
        let path = scratchPath(name)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        return path
    }

    /// The path of fixture product `name`.
    static func fixture(_ name: String) throws -> String {
        try fixturesBinDirectory.get() + "/" + name
    }

    struct CommandResult {
        var status: Int32
        var stdout: String
        var stderr: String

        /// Both streams, for failure messages.
        var log: String { "status \(status)\n--- stdout\n\(stdout)\n--- stderr\n\(stderr)" }
    }

    /// Runs a command to completion, capturing its output.
    static func run(_ arguments: [String], environment: [String: String]? = nil, directory: String? = nil) -> CommandResult {
        let process = Process()
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        // SwiftPM and the driver leave TemporaryDirectory.* and lock files in TMPDIR (swiftlang/swift-driver#2049):
        // children's temporary files go where this process's do.
        var environment = environment ?? ProcessInfo.processInfo.environment
        environment["TMPDIR"] = scratchDirectory.path
        process.environment = environment
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { return CommandResult(status: -1, stdout: "", stderr: "\(error)") }
        // Read both pipes concurrently so that neither fills up and blocks the child.
        nonisolated(unsafe) var errData = Data()
        let reader = Thread { errData = err.fileHandleForReading.readDataToEndOfFile() }
        reader.start()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while !reader.isFinished { usleep(1_000) }
        return CommandResult(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }

    /// A text report's words, each line's wrapping and indentation undone: a sentence is looked
    /// for whatever width broke it.
    static func prose(_ text: String) -> String {
        text.split(whereSeparator: { $0 == " " || $0 == "\n" }).joined(separator: " ")
    }

    /// One run of leak-audit with a JSON report written to a file in `scratchDirectory`.
    struct Audit {
        var status: Int32
        var stdout: String
        var stderr: String
        /// The report's file: for the tests of its exact bytes (escaping, shape); the others
        /// assert through `report`.
        var jsonPath: String
        /// The report, as leak-audit's own reader (`leak-audit report`'s) reads the file back.
        var report: AuditReport

        /// The tracked type whose name ends with `suffix`.
        func trackedType(_ suffix: String, file: StaticString = #filePath, line: UInt = #line) throws
            -> AuditReport.TrackedType
        {
            let match = report.types.first { $0.name.hasSuffix(suffix) }
            return try XCTUnwrap(match, "no type named …\(suffix) in \(report.types.map(\.name))", file: file, line: line)
        }

        /// The census entry whose name ends with `suffix`.
        func censusEntry(_ suffix: String, file: StaticString = #filePath, line: UInt = #line) throws
            -> AuditReport.CensusEntry
        {
            let entries = report.census?.entries ?? []
            let match = entries.first { $0.name.hasSuffix(suffix) }
            return try XCTUnwrap(match, "no census entry named …\(suffix) in \(entries.map(\.name))", file: file, line: line)
        }

    }

    /// Runs `leak-audit run --format json --output TMP fixture arguments…` and reads the report.
    static func audit(_ fixture: String, _ arguments: [String] = [], extraOptions: [String] = []) throws -> Audit {
        try audit(path: try self.fixture(fixture), arguments, extraOptions: extraOptions)
    }

    /// Runs `leak-audit run --format json --output TMP path arguments…` and reads the report.
    static func audit(
        path: String, _ arguments: [String] = [], extraOptions: [String] = [], environment: [String: String] = [:],
        directory: String? = nil
    ) throws -> Audit {
        let jsonPath = scratchPath("report.json")
        let result = run(
            [leakAudit, "run", "--format", "json", "--output", jsonPath] + extraOptions + [path] + arguments,
            environment: environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { $1 },
            directory: directory)
        let report = try readReport(jsonPath)
        return Audit(status: result.status, stdout: result.stdout, stderr: result.stderr, jsonPath: jsonPath, report: report)
    }

    /// Reads the JSON report at `path` with leak-audit's reader, after checking it against
    /// docs/report-schema.json.
    static func readReport(_ path: String) throws -> AuditReport {
        try validateAgainstSchema(path)
        return try JSONReportReader().read(path: path)
    }

    /// Validates a JSON file against a JSON Schema (draft 2020-12) of docs/, by default the
    /// report's, with Python's jsonschema.
    static func validateAgainstSchema(_ jsonPath: String, schema schemaFile: String = "docs/report-schema.json") throws {
        let schema = packageRoot.appendingPathComponent(schemaFile).path
        let script = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            jsonschema.Draft202012Validator.check_schema(schema)
            jsonschema.Draft202012Validator(schema).validate(json.load(open(sys.argv[2])))
            """
        let result = run(["python3", "-c", script, schema, jsonPath])
        if result.status != 0 { throw HarnessError.schemaViolation(schema: schemaFile, log: result.stderr) }
    }

    /// The official SARIF 2.1.0 schema: the copy in docs/, or the shared one beside the repository.
    static var sarifSchemaPath: String {
        let copy = packageRoot.appendingPathComponent("docs/sarif-schema-2.1.0.json").path
        if FileManager.default.fileExists(atPath: copy) { return copy }
        return packageRoot.deletingLastPathComponent().appendingPathComponent("shared/schemas/sarif-schema-2.1.0.json").path
    }

    /// Validates a SARIF log against the SARIF 2.1.0 schema (draft-07) with Python's jsonschema.
    static func validateAgainstSARIFSchema(_ sarifPath: String) throws {
        let script = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            jsonschema.Draft7Validator.check_schema(schema)
            validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
            errors = list(validator.iter_errors(json.load(open(sys.argv[2]))))
            for error in errors: print(list(error.path), error.message, file=sys.stderr)
            sys.exit(1 if errors else 0)
            """
        let result = run(["python3", "-c", script, sarifSchemaPath, sarifPath])
        if result.status != 0 { throw HarnessError.sarifSchemaViolation(result.stderr) }
    }

    /// The 1-based line of the first line in a fixture source that contains `text`.
    static func line(of text: String, inFixtureSource relativePath: String) throws -> Int {
        let source = try String(contentsOf: fixturesRoot.appendingPathComponent(relativePath), encoding: .utf8)
        let lines = source.components(separatedBy: "\n")
        guard let index = lines.firstIndex(where: { $0.contains(text) }) else { throw HarnessError.missingText(text) }
        return index + 1
    }
}

enum HarnessError: Error, CustomStringConvertible {
    case buildFailed(String)
    case schemaViolation(schema: String, log: String)
    case sarifSchemaViolation(String)
    case missingText(String)

    var description: String {
        switch self {
        case .buildFailed(let log): "building Fixtures failed:\n\(log)"
        case .schemaViolation(let schema, let log): "the file does not match \(schema):\n\(log)"
        case .sarifSchemaViolation(let log): "SARIF log does not match the SARIF 2.1.0 schema:\n\(log)"
        case .missingText(let text): "fixture source has no line containing '\(text)'"
        }
    }
}

extension TargetOutcome {
    /// The status the target exited with; nil when a signal ended it.
    var exitCode: Int32? { if case .exited(let code) = self { code } else { nil } }
    /// The signal that ended the target; nil when it exited.
    var signal: Int32? { if case .signaled(let signal) = self { signal } else { nil } }
}
