import Foundation
import HeadlessChromium
import XCTest

@testable import LeakAuditModel
@testable import LeakAuditRendering

/// Pages of reports at sizes a real suite reaches, opened in headless Chromium (Debian's
/// `chromium`) and measured through the DOM after its script ran: what a person can point at.
final class HTMLBrowserTests: XCTestCase {
    /// A run of 1,500 tests of 1 ms each, the 701st of which leaked.
    private func fifteenHundredTests() -> AuditReport {
        let frame = SymbolizedFrame(
            address: 0x1000, module: "/home/dev/project/.build/debug/App", moduleOffset: 0x10, function: "App.Model.init()",
            file: "/home/dev/project/Sources/App/Model.swift", line: 3, column: nil, inlined: false)
        var type = AuditReport.TrackedType(
            name: "App.Model", max: 2, peakLive: 5, liveAtExit: 4, allocatedTotal: 6,
            allocations: [.init(count: 5, frames: [frame], truncated: false)])
        type.timeline = LiveCountTimeline(bucketMilliseconds: 1, samples: [.init(time: 700, low: 0, high: 5, last: 4)])
        type.peakTime = 700
        var report = AuditReport(
            tool: .init(name: "leak-audit", version: "0.1.0"),
            target: .init(
                path: ".build/debug/AppPackageTests.xctest", arguments: [], attached: true, attachedProcesses: 1,
                outcome: .exited(code: 0)),
            types: [type], droppedRecords: 0, tornRecords: 0, warnings: [])
        report.target.durationMilliseconds = 1_500
        report.tests = HTMLRenderingTests.fifteenHundredTests()
        return report
    }

    func testTheTimelineOfFifteenHundredTestsHasBandsAPointerCanFindInABrowser() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("leak-audit-html-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try HTMLReportRenderer(workingDirectory: "/home/dev/project").render(fifteenHundredTests())
            .write(to: directory.appendingPathComponent("report.html"), atomically: true, encoding: .utf8)
        try Self.harness.write(to: directory.appendingPathComponent("harness.html"), atomically: true, encoding: .utf8)
        let dom = try HeadlessChromium.dumpDOM(directory.appendingPathComponent("harness.html"), in: directory)
        let result = try HeadlessChromium.result(in: dom)
        XCTAssertNil(result["error"], "\(result)")
        let bands = try XCTUnwrap(result["bands"] as? Int)
        XCTAssertGreaterThan(bands, 50)
        XCTAssertLessThan(bands, 200, "1,500 tests in bands a person can tell apart")
        // Every band at least 3 screen pixels wide (4 of the chart's 760 units, drawn about 950 wide).
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(result["narrowest"] as? Double), 3, "\(result)")
        // The pointer at the leaking test's band finds that test, and the grouped bands say which tests.
        XCTAssertEqual(result["underPointer"] as? String, "AppTests.ModelTests/test700", "\(result)")
        XCTAssertEqual(result["tooltip"] as? String, "AppTests.ModelTests/test700: 700 ms–701 ms")
        XCTAssertEqual(
            result["groupedTests"] as? Int, 1_500, "every test is in a grouped band, the leaking one with its own over it")
    }

    func testTheUnreachableSectionComesFirstWithItsCyclesStyledInABrowser() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("leak-audit-html-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try HTMLReportRenderer(workingDirectory: "/home/dev/project").render(GoldenOutputTests.unreachable())
            .write(to: directory.appendingPathComponent("report.html"), atomically: true, encoding: .utf8)
        try Self.unreachableHarness.write(
            to: directory.appendingPathComponent("harness.html"), atomically: true, encoding: .utf8)
        let dom = try HeadlessChromium.dumpDOM(directory.appendingPathComponent("harness.html"), in: directory)
        let result = try HeadlessChromium.result(in: dom)
        XCTAssertNil(result["error"], "\(result)")
        XCTAssertEqual(result["firstSection"] as? String, "unreachable", "what failed comes first")
        XCTAssertEqual(result["groups"] as? Int, 4, "the internal group is folded, not drawn")
        XCTAssertEqual(result["failingGroups"] as? Int, 2)
        XCTAssertEqual(result["firstPath"] as? [String], ["PairA", "other PairB", "other PairA"])
        XCTAssertEqual(result["lastStepDashed"] as? String, "dashed", "the cycle closes on its first object")
        // The section's own style element applies (the page's policy allows inline styles only).
        XCTAssertEqual(result["failingLabel"] as? String, "rgb(198, 40, 40)", "\(result)")
        XCTAssertEqual(result["headerBorder"] as? String, "rgb(198, 40, 40)", "\(result)")
        XCTAssertEqual(result["verdict"] as? String, "UNREACHABLE OBJECTS")
        XCTAssertEqual(result["typeRows"] as? Int, 8)
    }

    /// Loads report.html in a frame, reads its unreachable section as drawn, and writes it as JSON.
    private static let unreachableHarness = HeadlessChromium.harness(
        running: """
            out.firstSection = d.querySelector("section").id;
            var groups = d.querySelectorAll("#unreachable article.unreachable-group");
            out.groups = groups.length;
            out.failingGroups = d.querySelectorAll("#unreachable article.status-failing").length;
            var steps = Array.prototype.slice.call(groups[0].querySelectorAll("ol.path li"));
            out.firstPath = steps.map(function (li) { return li.textContent.trim(); });
            out.lastStepDashed = getComputedStyle(steps[steps.length - 1]).borderTopStyle;
            var label = d.querySelector("#unreachable article.status-failing .status");
            out.failingLabel = getComputedStyle(label).backgroundColor;
            out.headerBorder = getComputedStyle(d.querySelector("header")).borderLeftColor;
            out.verdict = d.querySelector("header .verdict").innerText;
            out.typeRows = d.querySelectorAll("#unreachable table tbody tr").length;
            """)

    /// Loads report.html in a frame, measures its test bands, and writes what it found as JSON.
    private static let harness = HeadlessChromium.harness(
        running: """
            var rects = Array.prototype.slice.call(d.querySelectorAll("article.type svg.timeline rect.test-band"));
            out.bands = rects.length;
            out.narrowest = Math.min.apply(null, rects.map(function (r) { return r.getBoundingClientRect().width; }));
            out.groupedTests = rects.filter(function (r) { return r.classList.contains("grouped"); })
              .reduce(function (sum, r) { return sum + +r.dataset.tests; }, 0);
            var leaked = d.querySelector("rect.test-band.leaked");
            var box = leaked.getBoundingClientRect();
            var found = d.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
            out.underPointer = found ? found.dataset.test : null;
            out.tooltip = found && found.querySelector("title") ? found.querySelector("title").textContent : null;
            """)
}
