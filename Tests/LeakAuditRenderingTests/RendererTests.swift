import Foundation
import XCTest

@testable import LeakAuditModel
@testable import LeakAuditPresentation
@testable import LeakAuditRendering

/// The text and JSON renderers on reports built by hand, and AuditReport's verdict.
final class RendererTests: XCTestCase {
    // MARK: - Fixtures

    private static let cwd = "/home/dev/project"

    private func frame(
        _ function: String?,
        _ file: String? = nil,
        _ line: Int? = nil,
        address: UInt64 = 0x1000,
        module: String? = "/home/dev/project/.build/debug/App",
        offset: UInt64? = 0x1000,
        column: Int? = nil,
        inlined: Bool = false
    ) -> SymbolizedFrame {
        SymbolizedFrame(
            address: address, module: module, moduleOffset: offset, function: function, file: file, line: line,
            column: column, inlined: inlined
        )
    }

    private func type(
        _ name: String, max: Int, peak: Int, atExit: Int, total: Int? = nil,
        allocations: [AuditReport.AllocationGroup] = []
    ) -> AuditReport.TrackedType {
        AuditReport.TrackedType(
            name: name, max: max, peakLive: peak, liveAtExit: atExit, allocatedTotal: total ?? peak,
            allocations: allocations
        )
    }

    private func report(
        path: String = ".build/debug/App",
        arguments: [String] = [],
        attached: Bool = true,
        outcome: TargetOutcome = .exited(code: 0),
        notAudited: AuditReport.NotAuditedReason? = nil,
        types: [AuditReport.TrackedType] = [],
        dropped: UInt64 = 0,
        torn: UInt64 = 0,
        warnings: [String] = []
    ) -> AuditReport {
        AuditReport(
            tool: .init(name: "leak-audit", version: "0.1.0"),
            target: .init(
                path: path, arguments: arguments, attached: attached, attachedProcesses: attached ? 1 : 0, outcome: outcome),
            notAudited: notAudited,
            types: types,
            droppedRecords: dropped,
            tornRecords: torn,
            warnings: warnings
        )
    }

    /// A report with one exceeded type (two stacks) and one within budget.
    private func leakyReport(outcome: TargetOutcome = .exited(code: 0)) -> AuditReport {
        let stack = [
            frame(
                "App.LoginViewModel.init(title: Swift.String) -> App.LoginViewModel", "\(Self.cwd)/Sources/App/Login.swift", 11,
                address: 0x1a2b),
            frame("reabstraction thunk helper", "\(Self.cwd)/<compiler-generated>", 0),
            frame("merged thunk", "/usr/include/thunk.h", nil),
            frame("App.Presenter.open(Swift.String) -> ()", "\(Self.cwd)/Sources/App/Presenter.swift", 29, inlined: true),
            frame("App_main", "\(Self.cwd)/Sources/App/main.swift", 43),
            frame("__libc_start_call_main", nil, nil, module: "/lib/x86_64-linux-gnu/libc.so.6", offset: 0x29d90),
            frame("_start", nil, nil),
        ]
        let other = [
            frame("App.Factory.make() -> App.LoginViewModel", "/elsewhere/Factory.swift", 7),
            frame(nil, nil, nil, address: 0xabc, module: "/usr/lib/libfoo.so", offset: 0x1f),
            frame(nil, nil, nil, address: 0xdef0, module: nil, offset: nil),
        ]
        return report(
            outcome: outcome,
            types: [
                type(
                    "App.LoginViewModel", max: 1, peak: 3, atExit: 2, total: 5,
                    allocations: [
                        .init(count: 2, frames: stack, truncated: false),
                        .init(count: 1, frames: other, truncated: true),
                    ]
                ),
                type("App.Settings", max: 2, peak: 1, atExit: 0),
            ]
        )
    }

