import Foundation
import HeadlessChromium
import LeakAuditModel
import XCTest

/// The HTML report as a person sees it: written by a real run of a fixture test bundle, opened in
/// headless Chromium (Debian's `chromium`), and read back through the DOM after its script ran:
/// the chart's points against the JSON report's timeline, the flame graph's frames against its
/// allocation stacks, the per-test rows against its tests; what a click and a hover do; and that
/// the page asked for nothing over the network and logged no console error.
final class HTMLReportTests: XCTestCase {
    private let bundle = "FixturesPackageTests.xctest"

    /// The report of `ScreenTests.ScreenTests` under `--leaks-per-test`, as read from its JSON, and
    /// the path of its HTML.
    private func runReports(in directory: URL) throws -> (report: AuditReport, htmlPath: String) {
        let jsonPath = directory.appendingPathComponent("run.json").path
        let htmlPath = directory.appendingPathComponent("report.html").path
        let run = Harness.run([
            Harness.leakAudit, "run", "--leaks-per-test", "--format", "json", "--output", jsonPath, "--output-html", htmlPath,
            try Harness.fixture(bundle), "ScreenTests.ScreenTests",
        ])
        XCTAssertEqual(run.status, 1, run.log)
        return (try Harness.readReport(jsonPath), htmlPath)
    }

    /// Chromium's DOM of `page` after its scripts ran, what it logged, and its network log.
    private func dumpDOM(_ page: String, in directory: URL) throws -> (dom: String, log: String, netLog: String) {
        let netLog = directory.appendingPathComponent("net-log.json").path
        let result = Harness.run(
            try HeadlessChromium.dumpDOMCommand(
                URL(fileURLWithPath: page), in: directory,
                options: ["--enable-logging=stderr", "--v=0", "--log-net-log=\(netLog)"]))
        XCTAssertEqual(result.status, 0, result.log)
        let net = (try? String(contentsOfFile: netLog, encoding: .utf8)) ?? ""
        return (result.stdout, result.stderr, net)
    }

    func testTheHTMLReportShowsTheRunsTimelineFlameGraphAndTestsInABrowser() throws {
        let directory = URL(fileURLWithPath: try Harness.scratchFolder("html"))
        let (report, htmlPath) = try runReports(in: directory)
        let html = try String(contentsOfFile: htmlPath, encoding: .utf8)
        let type = try XCTUnwrap(report.types.first { $0.name == "ScreenTests.ProfileScreen" })
        let timeline = try XCTUnwrap(type.timeline, "the JSON report has the type's timeline")
        let samples = timeline.samples
        XCTAssertFalse(samples.isEmpty)

        // A harness page loads the report in a frame and acts on it as a person would; its results
        // land in its own DOM, which --dump-dom prints.
        let harness = directory.appendingPathComponent("harness.html")
        try Self.harness.write(to: harness, atomically: true, encoding: .utf8)
        let (dom, log, netLog) = try dumpDOM(harness.path, in: directory)
        let result = try HeadlessChromium.result(in: dom)
        XCTAssertNil(result["error"], "\(result)")

        // The chart: one point per sample of the JSON timeline, at its times; the budget and the peak.
        XCTAssertEqual(result["points"] as? [Int], samples.map(\.time), "chart points at the timeline's times")
        XCTAssertEqual(result["pointHighs"] as? [Int], samples.map(\.high))
        XCTAssertEqual(result["budget"] as? String, "\(type.max)")
        XCTAssertEqual(result["peak"] as? String, "\(type.peakLive)")
        XCTAssertEqual(
            result["testBands"] as? [String],
            ["ScreenTests.ScreenTests/testLeaksScreens", "ScreenTests.ScreenTests/testReleasesScreens"])

        // The flame graph: the allocating line of the test is a user frame; the root counts every
        // instance alive at the peak.
        let frames = try XCTUnwrap(result["frames"] as? [String])
        XCTAssertTrue(frames.contains { $0.contains("testLeaksScreens") }, "\(frames)")
        XCTAssertEqual(result["rootCount"] as? String, "\(type.allocations.reduce(0) { $0 + $1.count })")
        XCTAssertTrue((result["userFrames"] as? Int ?? 0) > 0, "\(result)")
        // A click zooms: the clicked frame spans the whole width, frames beside it are hidden.
        XCTAssertEqual(result["zoomedWidth"] as? String, "100%")
        XCTAssertEqual(result["zoomedLeft"] as? String, "0%")
        // A hover names the frame with its file and line.
        XCTAssertTrue((result["detail"] as? String ?? "").contains("ScreenTests.swift:"), "\(result)")
        // The peak/exit switch shows the other graph.
        XCTAssertEqual(result["exitShownAfterSwitch"] as? Bool, true)

        // The per-test table: one row per test of the JSON report that left something; the others
        // are named once below it. Sorting by instances puts the leaking test first.
        let everyTest = try XCTUnwrap(report.tests)
        let leftSomething = everyTest.filter { test in
            !test.leaked.isEmpty || !test.globalState.isEmpty || !test.keptByTestCase.isEmpty
        }
        XCTAssertEqual(Set(result["testRows"] as? [String] ?? []), Set(leftSomething.map(\.name)))
        XCTAssertTrue(html.contains("left nothing alive</summary><p>"), html)
        XCTAssertTrue(html.contains("ScreenTests.ScreenTests/testReleasesScreens"), html)
        XCTAssertEqual((result["sortedByInstances"] as? [String])?.first, "ScreenTests.ScreenTests/testLeaksScreens")
        XCTAssertEqual(result["scripts"] as? Int, 1, "the page's own script only")

        // Nothing asked of the network, nothing said in the console.
        XCTAssertFalse(html.contains("http://") || html.contains("https://") || html.contains("src=\""), "no external resource")
        XCTAssertEqual(try Self.pageRequests(netLog), [], "requests made by the page")
        let console = log.split(separator: "\n").filter { $0.contains(":CONSOLE") || $0.contains("Uncaught") }
        XCTAssertEqual(console, [], log)
    }

