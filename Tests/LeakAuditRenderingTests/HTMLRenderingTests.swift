import Foundation
import XCTest

@testable import LeakAuditModel
@testable import LeakAuditRendering

/// The HTML renderer on reports built by hand: what the chart, the flame graph, the tables and the
/// retaining paths hold, and that nothing from the target can add markup or script. The page in a
/// real browser is EndToEndTests/HTMLReportTests.
final class HTMLRenderingTests: XCTestCase {
    private static let cwd = "/home/dev/project"

    private func frame(
        _ function: String?, _ file: String? = nil, _ line: Int? = nil, module: String? = "/home/dev/project/.build/debug/App"
    )
        -> SymbolizedFrame
    {
        SymbolizedFrame(
            address: 0x1000, module: module, moduleOffset: 0x10, function: function, file: file, line: line, column: nil,
            inlined: false)
    }

    private var stack: [SymbolizedFrame] {
        [
            frame("App.Model.init() -> App.Model", "\(Self.cwd)/Sources/App/Model.swift", 3),
            frame("App.Screen.open() -> ()", "\(Self.cwd)/Sources/App/Screen.swift", 12),
            frame("App_main", "\(Self.cwd)/Sources/App/main.swift", 5),
            frame("__libc_start_call_main", module: "/lib/x86_64-linux-gnu/libc.so.6"),
        ]
    }

    private func report(typeName: String = "App.Model", testName: String = "AppTests.ModelTests/testOpen") -> AuditReport {
        var type = AuditReport.TrackedType(
            name: typeName, max: 2, peakLive: 5, liveAtExit: 4, allocatedTotal: 6,
            allocations: [
                .init(count: 3, frames: stack, truncated: false),
                .init(
                    count: 2,
                    frames: [frame("App.Other.make() -> App.Model", "\(Self.cwd)/Sources/App/Other.swift", 8)] + stack.suffix(2),
                    truncated: false),
            ])
        type.allocationsAtExit = [.init(count: 4, frames: stack, truncated: false)]
        type.timeline = LiveCountTimeline(
            bucketMilliseconds: 1,
            samples: [.init(time: 1, low: 1, high: 3, last: 3), .init(time: 7, low: 3, high: 5, last: 4)])
        type.peakTime = 7
        type.retainers = [
            Retainer(
                count: 3, root: .init(kind: .global, name: "App.router"), path: [.init(via: "stack", type: typeName)],
                retainedBytes: 2048),
            Retainer(
                count: 1, root: .init(kind: .cycle, name: "a cycle of 2 objects"),
                path: [.init(via: "owner", type: "App.Owner"), .init(via: "model", type: typeName)]),
        ]
        var report = AuditReport(
            tool: .init(name: "leak-audit", version: "0.1.0"),
            target: .init(
                path: ".build/debug/App", arguments: [], attached: true, attachedProcesses: 1, outcome: .exited(code: 0)),
            types: [type, .init(name: "App.Fine", max: 3, peakLive: 1, liveAtExit: 0, allocatedTotal: 1, allocations: [])],
            droppedRecords: 0, tornRecords: 0, warnings: ["a warning with <b>markup</b>"])
        report.target.durationMilliseconds = 10
        var leaking = AuditReport.TestReport(
            name: testName,
            leaked: [.init(type: typeName, count: 2, allocations: [.init(count: 2, frames: stack, truncated: false)])])
        leaking.startedAt = 0
        leaking.finishedAt = 6
        var clean = AuditReport.TestReport(name: "AppTests.ModelTests/testClose", leaked: [])
        clean.startedAt = 6
        clean.finishedAt = 9
        report.tests = [leaking, clean]
        return report
    }

    private func count(_ needle: String, in text: String) -> Int { text.components(separatedBy: needle).count - 1 }

    func testTheChartHasAPointPerSampleTheBudgetThePeakAndTheTests() {
        let html = HTMLReportRenderer(workingDirectory: Self.cwd).render(report())
        XCTAssertEqual(count("<circle class=\"sample\"", in: html), 2)
        XCTAssertTrue(html.contains("data-time-ms=\"1\" data-low=\"1\" data-high=\"3\" data-last=\"3\""), html)
        XCTAssertTrue(html.contains("data-time-ms=\"7\" data-low=\"3\" data-high=\"5\" data-last=\"4\""), html)
        XCTAssertTrue(html.contains("<line class=\"budget\""))
        XCTAssertTrue(html.contains("data-max=\"2\""))
        XCTAssertTrue(html.contains("<circle class=\"peak\""))
        XCTAssertTrue(html.contains("data-peak=\"5\" data-time-ms=\"7\""))
        XCTAssertEqual(count("<rect class=\"test-band", in: html), 2)
        XCTAssertTrue(html.contains("data-test=\"AppTests.ModelTests/testOpen\""))
    }

