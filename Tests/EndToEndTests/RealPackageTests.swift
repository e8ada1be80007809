import Foundation
import LeakAuditModel
import XCTest

/// leak-audit on real packages' test suites, run as a user runs it: apple/swift-log (Swift Testing
/// only) and apple/swift-argument-parser (XCTest only), cloned at a fixed version from the
/// machine's package copies (/opt/swift-packages, no network) and built once per test process.
/// Each run must execute the package's tests, leave them passing, exit 0 with no test blamed, and
/// name the package's own types in the census.
final class RealPackageTests: XCTestCase {
    func testSwiftLogUnderSwiftTestWithCensusAndLeaksPerTest() throws {
        let package = try RealPackage.swiftLog.prepared()
        // The library's own types are budgeted: its lazily created globals (locks, the metadata
        // provider box, the logger storage) must be reported as global state, not as any test's leak.
        let audit = try Harness.audit(
            path: "swift", ["test", "--skip-build", "--package-path", package.path],
            extraOptions: ["--census", "--leaks-per-test", "--budget", "Logging.*=1000"], directory: package.path)
        XCTAssertEqual(audit.status, 0, audit.stderr)
        let ran = try XCTUnwrap(Self.swiftTestingCount(audit.stdout), audit.stdout)
        XCTAssertGreaterThan(ran, 100)
        XCTAssertEqual(audit.report.target.testsRun, ran, "every test Swift Testing ran, and no other")
        let processes = audit.report.target.processes
        XCTAssertEqual(processes.map(\.testingLibrary), [.xctest, .swiftTesting], "\(processes)")
        XCTAssertTrue(processes.allSatisfy { $0.commandLine.first?.hasSuffix("/swift-logPackageTests.xctest") == true })
        let tests = try XCTUnwrap(audit.report.tests)
        XCTAssertEqual(tests.filter(\.ran).count, ran)
        let blamed = tests.filter { !$0.leaked.isEmpty }.map(\.name)
        XCTAssertEqual(blamed, [], "no test is blamed for the library's one-time globals")
        let global = tests.flatMap(\.globalState).map(\.type)
        XCTAssertTrue(global.contains { $0.hasPrefix("Logging.") }, "\(global)")
        let names = (audit.report.census?.entries ?? []).map(\.name)
        XCTAssertTrue(names.contains { $0.hasPrefix("Logging.") || $0.hasPrefix("LoggingTests.") }, "\(names)")
        XCTAssertFalse(names.contains { $0.hasPrefix("PackageDescription.") }, "\(names)")
    }

    func testSwiftLogThroughThePlugin() throws {
        let package = try RealPackage.swiftLog.prepared()
        let result = Harness.run(["swift", "package", "leak-audit", "--census", "--leaks-per-test"], directory: package.path)
        XCTAssertEqual(result.status, 0, result.log)
        let ran = try XCTUnwrap(Self.swiftTestingCount(result.stdout), result.log)
        // The report's lines wrap at 80 columns in a log: read them whole.
        let report = result.stderr.replacingOccurrences(of: "\n  ", with: " ")
        XCTAssertTrue(report.contains("\(ran) tests ran"), result.log)
        XCTAssertTrue(report.contains("tests: 0 of \(ran) tests left instances alive"), result.log)
        XCTAssertTrue(report.contains("(Swift Testing, \(ran) tests)"), result.log)
        XCTAssertTrue(report.contains("census: "), result.log)
    }

    func testSwiftArgumentParserBundleWithCensusAndLeaksPerTest() throws {
        let package = try RealPackage.swiftArgumentParser.prepared()
        // Its end-to-end tests start the example programs from the bin directory: the bundle stays there.
        let bundle = try RealPackage.swiftArgumentParser.testBundle()
        let audit = try Harness.audit(
            path: bundle, extraOptions: ["--census", "--leaks-per-test", "--budget", "ArgumentParser*=100000"],
            directory: package.path)
        XCTAssertEqual(audit.status, 0, audit.stderr)
        let ran = try XCTUnwrap(Self.xctestCount(audit.stdout), audit.stdout)
        XCTAssertGreaterThan(ran, 100)
        XCTAssertEqual(audit.report.target.testsRun, ran)
        let tests = try XCTUnwrap(audit.report.tests)
        XCTAssertEqual(tests.count, ran)
        let blamed = tests.filter { !$0.leaked.isEmpty }.map(\.name)
        XCTAssertEqual(blamed, [])
        // XCTest keeps one test case object per test: folded, never listed as survivors.
        let folded = audit.report.census?.foldedTestCaseInstances
        XCTAssertEqual(folded, ran)
        let names = (audit.report.census?.entries ?? []).map(\.name)
        XCTAssertTrue(names.contains { $0.hasPrefix("ArgumentParser") }, "\(names)")
    }

