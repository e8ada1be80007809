import Foundation
import LeakAuditModel
import XCTest

/// `swift package leak-audit` on a package that depends on this one by path, as a user's would:
/// one build of that package, then the plugin on its leaky test, its clean twin, and a budget for
/// a type that never opted in.
final class PluginTests: XCTestCase {
    func testPluginBuildsTestsAndRunsThemUnderLeakAudit() throws {
        let package = try ProbePackage.write()
        let jsonPath = package.appendingPathComponent("leaks.json").path

        // Every test, with report options passed through: the first invocation builds everything.
        let leaky = swiftPackageLeakAudit(["--format", "json", "--output", jsonPath], in: package)
        // SwiftPM reduces any failing plugin to exit status 1 (swiftlang/swift-package-manager#7380); the
        // plugin names leak-audit's own status in its error.
        XCTAssertEqual(leaky.status, 1, leaky.log)
        XCTAssertTrue(
            leaky.stderr.contains(
                "leak-audit exited with code 1: leaks found: a type exceeded its budget or tests left instances alive"), leaky.log
        )
        XCTAssertTrue(leaky.stdout.contains("Executed 3 tests, with 0 failures"), leaky.log)
        let report = try Harness.readReport(jsonPath)
        XCTAssertEqual(report.verdict, .budgetExceeded)
        // The plugin runs `swift test`: both testing libraries, each in the bundle, and nothing of
        // SwiftPM's own is audited.
        let target = report.target
        XCTAssertTrue(target.path.hasSuffix("/swift-test"), "\(target)")
        let processes = target.processes
        XCTAssertEqual(processes.map(\.testingLibrary), [.xctest, .swiftTesting], "\(processes)")
        XCTAssertTrue(
            processes.allSatisfy { $0.commandLine.first?.hasSuffix("/debug/ProbePackageTests.xctest") == true }
        )
        XCTAssertEqual(processes.map(\.testsRun), [3, 2])
        XCTAssertEqual(target.testsRun, 5)
        XCTAssertTrue(leaky.stdout.contains("Test run with 2 tests"), leaky.log)
        let types = report.types
        let screen = try XCTUnwrap(types.first { $0.name == "Screens.LoginScreen" }, "\(types)")
        XCTAssertEqual(screen.max, 1)
        // The three kept screens stay; the clean test, which runs after it, adds one more at the peak.
        XCTAssertEqual(screen.liveAtExit, 3)
        XCTAssertGreaterThanOrEqual(screen.peakLive, 3)
        XCTAssertEqual(screen.exceeded, true)

        // The clean twin alone, through --filter: exit 0, tests' output on stdout, report on stderr.
        let clean = swiftPackageLeakAudit(["--filter", "ScreensTests.ScreensTests/testReleasesScreens"], in: package)
        XCTAssertEqual(clean.status, 0, clean.log)
        XCTAssertTrue(clean.stdout.contains("Executed 1 test, with 0 failures"), clean.log)
        XCTAssertTrue(clean.stderr.contains("ok Screens.LoginScreen: max 1, peak 1, alive at exit 0"), clean.log)
        XCTAssertTrue(clean.stderr.contains("no type over budget (1 tracked)"), clean.log)
        XCTAssertFalse(clean.stdout.contains("EXCEEDED"), clean.log)

        // A budget for a type without LeakMonitor: the plugin must put libLeakAuditPreload.so beside leak-audit.
        let budget = swiftPackageLeakAudit(
            ["--budget", "Screens.Thumbnail=1", "--filter", "ScreensTests.ScreensTests/testKeepsThumbnails"], in: package)
        XCTAssertEqual(budget.status, 1, budget.log)
        XCTAssertTrue(
            budget.stderr.contains("EXCEEDED Screens.Thumbnail:\n  max 1 from 'Screens.Thumbnail=1' (--budget), peak 2"),
            budget.log)
        XCTAssertFalse(budget.log.contains("libLeakAuditPreload.so is not"), budget.log)

        // Per test, in both testing libraries; --filter picks tests of either.
        let perTest = swiftPackageLeakAudit(
            ["--leaks-per-test", "--filter", "testKeepsScreens", "--filter", "SettingsTests"], in: package)
        XCTAssertEqual(perTest.status, 1, perTest.log)
        XCTAssertTrue(perTest.stderr.contains("tests: 2 of 3 tests left instances alive"), perTest.log)
        XCTAssertTrue(
            perTest.stderr.contains("LEAKED ScreensTests.ScreensTests/testKeepsScreens: 3 Screens.LoginScreen"), perTest.log)
        XCTAssertTrue(
            perTest.stderr.contains("LEAKED ScreensTests.SettingsTests/keepsSettings(): 2 Screens.SettingsScreen"), perTest.log)
        XCTAssertFalse(perTest.stderr.contains("LEAKED ScreensTests.SettingsTests/releasesSettings()"), perTest.log)

        // A filter that matches no test: no silent success.
        let none = swiftPackageLeakAudit(["--filter", "NoSuchTest"], in: package)
        XCTAssertEqual(none.status, 1, none.log)
        XCTAssertTrue(none.stderr.contains("leak-audit exited with code 3"), none.log)
        XCTAssertTrue(none.stderr.contains("no test ran in"), none.log)
    }