    func testTheFlameGraphsCountTheInstancesAtThePeakAndAtExitByFrame() {
        let html = HTMLReportRenderer(workingDirectory: Self.cwd).render(report())
        XCTAssertTrue(html.contains("<div class=\"flame\" data-view=\"peak\" data-total=\"5\""), html)
        XCTAssertTrue(html.contains("<div class=\"flame\" data-view=\"exit\" data-total=\"4\" hidden"), html)
        // App_main holds all 5 at the peak; Screen.open() 5 too; Model.init() 3 and Other.make() 2.
        XCTAssertTrue(html.contains("data-depth=\"2\" data-count=\"5\""), html)
        XCTAssertTrue(html.contains("data-depth=\"4\" data-count=\"3\""), html)
        XCTAssertTrue(html.contains("data-depth=\"3\" data-count=\"2\""), html)
        XCTAssertTrue(html.contains("class=\"frame user\""))
        XCTAssertTrue(html.contains("class=\"frame runtime\""), "libc is the runtime's")
        XCTAssertTrue(html.contains("Sources/App/Model.swift:3"), "frames name their file and line")
    }

    func testTablesRetainersAndSummary() {
        let html = HTMLReportRenderer(workingDirectory: Self.cwd).render(report())
        // The test that left nothing is folded below the table.
        XCTAssertEqual(count("<tr class=\"test-row", in: html), 1)
        XCTAssertTrue(html.contains("<details class=\"clean-tests\"><summary>1 test left nothing alive</summary>"), html)
        XCTAssertTrue(html.contains("<tr class=\"test-row status-leaked\" data-test=\"AppTests.ModelTests/testOpen\""), html)
        XCTAssertTrue(html.contains("<a href=\"#type-0\">App.Model</a>"), "a leaked type links to its chart")
        XCTAssertTrue(html.contains("id=\"within-budget\""))
        XCTAssertTrue(html.contains("<li class=\"root kind-global\">global App.router</li>"))
        XCTAssertTrue(
            html.contains("<li class=\"step back\"><span class=\"via\">back to</span> <span class=\"object\">Owner</span>"))
        XCTAssertTrue(html.contains("2 KB retained") || html.contains("2.0 KB retained"), html)
        XCTAssertTrue(html.contains("<header id=\"summary\" class=\"verdict-budgetExceeded\">"))
        XCTAssertTrue(html.contains("<dd id=\"over-budget\">1</dd>"))
    }

    func testNothingFromTheTargetBecomesMarkupOrScript() {
        let hostile = "App.X<script>alert(1)</script>\"'&\u{1B}[31m\u{202E}evil\u{7}"
        let html = HTMLReportRenderer(workingDirectory: Self.cwd).render(
            report(typeName: hostile, testName: "<img src=x onerror=alert(1)>"))
        XCTAssertFalse(html.contains("<script>alert"), "a name cannot open a script")
        XCTAssertFalse(html.contains("<img"), "nor an element")
        XCTAssertFalse(html.contains("<b>markup"), "warnings are text")
        XCTAssertTrue(html.contains("App.X&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;"), html)
        XCTAssertEqual(count("<script>", in: html), 1, "the page's own script only")
        for scalar in html.unicodeScalars where scalar.value < 0x20 && scalar != "\n" {
            XCTFail("raw control character U+\(String(scalar.value, radix: 16)) in the page")
        }
        XCTAssertFalse(html.unicodeScalars.contains("\u{202E}"), "bidirectional overrides are shown as escapes")
        XCTAssertTrue(html.contains("\\u{202e}evil"))
    }

    func testThePageAsksForNothingOverTheNetwork() {
        let html = HTMLReportRenderer(workingDirectory: Self.cwd).render(report())
        XCTAssertTrue(html.contains("Content-Security-Policy\" content=\"default-src 'none'"))
        XCTAssertFalse(html.contains("http://") || html.contains("https://") || html.contains("src=\""))
    }

    // MARK: - What a hostile target can make the page carry (issue 29)