    private func lines(_ text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    // MARK: - Text

    func testTextExceededBlockListsGroupsAndReadableFrames() {
        let text = TextReportRenderer(workingDirectory: Self.cwd).render(leakyReport())
        XCTAssertEqual(
            lines(text),
            [
                "",
                "EXCEEDED App.LoginViewModel: max 1, peak 3, alive at exit 2",
                "  3 alive at the peak (2 over budget), allocated at:",
                // From the line that constructed the instances (past the type's own init) out to main.
                "  2 × allocated at",
                "      App.Presenter.open(_:) at Sources/App/Presenter.swift:29 [inlined]",
                "      App_main at Sources/App/main.swift:43",
                "  1 × allocated at",
                "      App.Factory.make() at /elsewhere/Factory.swift:7",
                "      … 2 frames in libfoo, unknown code",
                "      … (deeper frames not recorded)",
                "",
                "within budget:",
                "  ok App.Settings: max 2, peak 1, alive at exit 0",
                "",
                "leak-audit: 1 of 2 tracked types over budget; '.build/debug/App' exited with code 0",
                "",
            ]
        )
    }

    func testTextWorkingDirectoryWithTrailingSlashAndSiblingPrefix() {
        let frames = [
            frame("A.f() -> ()", "/home/dev/project/x.swift", 1),
            frame("A.g() -> ()", "/home/dev/project-other/y.swift", 2),
        ]
        let renderer = ReportPhrases(workingDirectory: "/home/dev/project/")
        XCTAssertEqual(frames.map(renderer.describe), ["A.f() at x.swift:1", "A.g() at /home/dev/project-other/y.swift:2"])
    }

    func testTextFramesAfterMainAreCut() {
        let renderer = ReportPhrases(workingDirectory: "/")
        let afterCMain = renderer.readableFrames([
            frame("f()", "/a.swift", 1), frame("main", nil, nil), frame("__libc_start_main", nil, nil),
        ])
        XCTAssertEqual(afterCMain.map(\.function), ["f()"], "nothing after the last frame with a line")

        let entryPoint = renderer.readableFrames([frame("Tool_main", "/m.swift", 3), frame("_start", nil, nil)])
        XCTAssertEqual(entryPoint.map(\.function), ["Tool_main"])

        // A Swift function whose name merely ends in "_main" has spaces in its demangled form.
        let notEntry = renderer.readableFrames([
            frame("App.run_main() -> ()", "/a.swift", 1), frame("App_main", "/m.swift", 2), frame("x", nil, nil),
        ])
        XCTAssertEqual(notEntry.map(\.function), ["App.run_main() -> ()", "App_main"])
    }

    func testTextThunksWithFileButNoLineAreSkippedAndFramesWithoutFileKeptBetweenSourceFrames() {
        let renderer = ReportPhrases(workingDirectory: "/")
        let frames = renderer.readableFrames([
            frame("thunk A", "/t.swift", nil),
            frame("thunk B", "/t.swift", 0),
            frame("real", "/r.swift", 5),
            frame("no debug info", nil, nil),
            frame("caller", "/c.swift", 9),
            frame("runtime", nil, nil),
        ])
        XCTAssertEqual(frames.map(\.function), ["real", "no debug info", "caller"])

        // With no source line anywhere (a build without debug info) every frame is kept.
        let bare = renderer.readableFrames([frame("a", nil, nil), frame("b", nil, nil)])
        XCTAssertEqual(bare.map(\.function), ["a", "b"])
    }

    func testWithoutReturnTypeStripsOnlyTheTopLevelReturnType() {
        let cases: [(String, String)] = [
            ("A.f(x: (Int) -> Int) -> Swift.String", "A.f(x: (Int) -> Int)"),
            ("App.LoginViewModel.init() -> App.LoginViewModel", "App.LoginViewModel.init()"),
            ("App.f<A where A: Swift.Equatable>(A) -> [A]", "App.f<A where A: Swift.Equatable>(A)"),
            ("App.g(_: [Swift.Int: (Swift.Int) -> ()]) -> ()", "App.g(_: [Swift.Int: (Swift.Int) -> ()])"),
            ("App.h(_: () -> (), _: Swift.Int) throws -> Swift.Int", "App.h(_: () -> (), _: Swift.Int) throws"),
            (
                "App.Box<(Swift.Int) -> Swift.Int>.init() -> App.Box<(Swift.Int) -> Swift.Int>",
                "App.Box<(Swift.Int) -> Swift.Int>.init()"
            ),
            ("App.m(a: (Swift.Int) -> (), b: (Swift.Int) -> ()) -> ()", "App.m(a: (Swift.Int) -> (), b: (Swift.Int) -> ())"),
            ("closure #1 () -> () in main.f() -> ()", "closure #1 () -> () in main.f()"),
            (
                "closure #1 () -> () in variable initialization expression of App.x : Swift.Int",
                "closure #1 () -> () in variable initialization expression of App.x : Swift.Int"
            ),
            ("main", "main"),
            ("App_main", "App_main"),
            ("", ""),
        ]
        for (input, expected) in cases {
            XCTAssertEqual(SwiftName.withoutReturnType(input), expected, input)
        }
    }

    func testTextEscapesControlCharactersFromTheTarget() {
        XCTAssertEqual(
            ReportPhrases.escaped("a\u{1B}[31mred\u{7}\n\t\u{7F}\u{85}é🦊"),
            "a\\u{1b}[31mred\\u{7}\\u{a}\\u{9}\\u{7f}\\u{85}é🦊")
        XCTAssertEqual(ReportPhrases.escaped("\u{0}"), "\\u{0}")
        // The bidirectional controls and separators, and the scalars just around the escaped ranges.
        XCTAssertEqual(
            ReportPhrases.escaped("\u{1F}\u{20}~\u{9F}\u{A0}\u{61B}\u{61C}\u{200B}\u{202E}\u{2069}\u{206A}→…"),
            "\\u{1f} ~\\u{9f}\u{A0}\u{61B}\\u{61c}\u{200B}\\u{202e}\\u{2069}\u{206A}→…")

        let hostile = report(
            path: "./evil\u{1B}]0;pwned\u{7}",
            types: [
                type(
                    "App.Evil\u{1B}[2J", max: 0, peak: 1, atExit: 1,
                    allocations: [.init(count: 1, frames: [frame("f\n()", "/\u{1B}/x.swift", 1)], truncated: false)]
                )
            ]
        )
        let text = TextReportRenderer(workingDirectory: "/nowhere").render(hostile)
        XCTAssertFalse(text.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 }, text)
        XCTAssertTrue(text.contains("EXCEEDED App.Evil\\u{1b}[2J: max 0, peak 1, alive at exit 1"), text)
        XCTAssertTrue(text.contains("      f\\u{a}() at /\\u{1b}/x.swift:1"), text)
        XCTAssertTrue(text.hasSuffix("'./evil\\u{1b}]0;pwned\\u{7}' exited with code 0\n"), text)
        // Every newline is a line break of the report, not one from the target.
        XCTAssertEqual(lines(text).filter { $0.hasPrefix("      ") }.count, 1)
    }