    func testSwiftArgumentParserUnderSwiftTest() throws {
        let package = try RealPackage.swiftArgumentParser.prepared()
        let audit = try Harness.audit(
            path: "swift", ["test", "--skip-build", "--package-path", package.path], extraOptions: ["--census"],
            directory: package.path)
        XCTAssertEqual(audit.status, 0, audit.stderr)
        let ran = try XCTUnwrap(Self.xctestCount(audit.stdout), audit.stdout)
        XCTAssertEqual(audit.report.target.testsRun, ran)
        XCTAssertFalse(
            (audit.report.census?.entries ?? []).contains { $0.name.hasPrefix("PackageDescription.") },
            "SwiftPM's manifest is not audited")
        let text = Harness.run(
            [Harness.leakAudit, "run", "--census", "swift", "test", "--skip-build", "--package-path", package.path],
            directory: package.path)
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stderr.replacingOccurrences(of: "\n  ", with: " ").contains("\(ran) tests ran"), text.stderr)
    }

    /// `Executed N tests` from XCTest's last summary line.
    static func xctestCount(_ output: String) -> Int? {
        output.components(separatedBy: "\n").reversed().lazy.compactMap { line -> Int? in
            guard let range = line.range(of: "Executed ") else { return nil }
            return Int(line[range.upperBound...].prefix { $0.isNumber })
        }.first
    }

    /// `Test run with N tests` from Swift Testing's summary.
    static func swiftTestingCount(_ output: String) -> Int? {
        guard let range = output.range(of: "Test run with ", options: .backwards) else { return nil }
        return Int(output[range.upperBound...].prefix { $0.isNumber })
    }
}

/// A real package from the machine's copies, cloned into leak-audit's build directory (kept between
/// runs of the tests on one machine; a fresh clone of leak-audit makes it anew), with leak-audit
/// added as a dependency so that its plugin can run, and its tests built once.
struct RealPackage: Sendable {
    var owner: String
    var name: String
    var version: String
    /// Whether leak-audit can be added as a dependency (it cannot to a package it depends on).
    var addsLeakAudit: Bool

    static let swiftLog = RealPackage(owner: "apple", name: "swift-log", version: "1.16.2", addsLeakAudit: true)
    static let swiftArgumentParser = RealPackage(
        owner: "apple", name: "swift-argument-parser", version: "1.8.2", addsLeakAudit: false)

    static let copies = "/opt/swift-packages"

    var directory: URL {
        Harness.packageRoot.appendingPathComponent(".build/real-packages/\(name)-\(version)")
    }

    /// The cloned and built package; each package is prepared once per test process.
    func prepared() throws -> URL {
        try RealPackage.lock.withLock {
            if let result = RealPackage.prepared[name] { return try result.get() }
            let result = Result { try prepare() }
            RealPackage.prepared[name] = result
            return try result.get()
        }
    }

    /// The package's XCTest bundle, after `prepared()`.
    func testBundle() throws -> String {
        let bin = Harness.run(["swift", "build", "--show-bin-path", "--package-path", directory.path])
        return bin.stdout.trimmingCharacters(in: .whitespacesAndNewlines) + "/\(name)PackageTests.xctest"
    }

    private func prepare() throws -> URL {
        let origin = "\(Self.copies)/\(owner)/\(name).git"
        guard FileManager.default.fileExists(atPath: origin) else {
            // CI (.ci/run) requires them; a developer's machine without the copies skips.
            if ProcessInfo.processInfo.environment["LEAK_AUDIT_REQUIRE_REAL_PACKAGES"] == "1" {
                throw HarnessError.buildFailed("no copy of \(owner)/\(name) at \(origin)")
            }
            throw XCTSkip("no copy of \(owner)/\(name) at \(origin); the machine's package copies are needed")
        }
        let path = directory.path
        if !FileManager.default.fileExists(atPath: path + "/Package.swift") {
            try? FileManager.default.removeItem(atPath: path)
            let clone = Harness.run(["git", "clone", "-q", origin, path])
            guard clone.status == 0 else { throw HarnessError.buildFailed(clone.log) }
            let checkout = Harness.run(["git", "-C", path, "checkout", "-q", version])
            guard checkout.status == 0 else { throw HarnessError.buildFailed(checkout.log) }
            if addsLeakAudit {
                let manifest = URL(fileURLWithPath: path + "/Package.swift")
                var text = try String(contentsOf: manifest, encoding: .utf8)
                text +=
                    "\npackage.dependencies.append(.package(name: \"leak-audit\", path: \(String(reflecting: Harness.packageRoot.path))))\n"
                try text.write(to: manifest, atomically: true, encoding: .utf8)
            }
        }
        let build = Harness.run(["swift", "build", "--build-tests", "--package-path", path])
        guard build.status == 0 else { throw HarnessError.buildFailed(build.log) }
        return directory
    }

    private static let lock = NSLock()
    nonisolated(unsafe) private static var prepared: [String: Result<URL, Error>] = [:]
}
