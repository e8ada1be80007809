// Headless Chromium (Debian's `chromium`) for the tests that open an HTML report as a person would:
// the rendering tests' (LeakAuditRenderingTests, HTMLBrowserTests) and the end-to-end ones
// (EndToEndTests, HTMLReportTests). Each writes a harness page that loads report.html in a frame,
// acts on it, and writes what it found as JSON into its own DOM, which --dump-dom prints.
import Foundation
import XCTest

/// Finding the browser, running it to print a page's DOM, and the harness page around a test's
/// script.
public enum HeadlessChromium {
    /// The browser's path; skips the test when it is not installed.
    public static func executable() throws -> String {
        for candidate in ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        throw XCTSkip("chromium is not installed (scripts/ensure-dependencies.sh --with-test-tools installs it)")
    }

    /// The command line (the browser first) that prints `page`'s DOM after its scripts ran, with a
    /// fresh profile in `directory` and `options` (logging, say) before the page.
    public static func dumpDOMCommand(_ page: URL, in directory: URL, options: [String] = []) throws -> [String] {
        [
            try executable(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
            "--allow-file-access-from-files", "--user-data-dir=\(directory.appendingPathComponent("profile").path)",
        ] + options + ["--virtual-time-budget=5000", "--dump-dom", page.absoluteString]
    }

    /// Chromium's DOM of `page` after its scripts ran, with a fresh profile in `directory`; what it
    /// logs is dropped (EndToEndTests' HTMLReportTests reads it, with the network log, through its
    /// own harness).
    public static func dumpDOM(_ page: URL, in directory: URL, file: StaticString = #filePath, line: UInt = #line)
        throws -> String
    {
        let command = try dumpDOMCommand(page, in: directory)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let dom = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, file: file, line: line)
        return String(decoding: dom, as: UTF8.self)
    }

    /// A page that loads report.html in a frame and, once it loaded, runs `script` with `d` the
    /// report's document and `out` an object to fill, then writes `out` as JSON (with `error` set
    /// when the script threw) for `result(in:)`.
    public static func harness(running script: String) -> String {
        """
        <!DOCTYPE html>
        <html><body>
        <iframe id="report" src="report.html" width="1100" height="900"></iframe>
        <pre id="result"></pre>
        <script>
        document.getElementById("report").addEventListener("load", function () {
          var out = {};
          try {
            var d = this.contentDocument;
        \(script)
          } catch (error) {
            out.error = String(error);
          }
          document.getElementById("result").textContent = JSON.stringify(out);
        });
        </script>
        </body></html>
        """
    }

    /// The JSON object a harness page wrote, read from the DOM that Chromium printed.
    public static func result(in dom: String) throws -> [String: Any] {
        let start = try XCTUnwrap(dom.range(of: "<pre id=\"result\">"), dom)
        let end = try XCTUnwrap(dom.range(of: "</pre>", range: start.upperBound..<dom.endIndex), dom)
        let text = dom[start.upperBound..<end.lowerBound].replacingOccurrences(of: "&quot;", with: "\"")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], text)
    }
}