    func testTextNoStackRecorded() {
        let text = TextReportRenderer(workingDirectory: "/").render(
            report(types: [type("T", max: 0, peak: 2, atExit: 2, allocations: [.init(count: 2, frames: [], truncated: false)])])
        )
        XCTAssertTrue(text.contains("  2 × allocated at\n      (no stack recorded)\n"), text)
    }

    func testTextSummaryLineForEachVerdict() {
        let renderer = TextReportRenderer(workingDirectory: "/")
        func lastLine(_ report: AuditReport) -> String {
            lines(renderer.render(report)).dropLast().last ?? ""
        }
        let fine = type("A", max: 2, peak: 1, atExit: 0)
        XCTAssertEqual(
            lastLine(report(types: [fine, type("B", max: 1, peak: 1, atExit: 1)])),
            "leak-audit: no type over budget (2 tracked); '.build/debug/App' exited with code 0"
        )
        XCTAssertEqual(lastLine(report()), "leak-audit: no type over budget (0 tracked); '.build/debug/App' exited with code 0")
        // --leaks-per-test with no budget: the tests are what was judged, not "0 tracked" types.
        var perTest = report()
        perTest.tests = []
        XCTAssertEqual(lastLine(perTest), "leak-audit: no test leaked; '.build/debug/App' exited with code 0")
        XCTAssertEqual(
            lastLine(leakyReport(outcome: .signaled(signal: 6))),
            "leak-audit: 1 of 2 tracked types over budget; '.build/debug/App' killed by signal 6 (SIGABRT)"
        )
        XCTAssertEqual(
            lastLine(report(outcome: .exited(code: 3), types: [fine])),
            "leak-audit: no type over budget (1 tracked), but '.build/debug/App' exited with code 3"
        )
        XCTAssertEqual(
            lastLine(report(outcome: .signaled(signal: 11), types: [fine])),
            "leak-audit: no type over budget (1 tracked), but '.build/debug/App' killed by signal 11 (SIGSEGV)"
        )
        XCTAssertEqual(
            lastLine(report(outcome: .signaled(signal: 10))),
            "leak-audit: no type over budget (0 tracked), but '.build/debug/App' killed by signal 10"
        )
        XCTAssertEqual(
            lastLine(report(path: "/bin/sh", attached: false, outcome: .exited(code: 0), notAudited: .neverAttached)),
            "leak-audit: not audited; '/bin/sh' exited with code 0"
        )
        XCTAssertEqual(
            lastLine(report(notAudited: .staticRuntime, types: [type("A", max: 0, peak: 9, atExit: 9)])),
            "leak-audit: not audited; '.build/debug/App' exited with code 0"
        )
    }

