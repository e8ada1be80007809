import Foundation
import XCTest

/// The plugin (Plugins/LeakAuditPlugin) cannot link leak-audit's code, so it keeps two things of
/// the command line's in its own source: which `leak-audit run` options take no value, and what
/// each exit code means. These tests read both from the plugin's source and from the real
/// leak-audit executable, and fail when they disagree.
final class PluginAgreementTests: XCTestCase {
    private var pluginSource: String {
        get throws {
            try String(
                contentsOf: Harness.packageRoot.appendingPathComponent("Plugins/LeakAuditPlugin/plugin.swift"), encoding: .utf8)
        }
    }

    /// The strings of the array or set literal that follows `marker` in `source`.
    private func literalStrings(after marker: String, in source: String) throws -> Set<String> {
        let start = try XCTUnwrap(source.range(of: marker), "'\(marker)' is not in plugin.swift")
        let open = try XCTUnwrap(source[start.upperBound...].firstIndex(of: "["))
        let close = try XCTUnwrap(source[open...].firstIndex(of: "]"))
        let literal = String(source[open...close])
        let quoted = try NSRegularExpression(pattern: #""([^"]*)""#)
        return Set(
            quoted.matches(in: literal, range: NSRange(literal.startIndex..., in: literal)).compactMap {
                Range($0.range(at: 1), in: literal).map { String(literal[$0]) }
            })
    }

    func testThePluginKnowsWhichRunOptionsTakeNoValue() throws {
        let dump = Harness.run([Harness.leakAudit, "run", "--experimental-dump-help"])
        XCTAssertEqual(dump.status, 0, dump.log)
        let help = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        let arguments = try XCTUnwrap((help["command"] as? [String: Any])?["arguments"] as? [[String: Any]])
        // leak-audit's own --help and --version stop before any run; the plugin answers --help itself.
        var flags: Set<String> = []
        for argument in arguments where argument["kind"] as? String == "flag" {
            let names = (argument["names"] as? [[String: Any]] ?? []).compactMap { name -> String? in
                guard let text = name["name"] as? String else { return nil }
                return (name["kind"] as? String == "short" ? "-" : "--") + text
            }
            guard !names.contains("--help"), !names.contains("--version") else { continue }
            // Short names too (-q): the plugin must not take the next argument as their value.
            flags.formUnion(names)
        }
        XCTAssertFalse(flags.isEmpty, "no flags in the dump: \(dump.stdout.prefix(500))")
        let pluginFlags = try literalStrings(after: "leakAuditFlags: Set<String> =", in: pluginSource)
        XCTAssertEqual(
            pluginFlags, flags,
            "PluginInvocation.leakAuditFlags must list exactly the options of 'leak-audit run' that take no value")
    }

    func testThePluginReadsEveryExitCodeLeakAuditDocuments() throws {
        let help = Harness.run([Harness.leakAudit, "run", "--help"])
        XCTAssertEqual(help.status, 0, help.log)
        let table = try XCTUnwrap(help.stdout.range(of: "Exit codes:"), help.stdout)
        var documented: [Int32: String] = [:]
        for line in help.stdout[table.upperBound...].split(separator: "\n") {
            let words = line.split(separator: " ", maxSplits: 1)
            if line.hasPrefix("  "), !line.hasPrefix("   "), let code = words.first.flatMap({ Int32($0) }) {
                documented[code] = words.count > 1 ? words[1].trimmingCharacters(in: .whitespaces) : ""
            }
        }
        XCTAssertEqual(Set(documented.keys), [0, 1, 2, 3, 4, 5, 64, 70], help.stdout)

        let source = try pluginSource
        let meanings = try XCTUnwrap(source.range(of: "static func meaning(ofLeakAuditStatus"))
        let body = source[meanings.upperBound...].prefix { $0 != "}" }
        let caseLine = try NSRegularExpression(pattern: #"case (\d+): return"#)
        let text = String(body)
        let explained = Set(
            caseLine.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap {
                Range($0.range(at: 1), in: text).flatMap { Int32(text[$0]) }
            })
        XCTAssertEqual(
            explained, Set(documented.keys).subtracting([0]),
            "PluginExit.meaning(ofLeakAuditStatus:) must explain every non-zero code of 'leak-audit run --help'")

        // The plugin's own statuses are leak-audit's for the same situations.
        func pluginStatus(_ name: String) throws -> Int32 {
            let pattern = try NSRegularExpression(pattern: "static let \(name): Int32 = (\\d+)")
            let match = try XCTUnwrap(pattern.firstMatch(in: source, range: NSRange(source.startIndex..., in: source)), name)
            return try XCTUnwrap(Range(match.range(at: 1), in: source).flatMap { Int32(source[$0]) })
        }
        XCTAssertTrue(documented[try pluginStatus("usageError")]?.hasPrefix("usage or configuration error") == true)
        XCTAssertTrue(documented[try pluginStatus("buildFailed")]?.hasPrefix("the target could not be started") == true)
    }
}