    /// The URLs the page asked for, from Chromium's network log: requests whose initiator is an
    /// origin (a file:// page's is "null"). The browser's own (component updates, account checks)
    /// have "not an origin"; file:// loads are not network requests at all.
    static func pageRequests(_ netLog: String) throws -> [String] {
        let log = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(netLog.utf8)) as? [String: Any], "no network log")
        let constants = try XCTUnwrap(log["constants"] as? [String: Any])
        let types = try XCTUnwrap(constants["logEventTypes"] as? [String: Int])
        let startJob = try XCTUnwrap(types["URL_REQUEST_START_JOB"])
        let events = try XCTUnwrap(log["events"] as? [[String: Any]])
        return events.compactMap { event in
            guard event["type"] as? Int == startJob, let parameters = event["params"] as? [String: Any],
                let url = parameters["url"] as? String, parameters["initiator"] as? String != "not an origin"
            else { return nil }
            return url
        }
    }

    func testTheNetworkCheckSeesARequestThatAPageMakes() throws {
        // The check above must be able to fail: a page with an image from the network.
        let directory = URL(fileURLWithPath: try Harness.scratchFolder("html"))
        let page = directory.appendingPathComponent("fetches.html")
        try "<html><body><img src=\"http://leak-audit.invalid/a.png\"><script>console.error('said')</script></body></html>"
            .write(to: page, atomically: true, encoding: .utf8)
        let (_, log, netLog) = try dumpDOM(page.path, in: directory)
        XCTAssertEqual(try Self.pageRequests(netLog), ["http://leak-audit.invalid/a.png"])
        XCTAssertTrue(log.contains(":CONSOLE"), log)
    }

    /// Loads report.html in a frame, reads it and clicks through it, and writes what it found as JSON.
    private static let harness = HeadlessChromium.harness(
        running: """
            var chart = d.querySelector("article.type svg.timeline");
            out.points = Array.prototype.map.call(chart.querySelectorAll("circle.sample"), function (c) { return +c.dataset.timeMs; });
            out.pointHighs = Array.prototype.map.call(chart.querySelectorAll("circle.sample"), function (c) { return +c.dataset.high; });
            out.budget = chart.querySelector("line.budget").dataset.max;
            out.peak = chart.querySelector("circle.peak").dataset.peak;
            out.testBands = Array.prototype.map.call(chart.querySelectorAll("rect.test-band"), function (r) { return r.dataset.test; });
            var block = d.querySelector("article.type .flame-block");
            var graph = block.querySelector(".flame:not([hidden])");
            var frames = Array.prototype.slice.call(graph.querySelectorAll(".frame"));
            out.frames = frames.map(function (f) { return f.textContent; });
            out.rootCount = graph.querySelector(".frame.root").dataset.count;
            out.userFrames = graph.querySelectorAll(".frame.user").length;
            var target = frames.filter(function (f) { return f.textContent.indexOf("testLeaksScreens") >= 0; })[0];
            target.dispatchEvent(new MouseEvent("mouseover", { bubbles: true }));
            out.detail = block.querySelector(".frame-detail").textContent;
            target.click();
            out.zoomedWidth = target.style.width;
            out.zoomedLeft = target.style.left;
            var buttons = block.querySelectorAll(".flame-views button");
            if (buttons.length > 1) {
              buttons[1].click();
              out.exitShownAfterSwitch = !block.querySelector('.flame[data-view="exit"]').hidden
                && block.querySelector('.flame[data-view="peak"]').hidden;
            }
            out.testRows = Array.prototype.map.call(d.querySelectorAll("#tests tr.test-row"), function (r) { return r.dataset.test; });
            var headers = d.querySelectorAll("#tests th");
            headers[4].click();
            headers[4].click();
            out.sortedByInstances = Array.prototype.map.call(d.querySelectorAll("#tests tr.test-row"), function (r) { return r.dataset.test; });
            out.scripts = d.querySelectorAll("script").length;
            """)
}