    func testTextNotAuditedExplainsWhyAndListsNoTypes() {
        let renderer = TextReportRenderer(workingDirectory: "/")
        // The advice fits what the target is.
        func explanation(
            _ path: String, _ kind: TargetKind?, _ reason: AuditReport.NotAuditedReason = .neverAttached,
            arguments: [String] = [], outcome: TargetOutcome = .exited(code: 1)
        ) -> [String] {
            var unaudited = report(
                path: path, arguments: arguments, attached: false, outcome: outcome, notAudited: reason)
            unaudited.target.kind = kind
            return lines(renderer.render(unaudited))
        }
        let bundle = explanation("AppPackageTests.xctest", .swiftTestBundle)
        XCTAssertTrue(
            bundle.first?.hasPrefix(
                "leak-audit: 'AppPackageTests.xctest' is a Swift test bundle, but none of its types opted in and no budget or census"
            ) == true, "\(bundle)")
        XCTAssertTrue(bundle.contains { $0.contains("Run it with --census") }, "\(bundle)")
        XCTAssertTrue(
            explanation("App", .dynamicSwift).first?.hasPrefix(
                "leak-audit: 'App' is a Swift program, but none of its types opted in and no budget or census") == true)
        let notSwift = explanation("/bin/true", .notSwift)
        XCTAssertTrue(
            notSwift.first?.hasPrefix(
                "leak-audit: '/bin/true' is not a Swift program (it does not load the Swift runtime) and started none that")
                == true, "\(notSwift)")
        XCTAssertFalse(notSwift.joined().contains("--census"), "no advice to opt types in: \(notSwift)")
        XCTAssertTrue(explanation("/bin/true", .notSwift, .notSwift).first?.contains("is not a Swift program") == true)
        XCTAssertTrue(explanation("App", .staticSwift).first?.contains("links the Swift runtime statically") == true)
        XCTAssertTrue(
            explanation("run.sh", .other).first?.hasPrefix(
                "leak-audit: 'run.sh' started no Swift program whose types opted in, and no budget or census was") == true)
        // A filter that matched nothing: the hint is about filters.
        let filtered = explanation(
            "AppPackageTests.xctest", .swiftTestBundle, .noTestsRan, arguments: ["AppTests.Missing/testNothing"])
        XCTAssertTrue(
            filtered.first?.hasPrefix(
                "leak-audit: no test ran in 'AppPackageTests.xctest' (it exited with code 1), so nothing was audited. Check")
                == true, "\(filtered)")
        XCTAssertTrue(filtered.contains { $0.contains("Check the test names given") }, "\(filtered)")
        XCTAssertTrue(
            explanation("swift", .other, .noTestsRan, arguments: ["test", "--filter", "Missing"]).first?.hasPrefix(
                "leak-audit: no test ran in 'swift' (it exited with code 1), so nothing was audited. Check") == true)
        // No filter: a bundle that failed or was killed ended before its first test (WasmKit's).
        let crashed = explanation("AppPackageTests.xctest", .swiftTestBundle, .noTestsRan, outcome: .signaled(signal: 11))
        XCTAssertEqual(
            Array(crashed.prefix(2)),
            [
                "leak-audit: no test ran in 'AppPackageTests.xctest': it was killed by signal 11 (SIGSEGV) before its first test, so nothing was audited. No test filter was given: it failed as it started (its output says why).",
                "leak-audit: not audited; 'AppPackageTests.xctest' killed by signal 11 (SIGSEGV)",
            ])
        XCTAssertTrue(
            explanation("swift", .other, .noTestsRan, arguments: ["test", "--skip-build"]).first?.hasPrefix(
                "leak-audit: no test ran in 'swift': it exited with code 1 before its first test, so nothing was audited.")
                == true)
        // A bundle that succeeded with no filter ran another testing library's tests: the hint stays.
        XCTAssertTrue(
            explanation("AppPackageTests.xctest", .swiftTestBundle, .noTestsRan, outcome: .exited(code: 0)).contains {
                $0.contains("--testing-library swift-testing")
            })

        let staticText = renderer.render(
            report(notAudited: .staticRuntime, types: [type("App.Hidden", max: 0, peak: 4, atExit: 4)])
        )
        XCTAssertTrue(lines(staticText)[0].contains("links the Swift runtime statically (-static-stdlib)"), staticText)
        XCTAssertFalse(staticText.contains("EXCEEDED"), staticText)
        XCTAssertFalse(staticText.contains("App.Hidden"), staticText)

        let mismatch = renderer.render(report(attached: false, notAudited: .recordFormatMismatch))
        XCTAssertEqual(
            lines(mismatch).first,
            "leak-audit: '.build/debug/App' links a LeakMonitor that writes another record format than this leak-audit (\(leakAuditVersion)) reads; build it against the same leak-audit release."
        )
        XCTAssertEqual(lines(mismatch).dropLast().last, "leak-audit: not audited; '.build/debug/App' exited with code 0")
    }

    /// An explanation is one paragraph fitted to the terminal: every line within the width, each
    /// after the first indented by two, every word in order; not lines broken by hand at about a
    /// hundred columns that a narrower terminal breaks again.
    func testTheNotAuditedExplanationIsOneParagraphFittedToTheWidth() {
        var unaudited = report(path: "AppPackageTests.xctest", attached: false, notAudited: .neverAttached)
        unaudited.target.kind = .swiftTestBundle
        let unwrapped = lines(TextReportRenderer(workingDirectory: "/").render(unaudited))[0]
        XCTAssertTrue(unwrapped.hasSuffix("MemoryLeakMonitor.validate(self) in init."), unwrapped)
        for width in [80, 120] {
            for verbose in [false, true] {
                let rendered = lines(
                    TextReportRenderer(workingDirectory: "/", width: width, verbose: verbose).render(unaudited))
                let paragraph = Array(rendered.prefix { !$0.hasPrefix("leak-audit: not audited") })
                XCTAssertGreaterThan(paragraph.count, 2, "\(width): \(rendered)")
                XCTAssertTrue(paragraph.allSatisfy { $0.count <= width }, "\(width): \(paragraph)")
                XCTAssertTrue(paragraph.dropFirst().allSatisfy { $0.hasPrefix("  ") && !$0.hasPrefix("   ") }, "\(paragraph)")
                // Full lines: the next line's first word would not have fitted.
                for (line, next) in zip(paragraph, paragraph.dropFirst()) {
                    let word = next.dropFirst(2).prefix { $0 != " " }
                    XCTAssertGreaterThan(line.count + 1 + word.count, width, "\(width): '\(line)' then '\(next)'")
                }
                XCTAssertEqual(
                    paragraph.map { String($0.drop { $0 == " " }) }.joined(separator: " "), unwrapped, "\(width)")
            }
        }
    }

