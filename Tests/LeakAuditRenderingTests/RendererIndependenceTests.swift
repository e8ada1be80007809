import Foundation
import XCTest

/// Each output format is one file that reads only the report model: no renderer uses another's
/// types or helpers, so rewording one format never changes another, and a new format is one new
/// file (plus its case in `ReportFormat`) and its test.
final class RendererIndependenceTests: XCTestCase {
    private static let renderingSources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources/LeakAuditRendering")

    func testNoRendererUsesAnotherRenderersDeclarations() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.renderingSources.path)
            .filter { $0.hasSuffix("ReportRenderer.swift") && $0 != "ReportRenderer.swift" }.sorted()
        XCTAssertEqual(files.count, 6, "one file per format: \(files)")
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
                        "\(other) uses \(name), which \(file) declares: share it through the model (ReportPhrases, the vocabulary) instead"
                    )
                }
            }
        }
    }
}
