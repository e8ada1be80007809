import Foundation
import LeakAuditModel
import XCTest

/// Auditing programs that never opted in: budgets by pattern, configuration files, the census, and
/// the targets that cannot be watched.
final class WatchTests: XCTestCase {
    private let viewModels = "UninstrumentedGallery.*ViewModel=1"

    func testBudgetPatternFindsViewModelsOfAProgramWithoutLeakMonitor() throws {
        let audit = try Harness.audit("UninstrumentedGallery", extraOptions: ["--budget", viewModels])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        XCTAssertEqual(audit.report.target.attached, true)
        let model = try audit.trackedType("UninstrumentedGallery.GalleryViewModel")
        XCTAssertEqual(model.max, 1)
        XCTAssertEqual(model.peakLive, 3)
        XCTAssertEqual(model.liveAtExit, 3)
        XCTAssertEqual(
            model.budget, .pattern(BudgetPattern(pattern: "UninstrumentedGallery.*ViewModel", max: 1, origin: "--budget")))
        let frames = try XCTUnwrap(model.allocations.first).frames
        let line = try Harness.line(
            of: "let model = GalleryViewModel(album: album)", inFixtureSource: "Sources/UninstrumentedGallery/main.swift")
        XCTAssertTrue(
            frames.contains { $0.function?.contains("Navigator.show(") == true && $0.line == line }, "\(frames)")
        XCTAssertEqual(audit.report.types.count, 1, "ThumbnailLoader matches no pattern: \(audit.report.types.map(\.name))")
        XCTAssertTrue(audit.stdout.contains("child process ran"), "a non-Swift child still runs: \(audit.stdout)")
    }

    func testBudgetPatternCleanTwin() throws {
        let audit = try Harness.audit("UninstrumentedGallery", ["clean"], extraOptions: ["--budget", viewModels])
        XCTAssertEqual(audit.status, 0, audit.stderr)
        let model = try audit.trackedType("UninstrumentedGallery.GalleryViewModel")
        XCTAssertEqual(model.peakLive, 1)
        XCTAssertEqual(model.exceeded, false)
        XCTAssertTrue(audit.stdout.contains("child process ran"))
    }

    func testConfigurationFileAndTheDefaultFileInTheWorkingDirectory() throws {
        let directory = try Harness.scratchFolder("watch")
        let config = """
            {"version": 1, "budgets": [{"type": "UninstrumentedGallery.GalleryViewModel", "max": 2}]}
            """
        let path = directory + "/.leak-audit.json"
        try config.write(toFile: path, atomically: true, encoding: .utf8)

        let explicit = try Harness.audit("UninstrumentedGallery", extraOptions: ["--config", path])
        XCTAssertEqual(explicit.status, 1)
        let model = try explicit.trackedType(".GalleryViewModel")
        XCTAssertEqual(model.max, 2)
        XCTAssertEqual(
            model.budget, .pattern(BudgetPattern(pattern: "UninstrumentedGallery.GalleryViewModel", max: 2, origin: path)))

        // Read from the working directory without --config.
        let implicit = try Harness.audit(path: try Harness.fixture("UninstrumentedGallery"), directory: directory)
        XCTAssertEqual(implicit.status, 1, implicit.stderr)
        XCTAssertEqual(
            try implicit.trackedType(".GalleryViewModel").budget,
            .pattern(BudgetPattern(pattern: "UninstrumentedGallery.GalleryViewModel", max: 2, origin: ".leak-audit.json")))
    }