    func testTextWarningsAndTornNoteComeBeforeTheSummary() {
        let text = TextReportRenderer(workingDirectory: "/").render(
            report(torn: 4, warnings: ["the record channel filled up", "second"])
        )
        let all = lines(text)
        XCTAssertEqual(
            Array(all.suffix(5)),
            [
                "warning: the record channel filled up",
                "warning: second",
                "note: 4 records were cut short when the target ended; everything else was received",
                "leak-audit: no type over budget (0 tracked); '.build/debug/App' exited with code 0",
                "",
            ]
        )
        XCTAssertFalse(TextReportRenderer(workingDirectory: "/").render(report()).contains("note:"))
        // Slots reserved past a full channel stay empty too: then they are dropped, not torn.
        let full = TextReportRenderer(workingDirectory: "/").render(report(dropped: 2, torn: 4))
        XCTAssertFalse(full.contains("note:"), full)
    }

    func testAnIncompleteRunSaysWhatWasLostInItsVerdictLine() {
        var damaged = report(types: [type("App.Fine", max: 1, peak: 1, atExit: 0)], dropped: 2)
        damaged.damagedRecords = 3
        let text = TextReportRenderer(workingDirectory: "/").render(damaged)
        XCTAssertEqual(
            lines(text).dropLast().last,
            "leak-audit: no type over budget (1 tracked), but the report is incomplete (2 records lost, 3 records damaged), so the run is not clean; '.build/debug/App' exited with code 0"
        )
        let github = GitHubActionsReportRenderer(workingDirectory: "/").render(damaged)
        let command = "::error title=leak-audit%3A incomplete::the report is incomplete (2 records lost, 3 records damaged)"
        XCTAssertTrue(github.contains(command), github)
        let junit = JUnitReportRenderer(workingDirectory: "/").render(damaged)
        XCTAssertTrue(junit.contains("errors=\"1\""), junit)
        XCTAssertTrue(junit.contains("type=\"incomplete\""), junit)
    }

    // MARK: - JSON

    private func json(_ report: AuditReport) throws -> [String: Any] {
        let text = JSONReportRenderer().render(report)
        XCTAssertTrue(text.hasSuffix("}\n"))
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
        return try XCTUnwrap(object as? [String: Any])
    }

    private func dictionary(_ value: Any?, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        try XCTUnwrap(value as? [String: Any], file: file, line: line)
    }

    private func array(_ value: Any?, file: StaticString = #filePath, line: UInt = #line) throws -> [Any] {
        try XCTUnwrap(value as? [Any], file: file, line: line)
    }

    func testJSONTopLevelToolTargetAndSummary() throws {
        let root = try json(leakyReport())
        XCTAssertEqual(
            Set(root.keys),
            [
                "schemaVersion", "tool", "target", "summary", "types", "census", "tests", "baseline", "unreachable", "frames",
                "stacks",
            ])
        XCTAssertTrue(root["tests"] is NSNull, "tests is null without --leaks-per-test")
        XCTAssertTrue(root["baseline"] is NSNull, "baseline is null without --baseline")
        XCTAssertTrue(root["census"] is NSNull, "census is null without --census")
        XCTAssertEqual(root["schemaVersion"] as? Int, 2)
        XCTAssertEqual(JSONReportRenderer.schemaVersion, 2)

        let tool = try dictionary(root["tool"])
        XCTAssertEqual(tool["name"] as? String, "leak-audit")
        XCTAssertEqual(tool["version"] as? String, "0.1.0")

        let target = try dictionary(root["target"])
        XCTAssertEqual(
            Set(target.keys),
            [
                "path", "arguments", "attached", "attachedProcesses", "exit", "notAuditedReason", "processes", "skippedProcesses",
                "testsRun", "durationMilliseconds", "kind", "testsSkipped",
            ])
        XCTAssertEqual(target["path"] as? String, ".build/debug/App")
        XCTAssertEqual(try array(target["arguments"]).count, 0)
        XCTAssertEqual(target["attached"] as? Bool, true)
        XCTAssertTrue(target["notAuditedReason"] is NSNull)
        XCTAssertTrue(target["kind"] is NSNull, "null when the target was not inspected, never left out")

        let summary = try dictionary(root["summary"])
        XCTAssertEqual(
            Set(summary.keys),
            [
                "verdict", "trackedTypes", "exceededTypes", "instancesOverBudget", "findings", "droppedRecords", "tornRecords",
                "damagedRecords", "incomplete", "warnings", "exceededCapacity", "watchedInstances",
            ]
        )
        XCTAssertEqual(summary["findings"] as? [String: Int], ["failing": 1, "suppressed": 0, "baselined": 0])
        XCTAssertEqual(summary["verdict"] as? String, "budgetExceeded")
        XCTAssertEqual(summary["trackedTypes"] as? Int, 2)
        XCTAssertEqual(summary["exceededTypes"] as? Int, 1)
        XCTAssertEqual(summary["instancesOverBudget"] as? Int, 2)
        XCTAssertEqual(summary["droppedRecords"] as? Int, 0)
        XCTAssertEqual(summary["tornRecords"] as? Int, 0)
        XCTAssertEqual(try array(summary["warnings"]).count, 0)
    }

