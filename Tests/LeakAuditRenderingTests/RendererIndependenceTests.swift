import Foundation
import LeakAuditRendering
import XCTest

/// Each output format is one file that reads only the report model and the presentation layer: no
/// renderer uses another's types or helpers, so rewording one format never changes another, and a
/// new format is one new file (plus its case in `ReportFormat`) and its test. The model below them
/// holds the model alone: no text laid out, no colour, no file read.
final class RendererIndependenceTests: XCTestCase {
    private static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources")
    private static let renderingSources = sources.appendingPathComponent("LeakAuditRendering")

    func testNoRendererUsesAnotherRenderersDeclarations() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.renderingSources.path)
            .filter { $0.hasSuffix("ReportRenderer.swift") && $0 != "ReportRenderer.swift" }.sorted()
        // One file per case of ReportFormat, named after its renderer.
        let renderers = ReportFormat.allCases.map { "\(type(of: $0.renderer)).swift" }.sorted()
        XCTAssertEqual(files, renderers, "one file per format, named after its renderer")
        let sources = try Dictionary(
            uniqueKeysWithValues: files.map {
                ($0, try String(contentsOf: Self.renderingSources.appendingPathComponent($0), encoding: .utf8))
            })
        // The names each file declares at its top level: types, functions, extensions' members are
        // the file's own.
        let declaration = try NSRegularExpression(
            pattern: #"^(?:public |package |private |fileprivate )?"#
                + #"(?:struct|enum|final class|class|protocol|func|let|var) (\w+)"#,
            options: .anchorsMatchLines)
        for (file, source) in sources {
            let range = NSRange(source.startIndex..., in: source)
            let names = declaration.matches(in: source, range: range).compactMap { Range($0.range(at: 1), in: source) }
                .map { String(source[$0]) }
            XCTAssertFalse(names.isEmpty, "\(file) declares nothing")
            for (other, otherSource) in sources where other != file {
                for name in names {
                    XCTAssertNil(
                        otherSource.range(of: #"\b\#(name)\b"#, options: .regularExpression),
                        "\(other) uses \(name), which \(file) declares: share it through the presentation layer (ReportPhrases) or the model's vocabulary instead"
                    )
                }
            }
        }
    }

    /// The model imports no other target and neither lays text out, colours it nor reads files:
    /// those are LeakAuditPresentation's and LeakAuditFiles', which depend on it, not it on them.
    func testTheModelHoldsTheModelAlone() throws {
        let model = Self.sources.appendingPathComponent("LeakAuditModel")
        let files = try FileManager.default.contentsOfDirectory(atPath: model.path).filter { $0.hasSuffix(".swift") }
        XCTAssertFalse(files.isEmpty)
        let forbidden = [
            (#"^\s*(@testable )?import (?!FoundationEssentials$)\w+"#, "imports a module other than FoundationEssentials"),
            (#"\\u\{1B\}|\\e\["#, "writes an ANSI escape"),
            (#"\b(open|fopen|fstat|stat|read)\("#, "reads a file"),
            (#"\bReportPhrases\b|\bTextEmphasis\b|\bReadableStack\b"#, "uses the presentation layer"),
        ]
        for file in files {
            // The code, without its comments (which may name a function `open()`).
            let source = try String(contentsOf: model.appendingPathComponent(file), encoding: .utf8)
                .split(separator: "\n").filter { !$0.drop { $0 == " " }.hasPrefix("//") }.joined(separator: "\n")
            for (pattern, what) in forbidden {
                let expression = try NSRegularExpression(pattern: pattern, options: .anchorsMatchLines)
                let match = expression.firstMatch(in: source, range: NSRange(source.startIndex..., in: source))
                XCTAssertNil(match, "LeakAuditModel/\(file) \(what): that belongs in LeakAuditPresentation or LeakAuditFiles")
            }
        }
        // The manifest agrees: the model depends on nothing, the presentation layer on the model alone.
        let manifest = try String(
            contentsOf: Self.sources.deletingLastPathComponent().appendingPathComponent("Package.swift"), encoding: .utf8)
        XCTAssertTrue(manifest.contains(#".target(name: "LeakAuditModel"),"#), "LeakAuditModel must have no dependencies")
        XCTAssertTrue(
            manifest.contains(#".target(name: "LeakAuditPresentation", dependencies: ["LeakAuditModel"]),"#),
            "LeakAuditPresentation must depend on LeakAuditModel alone")
    }
}