    func testBadConfigurationAndBudgetsAreUsageErrors() throws {
        let directory = try Harness.scratchFolder("watch")
        let target = try Harness.fixture("UninstrumentedGallery")
        let cases: [(String, String)] = [
            (#"{"version": 2, "budgets": []}"#, "has version 2; this leak-audit reads version 1"),
            (#"{"budgets": []}"#, #"missing "version""#),
            (#"{"version": 1, "budgets": [{"type": "A", "max": "one"}]}"#, "wrong type"),
            ("not json", "not valid JSON"),
            ("", "it is empty"),
            (#"{"version": 1, "budget": [{"type": "A", "max": 1}]}"#, #"unknown key "budget" (known: version, budgets"#),
            (#"{"version": 1, "budgets": [{"type": "A", "max": 1, "min": 0}]}"#, #"unknown key "min" in budgets[0]"#),
            (#"{"version": 1, "suppressions": [{"type": "A", "why": "x"}]}"#, #"unknown key "why" in suppressions[0]"#),
        ]
        for (text, expected) in cases {
            let path = directory + "/config-\(UUID().uuidString).json"
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            let result = Harness.run([Harness.leakAudit, "run", "--config", path, target])
            XCTAssertEqual(result.status, 64, text)
            XCTAssertTrue(result.stderr.contains(path) && result.stderr.contains(expected), "\(text): \(result.stderr)")
            XCTAssertFalse(result.stdout.contains("UninstrumentedGallery"), "the target did not run")
        }
        for budget in ["NoEquals", "A=-1", "A=x", "=3"] {
            let result = Harness.run([Harness.leakAudit, "run", "--budget", budget, target])
            XCTAssertEqual(result.status, 64, budget)
            XCTAssertTrue(result.stderr.contains("budget '\(budget)'"), result.stderr)
        }
        let missing = Harness.run([Harness.leakAudit, "run", "--config", directory + "/none.json", target])
        XCTAssertEqual(missing.status, 64)
        XCTAssertTrue(missing.stderr.contains("cannot read configuration"), missing.stderr)
        // A FIFO no process writes to reads as empty at once, rather than waiting forever.
        let fifo = directory + "/fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let unwritten = Harness.run(["timeout", "60", Harness.leakAudit, "run", "--config", fifo, target])
        XCTAssertEqual(unwritten.status, 64, unwritten.log)
        XCTAssertEqual(unwritten.stderr, "leak-audit: error: cannot read configuration '\(fifo)': it is empty\n")
    }

    func testPatternThatMatchesNothingIsAWarningNotAFailure() throws {
        let audit = try Harness.audit("UninstrumentedGallery", extraOptions: ["--budget", "Nothing.Like.This=1"])
        XCTAssertEqual(audit.status, 0, audit.stderr)
        let warnings = audit.report.warnings
        XCTAssertTrue(warnings.contains { $0.contains("'Nothing.Like.This=1' (--budget) matched no type") }, "\(warnings)")

        // Many: the first ten are named, the rest counted in one line.
        let many = try Harness.audit(
            "UninstrumentedGallery", extraOptions: (0..<25).flatMap { ["--budget", "Nothing.Number\($0)=1"] })
        XCTAssertEqual(many.status, 0, many.stderr)
        let manyWarnings = many.report.warnings
        XCTAssertEqual(manyWarnings.filter { $0.hasPrefix("budget 'Nothing.Number") }.count, 10, "\(manyWarnings)")
        XCTAssertTrue(
            manyWarnings.contains(
                "15 more budgets matched no type that was allocated, or only types whose max is declared in code"),
            "\(manyWarnings)")
    }

    func testALauncherWhoseSwiftChildMatchedNothingIsCleanNotUnaudited() throws {
        let directory = try Harness.scratchFolder("watch")
        let script = directory + "/launch.sh"
        try "#!/bin/sh\nexec \(try Harness.fixture("UninstrumentedGallery")) clean\n".write(
            toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        let audit = try Harness.audit(path: script, extraOptions: ["--budget", "Nothing.Like.This=1"])
        XCTAssertEqual(audit.status, 0, audit.stderr)
        XCTAssertNil(audit.report.notAudited)

        // The census covers the Swift program a launcher starts, not only the target itself.
        let census = try Harness.audit(path: script, extraOptions: ["--census"])
        XCTAssertEqual(census.status, 0, census.stderr)
        XCTAssertEqual(try census.censusEntry(".ThumbnailLoader").liveAtExit, 4)
    }

    func testBudgetDeclaredInCodeWinsAndInstancesAreNotCountedTwice() throws {
        // GenericBoxes' Box validates with max 2; the pattern says 10.
        let audit = try Harness.audit("GenericBoxes", extraOptions: ["--budget", "GenericBoxes.Box<*>=10"])
        XCTAssertEqual(audit.status, 1)
        let strings = try audit.trackedType(".Box<Swift.String>")
        XCTAssertEqual(strings.max, 2)
        XCTAssertEqual(strings.budget, .code)
        XCTAssertEqual(strings.peakLive, 3)
        XCTAssertEqual(strings.allocatedTotal, 3)
        XCTAssertEqual(try audit.trackedType(".Box<Swift.Int>").allocatedTotal, 2)
    }

    func testCensusListsSurvivorsMostFirstAndFoldsInternals() throws {
        let audit = try Harness.audit("UninstrumentedGallery", extraOptions: ["--census"])
        XCTAssertEqual(audit.status, 0, "the census gates nothing: \(audit.stderr)")
        let names = (audit.report.census?.entries ?? []).map(\.name)
        // Most instances first; ties by name.
        XCTAssertEqual(
            Array(names.prefix(2)), ["UninstrumentedGallery.ThumbnailLoader", "UninstrumentedGallery.GalleryViewModel"])
        XCTAssertTrue(names.contains("UninstrumentedGallery.Navigator"), "\(names)")
        XCTAssertEqual((audit.report.census?.entries ?? []).first?.liveAtExit, 12)
        // A ManagedBuffer subclass's objects, which the standard library allocates in an
        // unoptimized build, are counted, from the line that created them.
        let caches = try XCTUnwrap(
            audit.report.census?.entries.first { $0.name == "UninstrumentedGallery.ThumbnailCache" }, "\(names)")
        XCTAssertEqual(caches.liveAtExit, 2)
        let cacheLine = try Harness.line(
            of: "ThumbnailCache.create(", inFixtureSource: "Sources/UninstrumentedGallery/main.swift")
        XCTAssertTrue(caches.allocations.contains { $0.frames.contains { $0.line == cacheLine } }, "\(caches.allocations)")
        XCTAssertFalse((audit.report.census?.entries ?? []).contains(where: \.isInternal), "internals are folded")
        XCTAssertGreaterThan(audit.report.census?.foldedTypes ?? 0, 0)
        let line = try Harness.line(of: "ThumbnailLoader(index: $0)", inFixtureSource: "Sources/UninstrumentedGallery/main.swift")
        let frames = try XCTUnwrap((audit.report.census?.entries ?? []).first?.allocations.first).frames
        XCTAssertTrue(frames.contains { $0.line == line }, "\(frames)")

        // --census-all shows them, each with the stacks that made it; the census alone takes them
        // without their stacks, which no report of it shows.
        let all = try Harness.audit("UninstrumentedGallery", extraOptions: ["--census-all"])
        let internals = (all.report.census?.entries ?? []).filter(\.isInternal)
        XCTAssertTrue(internals.contains { $0.name == "Foundation.NSLock" }, "\(internals.map(\.name))")
        XCTAssertTrue(
            internals.allSatisfy { !$0.allocations.isEmpty && $0.allocations.allSatisfy { !$0.frames.isEmpty } },
            "\(internals)")
        XCTAssertEqual(all.report.census?.foldedTypes, 0)

        let text = Harness.run([Harness.leakAudit, "run", "--census", try Harness.fixture("UninstrumentedGallery"), "clean"])
        XCTAssertEqual(text.status, 0)
        XCTAssertTrue(text.stderr.contains("census: "), text.stderr)
        XCTAssertTrue(text.stderr.contains("  4 UninstrumentedGallery.ThumbnailLoader"), text.stderr)
    }

    func testCensusOfATestBundle() throws {
        let audit = try Harness.audit(
            "FixturesPackageTests.xctest", ["ScreenTests.ScreenTests/testLeaksScreens"], extraOptions: ["--census"])
        XCTAssertEqual(audit.status, 1)
        let screen = try audit.censusEntry(".ProfileScreen")
        XCTAssertEqual(screen.liveAtExit, 3)
        // XCTest keeps its test case objects until the run ends: folded, not survivors to act on.
        let entries = audit.report.census?.entries ?? []
        XCTAssertFalse(entries.contains { $0.name == "ScreenTests.ScreenTests" }, "\(entries.map(\.name))")
        XCTAssertGreaterThanOrEqual(audit.report.census?.foldedTestCaseInstances ?? 0, 1)
        let all = try Harness.audit(
            "FixturesPackageTests.xctest", ["ScreenTests.ScreenTests/testLeaksScreens"], extraOptions: ["--census-all"])
        let testCase = try XCTUnwrap(all.report.census?.entries.first { $0.name == "ScreenTests.ScreenTests" })
        XCTAssertEqual(testCase.isTestCase, true)
    }

    func testAProgramNamedLikeTheToolchainsIsStillAudited() throws {
        // Users' test bundles share the `swift-` prefix of the toolchain's programs
        // (swift-logPackageTests.xctest): what a program is decides, not its name.
        let directory = try Harness.scratchFolder("watch")
        let copy = directory + "/swift-galleryPackageTests.xctest"
        try FileManager.default.copyItem(atPath: try Harness.fixture("UninstrumentedGallery"), toPath: copy)
        let census = try Harness.audit(path: copy, extraOptions: ["--census"])
        XCTAssertEqual(census.status, 0, census.stderr)
        XCTAssertEqual(
            census.report.census?.entries.first { $0.name == "UninstrumentedGallery.ThumbnailLoader" }?.liveAtExit, 12)
        let budget = try Harness.audit(path: copy, extraOptions: ["--budget", "UninstrumentedGallery.ThumbnailLoader=1"])
        XCTAssertEqual(budget.status, 1, budget.stderr)
        XCTAssertEqual(try budget.trackedType(".ThumbnailLoader").exceeded, true)
    }

    func testSwiftTestAuditsTheTestProcessesOnly() throws {
        // `swift test` also runs the manifest, the toolchain's programs and build helpers: none of
        // them is audited, and the report says which processes were.
        _ = try Harness.fixturesBinDirectory.get()
        // A variable no run had yet: SwiftPM, whose manifest cache is keyed on its environment,
        // evaluates the manifest again.
        let audit = try Harness.audit(
            path: "swift",
            ["test", "--skip-build", "--package-path", Harness.fixturesRoot.path, "--filter", "ScreenTests.ScreenTests"],
            extraOptions: ["--census"], environment: ["LEAK_AUDIT_TESTS_RUN_ID": UUID().uuidString])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let names = (audit.report.census?.entries ?? []).map(\.name)
        XCTAssertFalse(names.contains { $0.hasPrefix("PackageDescription.") }, "\(names)")
        XCTAssertTrue(names.contains("ScreenTests.ProfileScreen"), "\(names)")
        let processes = audit.report.target.processes
        XCTAssertEqual(processes.map(\.testingLibrary), [.xctest, .swiftTesting], "\(processes)")
        XCTAssertTrue(processes.allSatisfy { $0.commandLine.first?.hasSuffix("/FixturesPackageTests.xctest") == true })
        XCTAssertGreaterThanOrEqual(audit.report.target.skippedProcesses, 1, "the manifest at least")
        XCTAssertEqual(audit.report.target.testsRun, 2)
        let text = Harness.run(
            [
                Harness.leakAudit, "run", "--census", "swift", "test", "--skip-build", "--package-path",
                Harness.fixturesRoot.path,
                "--filter", "ScreenTests.ScreenTests",
            ], environment: ProcessInfo.processInfo.environment.merging(["LEAK_AUDIT_TESTS_RUN_ID": UUID().uuidString]) { $1 })
        XCTAssertTrue(text.stderr.contains("audited: FixturesPackageTests.xctest (XCTest, 2 tests)"), text.stderr)
        XCTAssertTrue(text.stderr.replacingOccurrences(of: "\n  ", with: " ").contains("left out"), text.stderr)
    }

    func testSwiftTestUnderLeakAuditUsesThePlainRunsManifestCache() throws {
        // SwiftPM keys its cache of evaluated manifests on its whole environment: the toolchain's
        // programs do not see leak-audit's variables (the test bundle still gets them), so an
        // audited run after a plain one evaluates no manifest again.
        _ = try Harness.fixturesBinDirectory.get()
        let environment = ProcessInfo.processInfo.environment.merging(["LEAK_AUDIT_TESTS_RUN_ID": UUID().uuidString]) { $1 }
        let swiftTest = [
            "test", "--skip-build", "--package-path", Harness.fixturesRoot.path, "--filter",
            "ScreenTests.ScreenTests/testReleasesScreens",
        ]
        // Twice: SwiftPM serves a run whose environment differs in nothing but its own entry
        // reliably once a run has found that entry (an entry just written by a miss, not always).
        for _ in 0..<2 {
            let plain = Harness.run(["swift"] + swiftTest, environment: environment)
            XCTAssertEqual(plain.status, 0, plain.log)
        }
        let audit = try Harness.audit(path: "swift", swiftTest, extraOptions: ["--leaks-per-test"], environment: environment)
        XCTAssertEqual(audit.status, 0, audit.stderr)
        XCTAssertEqual(audit.report.target.skippedProcesses, 0, "the manifest was evaluated again: \(audit.stderr)")
        XCTAssertEqual(audit.report.target.processes.map(\.testingLibrary), [.xctest, .swiftTesting])
        XCTAssertEqual(audit.report.target.testsRun, 1)
        XCTAssertEqual(try audit.trackedType(".ProfileScreen").peakLive, 1)
    }

    func testSwiftTestStartedFromAShellUsesThePlainRunsManifestCache() throws {
        // A shell puts the path of each program it starts in `_`: `swift`'s for a plain `swift
        // test`, leak-audit's for `leak-audit run swift test`. SwiftPM's manifest cache keys on
        // `_` too: the target gets the path the shell would have given it.
        _ = try Harness.fixturesBinDirectory.get()
        let which = Harness.run(["sh", "-c", "command -v swift"])
        let swift = which.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(swift.hasPrefix("/"), which.log)
        var environment = ProcessInfo.processInfo.environment.merging(["LEAK_AUDIT_TESTS_RUN_ID": UUID().uuidString]) { $1 }
        let swiftTest = [
            "test", "--skip-build", "--package-path", Harness.fixturesRoot.path, "--filter",
            "ScreenTests.ScreenTests/testReleasesScreens",
        ]
        environment["_"] = swift
        for _ in 0..<2 {
            let plain = Harness.run(["swift"] + swiftTest, environment: environment)
            XCTAssertEqual(plain.status, 0, plain.log)
        }
        environment["_"] = Harness.leakAudit
        let audit = try Harness.audit(path: "swift", swiftTest, extraOptions: ["--leaks-per-test"], environment: environment)
        XCTAssertEqual(audit.status, 0, audit.stderr)
        XCTAssertEqual(audit.report.target.skippedProcesses, 0, "the manifest was evaluated again: \(audit.stderr)")
        XCTAssertEqual(audit.report.target.testsRun, 1)
    }

    func testTargetsThatCannotBeWatched() throws {
        let notSwift = try Harness.audit(path: "/bin/true", extraOptions: ["--budget", "A.B=1"])
        XCTAssertEqual(notSwift.status, 3)
        XCTAssertEqual(notSwift.report.notAudited, .notSwift)
        let text = Harness.run([Harness.leakAudit, "run", "--census", "/bin/true"])
        XCTAssertEqual(text.status, 3)
        XCTAssertTrue(text.stderr.contains("is not a Swift program"), text.stderr)

        let scratch = Harness.fixturesRoot.appendingPathComponent(".build-static").path
        let build = Harness.run([
            "swift", "build", "--static-swift-stdlib", "--product", "Uninstrumented", "--package-path",
            Harness.fixturesRoot.path, "--scratch-path", scratch,
        ])
        XCTAssertEqual(build.status, 0, build.stdout + build.stderr)
        let staticRuntime = try Harness.audit(path: scratch + "/debug/Uninstrumented", extraOptions: ["--census"])
        XCTAssertEqual(staticRuntime.status, 3)
        XCTAssertEqual(staticRuntime.report.notAudited, .staticRuntime)
    }
}