    private func swiftPackageLeakAudit(_ arguments: [String], in package: URL) -> Harness.CommandResult {
        Harness.run(["swift", "package", "leak-audit"] + arguments, directory: package.path)
    }
}

/// A package named Probe in a temporary directory: a library with an instrumented screen and an
/// uninstrumented thumbnail, and an XCTest target with a leaky test and its clean twin.
private enum ProbePackage {
    static func write() throws -> URL {
        let root = URL(fileURLWithPath: try Harness.scratchFolder("plugin"))
        let files = [
            "Package.swift": """
            // swift-tools-version:6.0
            import PackageDescription

            let package = Package(
                name: "Probe",
                dependencies: [.package(name: "leak-audit", path: \(String(reflecting: Harness.packageRoot.path)))],
                targets: [
                    .target(name: "Screens", dependencies: [.product(name: "LeakMonitor", package: "leak-audit")]),
                    .testTarget(name: "ScreensTests", dependencies: ["Screens"]),
                ]
            )
            """,
            "Sources/Screens/Screens.swift": """
            import LeakMonitor

            public final class LoginScreen: MemoryLeakMonitorable {
                public var max: Int { 1 }
                public init() { MemoryLeakMonitor.validate(self) }
            }

            public final class SettingsScreen: MemoryLeakMonitorable {
                public var max: Int { 1 }
                public init() { MemoryLeakMonitor.validate(self) }
            }

            /// Never opts in: only --budget sees it.
            public final class Thumbnail {
                public init() {}
            }

            public enum History {
                nonisolated(unsafe) public static var screens: [LoginScreen] = []
                nonisolated(unsafe) public static var settings: [SettingsScreen] = []
            }
            """,
            "Tests/ScreensTests/SettingsTests.swift": """
            import Screens
            import Testing

            @Suite(.serialized) struct SettingsTests {
                @Test func keepsSettings() {
                    for _ in 0..<2 { History.settings.append(SettingsScreen()) }
                    #expect(History.settings.count == 2)
                }

                @Test func releasesSettings() {
                    for _ in 0..<2 { _ = SettingsScreen() }
                }
            }
            """,
            "Tests/ScreensTests/ScreensTests.swift": """
            import Screens
            import XCTest

            final class ScreensTests: XCTestCase {
                func testKeepsScreens() {
                    for _ in 0..<3 { History.screens.append(LoginScreen()) }
                    XCTAssertEqual(History.screens.count, 3)
                }

                func testReleasesScreens() {
                    for _ in 0..<3 { XCTAssertNotNil(LoginScreen()) }
                }

                func testKeepsThumbnails() {
                    let thumbnails = [Thumbnail(), Thumbnail()]
                    XCTAssertEqual(thumbnails.count, 2)
                }
            }
            """,
        ]
        for (path, text) in files {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data((text + "\n").utf8).write(to: url)
        }
        // Resolve swift-argument-parser to the version the fixtures use, as a checked-in Package.resolved would.
        let resolved = Harness.fixturesRoot.appendingPathComponent("Package.resolved")
        if FileManager.default.fileExists(atPath: resolved.path) {
            try FileManager.default.copyItem(at: resolved, to: root.appendingPathComponent("Package.resolved"))
        }
        return root
    }
}