    func testJSONInstancesOverBudgetSumsEveryExceededType() throws {
        let root = try json(
            report(
                types: [
                    type("A", max: 1, peak: 4, atExit: 0),
                    type("B", max: 0, peak: 2, atExit: 2),
                    type("C", max: 5, peak: 5, atExit: 5),
                ], dropped: 7, torn: 2, warnings: ["w1"])
        )
        let summary = try dictionary(root["summary"])
        XCTAssertEqual(summary["instancesOverBudget"] as? Int, 5)
        XCTAssertEqual(summary["exceededTypes"] as? Int, 2)
        XCTAssertEqual(summary["trackedTypes"] as? Int, 3)
        XCTAssertEqual(summary["droppedRecords"] as? Int, 7)
        XCTAssertEqual(summary["tornRecords"] as? Int, 2)
        XCTAssertEqual(summary["warnings"] as? [String], ["w1"])
        let types = try array(root["types"]).map { try dictionary($0) }
        XCTAssertEqual(types.map { $0["exceeded"] as? Bool }, [true, true, false])
    }

    func testJSONExitIsCodeOrSignalOnly() throws {
        for (outcome, key, value) in [
            (TargetOutcome.exited(code: 0), "code", 0), (.exited(code: 42), "code", 42), (.signaled(signal: 9), "signal", 9),
        ] {
            let exit = try dictionary(try dictionary(try json(report(outcome: outcome))["target"])["exit"])
            XCTAssertEqual(Array(exit.keys), [key], "\(outcome)")
            XCTAssertEqual(exit[key] as? Int, value, "\(outcome)")
        }
    }

    func testJSONVerdictAndNotAuditedReasonStrings() throws {
        let fine = type("A", max: 1, peak: 1, atExit: 0)
        let cases: [(AuditReport, String, String?)] = [
            (report(types: [fine]), "clean", nil),
            (leakyReport(), "budgetExceeded", nil),
            (report(outcome: .exited(code: 1), types: [fine]), "targetFailed", nil),
            (report(types: [fine], dropped: 3), "incomplete", nil),
            (report(attached: false, notAudited: .neverAttached), "notAudited", "neverAttached"),
            (report(notAudited: .staticRuntime), "notAudited", "staticRuntime"),
            (report(attached: false, notAudited: .recordFormatMismatch), "notAudited", "recordFormatMismatch"),
        ]
        for (report, verdict, reason) in cases {
            let root = try json(report)
            XCTAssertEqual(try dictionary(root["summary"])["verdict"] as? String, verdict)
            let target = try dictionary(root["target"])
            if let reason {
                XCTAssertEqual(target["notAuditedReason"] as? String, reason)
            } else {
                XCTAssertTrue(
                    target["notAuditedReason"] is NSNull, "\(verdict): \(String(describing: target["notAuditedReason"]))")
            }
        }
    }

    func testJSONTypesAllocationsAndFramesOnceInTablesWithNullForAbsentFields() throws {
        let root = try json(leakyReport())
        let types = try array(root["types"]).map { try dictionary($0) }
        XCTAssertEqual(types.count, 2)
        let leaky = types[0]
        XCTAssertEqual(
            Set(leaky.keys),
            [
                "name", "budget", "max", "peakLive", "liveAtExit", "allocatedTotal", "exceeded", "allocations", "status",
                "suppression", "baselineCount", "allocationsAtExit", "timeline", "peakTimeMilliseconds",
            ])
        XCTAssertEqual(leaky["status"] as? String, "failing")
        XCTAssertTrue(leaky["suppression"] is NSNull)
        XCTAssertTrue(leaky["baselineCount"] is NSNull)
        XCTAssertEqual(leaky["budget"] as? [String: String], ["source": "code"])
        XCTAssertEqual(leaky["name"] as? String, "App.LoginViewModel")
        XCTAssertEqual(leaky["max"] as? Int, 1)
        XCTAssertEqual(leaky["peakLive"] as? Int, 3)
        XCTAssertEqual(leaky["liveAtExit"] as? Int, 2)
        XCTAssertEqual(leaky["allocatedTotal"] as? Int, 5)
        XCTAssertEqual(leaky["exceeded"] as? Bool, true)

        let allocations = try array(leaky["allocations"]).map { try dictionary($0) }
        XCTAssertEqual(allocations.map { $0["count"] as? Int }, [2, 1])
        XCTAssertEqual(allocations.map { $0["truncated"] as? Bool }, [false, true])
        XCTAssertEqual(Set(allocations[0].keys), ["count", "truncated", "test", "stack"])
        XCTAssertTrue(allocations[0]["test"] is NSNull, "null outside tests")

        // JSON keeps every frame, thunks and frames below main included, once in `frames`; a
        // group names its stack in `stacks`, a list of indexes into `frames`.
        let table = try array(root["frames"]).map { try dictionary($0) }
        let stacks = try XCTUnwrap(root["stacks"] as? [[Int]])
        func stack(_ group: [String: Any]) throws -> [[String: Any]] {
            stacks[try XCTUnwrap(group["stack"] as? Int)].map { table[$0] }
        }
        let frames = try stack(allocations[0])
        XCTAssertEqual(frames.count, 7)
        let first = frames[0]
        // A frame holds only what is known: no null, and `inlined` only when true.
        XCTAssertEqual(Set(first.keys), ["address", "module", "moduleOffset", "function", "file", "line"])
        XCTAssertEqual(first["address"] as? String, "0x1a2b")
        XCTAssertEqual(first["moduleOffset"] as? String, "0x1000")
        XCTAssertEqual(first["module"] as? String, "/home/dev/project/.build/debug/App")
        XCTAssertEqual(
            first["function"] as? String, "App.LoginViewModel.init(title: Swift.String) -> App.LoginViewModel",
            "JSON keeps return types")
        XCTAssertEqual(first["file"] as? String, "/home/dev/project/Sources/App/Login.swift", "JSON keeps absolute paths")
        XCTAssertEqual(first["line"] as? Int, 11)
        XCTAssertEqual(frames[3]["inlined"] as? Bool, true)

        let bare = try stack(allocations[1])[2]
        XCTAssertEqual(Set(bare.keys), ["address"])
        XCTAssertEqual(bare["address"] as? String, "0xdef0")

        let within = types[1]
        XCTAssertEqual(within["exceeded"] as? Bool, false)
        XCTAssertTrue(within["status"] is NSNull, "a type within budget is no finding")
        XCTAssertEqual(try array(within["allocations"]).count, 0)
    }