    func testAStackOfTwoHundredThousandFramesIsCutAtTheFlameGraphsDepthAndReleasedWithoutRecursion() {
        var report = report()
        let deep = (0..<200_000).map { frame("App.recurse\($0)() -> ()", "\(Self.cwd)/Sources/App/Deep.swift", $0 + 1) }
        report.types[0].allocations = [.init(count: 3, frames: deep, truncated: false)]
        report.types[0].allocationsAtExit = []
        let html = HTMLReportRenderer(workingDirectory: Self.cwd).render(report)
        let depthLimit = HTMLReportRenderer.flameDepthLimit
        XCTAssertEqual(count("class=\"frame user\"", in: html), depthLimit)
        XCTAssertTrue(html.contains("style=\"height:\((depthLimit + 1) * 20)px\""), "as deep as the frames drawn")
        XCTAssertTrue(
            html.contains("Stacks deeper than \(depthLimit) frames are cut there: \(200_000 - depthLimit) deeper frames"),
            html.suffix(3000)
                .description)
        XCTAssertLessThan(html.utf8.count, 2_000_000)
    }

    func testEveryFormatRendersAndReadsBackAStackOf35000FramesFromASavedReport() throws {
        // Issue 29: `report --format html` of a saved report with one group of 175,000 frames crashed.
        var report = report()
        let deep = (0..<35_000).map { frame("App.recurse\($0 % 7)() -> ()", "\(Self.cwd)/Sources/App/Deep.swift", $0 % 7 + 1) }
        report.types[0].allocations = [.init(count: 3, frames: deep, truncated: true)]
        let json = JSONReportRenderer().render(report)
        let read = try JSONReportReader().decode(Array(json.utf8), path: "deep.json")
        XCTAssertEqual(read.types[0].allocations[0].frames.count, 35_000)
        for format in ReportFormat.allCases {
            let text = format.renderer.render(read)
            XCTAssertTrue(text.contains("App.recurse") || format == .github, "\(format)")
        }
    }

    func testANameOfAMegabyteIsShownCutAndNotRepeatedInEveryFrame() {
        let name = "App.Model" + String(repeating: "N", count: 1 << 20)
        var report = report(typeName: name)
        let stack = (0..<41).map { frame("App.f\($0)() -> ()", "\(Self.cwd)/Sources/App/F.swift", $0 + 1) }
        report.types[0].allocations = [.init(count: 5, frames: stack, truncated: false)]
        let html = HTMLReportRenderer(workingDirectory: Self.cwd).render(report)
        XCTAssertLessThan(html.utf8.count, 200_000, "a 1 MB name costs the page a few kilobytes")
        let shown = "App.Model" + String(repeating: "N", count: HTMLReportRenderer.longestText - 9)
        XCTAssertTrue(html.contains(shown + "… (\((1 << 20) + 9 - HTMLReportRenderer.longestText) more characters"))
        XCTAssertFalse(html.contains(shown + "N"), "no more than the cut name")
        XCTAssertLessThan(count(shown, in: html), 20, "the name is not repeated in each of the 41 frames' boxes")
    }

    func testATimelineOfAMillionSamplesIsDrawnInAThousandBucketsWithItsPeakExact() {
        var report = report()
        let samples = (0..<1_000_000).map { time in
            LiveCountTimeline.Sample(time: time, low: time % 7, high: time == 654_321 ? 9_999 : time % 7 + 1, last: time % 7)
        }
        report.types[0].timeline = LiveCountTimeline(bucketMilliseconds: 1, samples: samples)
        report.types[0].peakLive = 9_999
        report.types[0].peakTime = 654_321
        report.target.durationMilliseconds = 1_000_000
        let html = HTMLReportRenderer(workingDirectory: Self.cwd).render(report)
        let points = count("<circle class=\"sample\"", in: html)
        XCTAssertLessThanOrEqual(points, HTMLReportRenderer.chartSampleLimit)
        XCTAssertGreaterThan(points, HTMLReportRenderer.chartSampleLimit / 2)
        XCTAssertTrue(html.contains("data-bucket-ms=\"1001\""), "buckets of 1,001 ms")
        XCTAssertTrue(html.contains("data-time-ms=\"653653\" data-low=\"0\" data-high=\"9999\""), "the peak's bucket")
        XCTAssertLessThan(html.utf8.count, 1_000_000)
    }

