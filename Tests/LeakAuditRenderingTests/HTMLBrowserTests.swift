import Foundation
import XCTest

@testable import LeakAuditModel
@testable import LeakAuditRendering

/// Pages of reports at sizes a real suite reaches, opened in headless Chromium (Debian's
/// `chromium`) and measured through the DOM after its script ran: what a person can point at.
final class HTMLBrowserTests: XCTestCase {
    private func chromium() throws -> String {
        for candidate in ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        throw XCTSkip("chromium is not installed (scripts/ensure-dependencies.sh --with-test-tools installs it)")
    }

    /// Chromium's DOM of `page` after its scripts ran.
    private func dumpDOM(_ page: URL, in directory: URL) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try chromium())
        process.arguments = [
            "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
            "--allow-file-access-from-files", "--user-data-dir=\(directory.appendingPathComponent("profile").path)",
            "--virtual-time-budget=5000", "--dump-dom", page.absoluteString,
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let dom = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        return String(decoding: dom, as: UTF8.self)
    }

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
        report.tests = (0..<1_500).map { index in
            var test = AuditReport.TestReport(
                name: "AppTests.ModelTests/test\(index)",
                leaked: index == 700 ? [.init(type: "App.Model", count: 2, allocations: [])] : [])
            test.startedAt = index
            test.finishedAt = index + 1
            return test
        }
        return report
    }

    func testTheTimelineOfFifteenHundredTestsHasBandsAPointerCanFindInABrowser() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("leak-audit-html-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try HTMLReportRenderer(workingDirectory: "/home/dev/project").render(fifteenHundredTests())
            .write(to: directory.appendingPathComponent("report.html"), atomically: true, encoding: .utf8)
        try Self.harness.write(to: directory.appendingPathComponent("harness.html"), atomically: true, encoding: .utf8)
        let dom = try dumpDOM(directory.appendingPathComponent("harness.html"), in: directory)
        let start = try XCTUnwrap(dom.range(of: "<pre id=\"result\">"), dom)
        let end = try XCTUnwrap(dom.range(of: "</pre>", range: start.upperBound..<dom.endIndex), dom)
        let text = dom[start.upperBound..<end.lowerBound].replacingOccurrences(of: "&quot;", with: "\"")
            .replacingOccurrences(of: "&amp;", with: "&").replacingOccurrences(of: "&lt;", with: "<")
            .replacingOccurrences(of: "&gt;", with: ">")
        let result = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], text)
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

    /// Loads report.html in a frame and measures its test bands, and writes what it found as JSON.
    private static let harness = """
        <!DOCTYPE html>
        <html><body>
        <iframe id="report" src="report.html" width="1100" height="900"></iframe>
        <pre id="result"></pre>
        <script>
        document.getElementById("report").addEventListener("load", function () {
          var out = {};
          try {
            var d = this.contentDocument;
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
          } catch (error) {
            out.error = String(error);
          }
          document.getElementById("result").textContent = JSON.stringify(out);
        });
        </script>
        </body></html>
        """
}