    func testJSONRoundTripsHostileStringsExactly() throws {
        let name = "App.\"Quoted\"\\Back\\slash🦊\u{1B}[0m\n\t\u{0}\u{7F}\u{2028}é/slash"
        let argument = "--name=\"x\" \\ \u{1}"
        let root = try json(
            report(
                path: "/tmp/dir/\"app\"",
                arguments: [argument, ""],
                types: [type(name, max: 1, peak: 1, atExit: 1)],
                warnings: ["warn \u{1B}"]
            )
        )
        let types = try array(root["types"]).map { try dictionary($0) }
        XCTAssertEqual(types.first?["name"] as? String, name)
        let target = try dictionary(root["target"])
        XCTAssertEqual(target["path"] as? String, "/tmp/dir/\"app\"")
        XCTAssertEqual(target["arguments"] as? [String], [argument, ""])
        XCTAssertEqual(try dictionary(root["summary"])["warnings"] as? [String], ["warn \u{1B}"])

        let text = JSONReportRenderer().render(report(path: "/tmp/a/b", types: [type(name, max: 1, peak: 1, atExit: 1)]))
        XCTAssertTrue(text.contains("\"/tmp/a/b\""), "slashes are not escaped")
        XCTAssertFalse(text.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" }, "raw control characters in JSON output")
    }

    func testJSONKeysAreSorted() throws {
        let text = JSONReportRenderer().render(leakyReport())
        func assertOrdered(_ keys: [String], line: UInt = #line) {
            let positions = keys.map { key in text.range(of: "\"\(key)\" :")?.lowerBound }
            XCTAssertFalse(positions.contains(nil), "missing one of \(keys)", line: line)
            let found = positions.compactMap { $0 }
            XCTAssertEqual(found, found.sorted(), "\(keys) out of order", line: line)
        }
        assertOrdered(["frames", "schemaVersion", "stacks", "summary", "target", "tool", "types"])
        assertOrdered([
            "droppedRecords", "exceededTypes", "instancesOverBudget", "tornRecords", "trackedTypes", "verdict", "warnings",
        ])
        assertOrdered(["arguments", "attached", "exit", "notAuditedReason", "path"])
        assertOrdered(["address", "file", "function", "line", "module", "moduleOffset"])
        assertOrdered(["allocatedTotal", "allocations", "count", "stack", "test", "truncated"])
        // The type's own keys after its allocations, still sorted ("name" first appears in "tool").
        assertOrdered(["exceeded", "liveAtExit", "max", "peakLive"])
        let typesSection = try XCTUnwrap(text.range(of: "\"types\" :")).upperBound
        let typeName = try XCTUnwrap(text.range(of: "\"name\" :", range: typesSection..<text.endIndex))
        let typeMax = try XCTUnwrap(text.range(of: "\"max\" :", range: typesSection..<text.endIndex))
        let typePeak = try XCTUnwrap(text.range(of: "\"peakLive\" :", range: typesSection..<text.endIndex))
        XCTAssertLessThan(typeMax.lowerBound, typeName.lowerBound)
        XCTAssertLessThan(typeName.lowerBound, typePeak.lowerBound)
        // Deterministic: the same report renders to the same bytes.
        XCTAssertEqual(text, JSONReportRenderer().render(leakyReport()))
    }

    func testFormatsMapToTheirRenderers() {
        XCTAssertTrue(ReportFormat.text.renderer is TextReportRenderer)
        XCTAssertTrue(ReportFormat.json.renderer is JSONReportRenderer)
        XCTAssertEqual(ReportFormat(rawValue: "json"), .json)
        XCTAssertNil(ReportFormat(rawValue: "xml"))
    }

    // MARK: - Verdict

    func testVerdictPrecedence() {
        let exceeded = type("A", max: 0, peak: 1, atExit: 1)
        let fine = type("B", max: 1, peak: 1, atExit: 1)
        XCTAssertEqual(report(types: [fine]).verdict, .clean)
        XCTAssertEqual(report().verdict, .clean)
        XCTAssertEqual(report(types: [fine, exceeded]).verdict, .budgetExceeded)
        XCTAssertEqual(
            report(outcome: .exited(code: 1), types: [fine, exceeded]).verdict, .budgetExceeded,
            "exceeded wins over a failed target")
        XCTAssertEqual(report(outcome: .signaled(signal: 6), types: [exceeded]).verdict, .budgetExceeded)
        XCTAssertEqual(report(outcome: .exited(code: 1), types: [fine]).verdict, .targetFailed)
        XCTAssertEqual(report(outcome: .signaled(signal: 15)).verdict, .targetFailed)
        XCTAssertEqual(report(types: [fine], dropped: 1).verdict, .incomplete, "lost records are never clean")
        XCTAssertEqual(
            report(outcome: .exited(code: 1), types: [fine], dropped: 1).verdict, .incomplete,
            "incomplete wins over a failed target: 'no leak' is what it cannot say")
        XCTAssertEqual(report(types: [exceeded], dropped: 1).verdict, .budgetExceeded, "a leak found still fails as one")
        XCTAssertEqual(report(types: [fine], torn: 4).verdict, .clean, "records cut short by the end are not losses")
        XCTAssertEqual(report(notAudited: .neverAttached).verdict, .notAudited)
        XCTAssertEqual(
            report(outcome: .signaled(signal: 9), notAudited: .staticRuntime, types: [exceeded]).verdict, .notAudited,
            "notAudited wins over everything")
        XCTAssertEqual(report(outcome: .exited(code: 2), notAudited: .neverAttached, types: [exceeded]).verdict, .notAudited)
    }

    func testUnreachableObjectsTakeTheirPlaceInTheVerdictsPrecedence() {
        let exceeded = type("A", max: 0, peak: 1, atExit: 1)
        var unreachable = GoldenOutputTests.unreachableUnwatched()
        XCTAssertEqual(unreachable.verdict, .unreachableObjects)
        unreachable.target.outcome = .exited(code: 1)
        XCTAssertEqual(unreachable.verdict, .unreachableObjects, "a leak found wins over a failed target")
        unreachable.droppedRecords = 1
        XCTAssertEqual(unreachable.verdict, .unreachableObjects, "and over lost records")
        unreachable.types = [exceeded]
        XCTAssertEqual(unreachable.verdict, .budgetExceeded, "a type over budget comes first")
        unreachable.notAudited = .neverAttached
        XCTAssertEqual(unreachable.verdict, .notAudited)
    }

    func testGroupsThatAllFailNothingAreSaidSoAndTheRunIsClean() {
        var report = GoldenOutputTests.unreachableUnwatched()
        report.unreachable?.groups[0].status = .baselined(recorded: 10)
        report.unreachable?.groups[1].status = .suppressed(Suppression(.type("Service.Token"), origin: ".leak-audit.json"))
        report.baseline = .init(path: "b.json", gone: [])
        XCTAssertEqual(report.verdict, .clean)
        let text = TextReportRenderer(workingDirectory: "/", width: 80).render(report)
        XCTAssertTrue(
            text.contains("unreachable: 2 groups of the program's types, none failing (1 process checked)\n"), text)
        XCTAssertTrue(text.contains("  SUPPRESSED unreachable 1 × over-retained Token (96 bytes)\n"), text)
        XCTAssertTrue(text.contains("  BASELINED unreachable 10 × cycle of 2 objects (1.9 KB)"), text)
        XCTAssertTrue(
            text.hasSuffix(
                "leak-audit: no failing unreachable object of the program's types (1 process\n  checked); 1 suppressed, 1 baselined; './Service' exited with code 0\n"
            ), text)
        // A process that could not be checked is counted in the verdict, and named with why.
        report.unreachable?.unavailable = ["process 7 (ServiceTests.xctest) did not exit normally: its heap was not checked"]
        let unchecked = TextReportRenderer(workingDirectory: "/").render(report)
        XCTAssertTrue(
            unchecked.contains(
                "leak-audit: no failing unreachable object of the program's types (1 process checked, 1 not checked);"),
            unchecked)
        XCTAssertTrue(unchecked.contains("not checked: process 7 (ServiceTests.xctest) did not exit normally"), unchecked)
    }

    func testTrackedTypeExceededIsStrictlyOverBudget() {
        XCTAssertFalse(type("A", max: 2, peak: 2, atExit: 0).exceeded)
        XCTAssertTrue(type("A", max: 2, peak: 3, atExit: 0).exceeded)
        XCTAssertTrue(type("A", max: 0, peak: 1, atExit: 0).exceeded)
        XCTAssertFalse(type("A", max: Int.max, peak: 100, atExit: 0).exceeded)
        let report = report(types: [type("A", max: 0, peak: 1, atExit: 0), type("B", max: 5, peak: 1, atExit: 0)])
        XCTAssertEqual(report.exceededTypes.map(\.name), ["A"])
    }
}