    func testTenThousandTypesOverBudgetGetChartsForTheFirstAndARowEachForTheRest() {
        var report = report()
        let stack = (0..<48).map { frame("App.f\($0)() -> ()", "\(Self.cwd)/Sources/App/F.swift", $0 + 1) }
        let type = report.types[0]
        report.types = (0..<10_000).map { index in
            var copy = type
            copy.name = "App.Type\(index)" + String(repeating: "N", count: 2_000)
            copy.allocations = [.init(count: 5, frames: stack, truncated: false)]
            copy.allocationsAtExit = copy.allocations
            return copy
        }
        let html = HTMLReportRenderer(workingDirectory: Self.cwd).render(report)
        let limit = HTMLReportRenderer.chartedTypeLimit
        XCTAssertEqual(count("<article class=\"type", in: html), limit)
        XCTAssertEqual(count("<svg class=\"timeline\"", in: html), limit)
        XCTAssertTrue(html.contains("<h3 id=\"more-types\">\(10_000 - limit) more over budget, without charts</h3>"))
        XCTAssertTrue(html.contains("<tr><td>App.Type9999NNN"), "the last type has its row")
        XCTAssertLessThan(html.utf8.count, 6_000_000, "a few hundred bytes a type past the charted ones")
    }

    /// 1,500 tests of 1 ms each, the 701st of which leaked 2 App.Model (HTMLBrowserTests too).
    static func fifteenHundredTests() -> [AuditReport.TestReport] {
        (0..<1_500).map { index in
            var test = AuditReport.TestReport(
                name: "AppTests.ModelTests/test\(index)",
                leaked: index == 700 ? [.init(type: "App.Model", count: 2, allocations: [])] : [])
            test.startedAt = index
            test.finishedAt = index + 1
            return test
        }
    }

    func testFifteenHundredTestsAreDrawnAsBandsWideEnoughToPointAtWithTheLeakingTestsOwn() throws {
        var report = report()
        report.target.durationMilliseconds = 1_500
        report.types[0].timeline = LiveCountTimeline(bucketMilliseconds: 1, samples: [.init(time: 700, low: 0, high: 5, last: 4)])
        report.types[0].peakTime = 700
        report.tests = Self.fifteenHundredTests()
        let html = HTMLReportRenderer(workingDirectory: Self.cwd).render(report)
        let bands = html.components(separatedBy: "<rect class=\"test-band").dropFirst()
        XCTAssertGreaterThan(bands.count, 50)
        XCTAssertLessThan(bands.count, 200, "1,500 tests on 700 units of chart are drawn in groups")
        for band in bands {
            let width = try XCTUnwrap(band.components(separatedBy: "width=\"").dropFirst().first?.prefix { $0 != "\"" })
            XCTAssertGreaterThanOrEqual(Double(width) ?? 0, HTMLReportRenderer.narrowestTestBand, band)
        }
        XCTAssertEqual(count(" leaked\"", in: html), 1, "the leaking test has a band of its own")
        XCTAssertTrue(html.contains("class=\"test-band band-0 leaked\"") || html.contains("class=\"test-band band-1 leaked\""))
        XCTAssertTrue(html.contains("data-test=\"AppTests.ModelTests/test700\"><title>AppTests.ModelTests/test700: "), html)
        XCTAssertTrue(
            html.contains("<title>9 tests, AppTests.ModelTests/test0 to AppTests.ModelTests/test8: 0 ms–9 ms</title>"), html)
    }

    func testNumbersOnTheAxes() {
        XCTAssertEqual(HTMLReportRenderer.niceCeiling(7), 10)
        XCTAssertEqual(HTMLReportRenderer.niceCeiling(11), 20)
        XCTAssertEqual(HTMLReportRenderer.niceCeiling(1), 1)
        XCTAssertEqual(HTMLReportRenderer.ticks(upTo: 12), [0, 2, 4, 6, 8, 10, 12])
        XCTAssertEqual(HTMLReportRenderer.ticks(upTo: 1026), [0, 200, 400, 600, 800, 1000])
        XCTAssertEqual(HTMLReportRenderer.duration(350), "350 ms")
        XCTAssertEqual(HTMLReportRenderer.duration(1_250), "1.3 s")
        XCTAssertEqual(HTMLReportRenderer.duration(2_000), "2 s")
        XCTAssertEqual(HTMLReportRenderer.duration(125_000), "2 min 5 s")
    }
}
