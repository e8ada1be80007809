import Foundation
import XCTest

/// LeakAuditCore's folders follow the stages of an audit (Audit.swift): each folder may use what
/// the folders beneath it declare, never what a later stage's folder declares, so that a stage can
/// be read and changed knowing only what lies beneath it, and no two folders depend on each other.
final class StageLayeringTests: XCTestCase {
    /// Core's folders, lowest first: the request and the platform beneath everything, then the
    /// stages in the order `audit` runs them. Audit.swift and ChannelReplay.swift (a run replayed from
    /// a channel's bytes, for the fuzzer), in no folder, run them all.
    static let layers = ["Configuration", "Platform", "Planning", "Recording", "Retainers", "Reporting", "Judging"]

    private static let coreSources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources/LeakAuditCore")

    func testNoFolderNamesWhatALaterStageDeclares() throws {
        let files = try Self.swiftFiles()
        XCTAssertTrue(files.contains { $0.path == "Audit.swift" }, "Audit.swift runs the stages")
        // Where each name is declared: the lowest layer that declares it.
        var declaredIn: [String: Int] = [:]
        for file in files {
            guard let layer = file.layer else { continue }
            for name in Self.declaredNames(file.source) { declaredIn[name] = min(declaredIn[name] ?? layer, layer) }
        }
        XCTAssertNotNil(declaredIn["ReportBuilder"], "declarations are found")
        var backArrows: [String] = []
        for file in files {
            guard let layer = file.layer else { continue }
            for name in Self.identifiers(Self.code(file.source)).sorted() {
                guard let declared = declaredIn[name], declared > layer else { continue }
                backArrows.append("\(file.path) names \(name), declared in \(Self.layers[declared])/, a later stage")
            }
        }
        XCTAssertEqual(backArrows, [], "move the decision down to where both can see it, or hand it in from Audit.swift")
    }

    /// The check itself: a name from a later stage, in code, is found; in a comment or a string it
    /// is not.
    func testABackArrowIsFoundInCodeOnly() {
        let source = #"""
            // ReportBuilder in a comment
            /* RecordedRun in a block comment */
            let message = "RetainerSearch in a string, \(HeapWalks.self) interpolated, \"Reception\" escaped"
            let raw = #"RunPlan "raw" \(RecordChannel)"#
            let lines = """
                TypeOrigin \(LifetimeLedger.self)
                """
            """#
        XCTAssertEqual(
            Self.identifiers(Self.code(source)).intersection([
                "ReportBuilder", "RecordedRun", "RetainerSearch", "HeapWalks", "Reception", "RunPlan", "RecordChannel",
                "TypeOrigin", "LifetimeLedger",
            ]), ["HeapWalks", "LifetimeLedger"])
        XCTAssertEqual(
            Self.declaredNames("public struct A {}\nfinal class B {\n    struct Nested {}\n}\nprivate enum C {}\nfunc d() {}\n"),
            ["A", "B", "d"])
    }

    /// Every Swift file of the module, with its path under Sources/LeakAuditCore and its layer (nil
    /// for Audit.swift); a folder that is no layer fails the test.
    private static func swiftFiles() throws -> [(path: String, layer: Int?, source: String)] {
        let root = coreSources.standardizedFileURL.path
        guard let walker = FileManager.default.enumerator(atPath: root) else {
            throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: root])
        }
        var files: [(path: String, layer: Int?, source: String)] = []
        for case let path as String in walker where path.hasSuffix(".swift") {
            let folder = path.split(separator: "/").count > 1 ? path.split(separator: "/")[0] : nil
            let layer = folder.flatMap { layers.firstIndex(of: String($0)) }
            if folder != nil && layer == nil { XCTFail("\(path) is in no stage's folder: add its folder to `layers`") }
            let source = try String(contentsOfFile: root + "/" + path, encoding: .utf8)
            files.append((path, layer, source))
        }
        return files
    }

    /// The names a file declares at its top level and lets other files use: types, functions,
    /// constants and variables that are not private.
    private static func declaredNames(_ source: String) -> Set<String> {
        let declaration = try! NSRegularExpression(
            pattern: #"^(?:@\w+(?:\([^)]*\))? )*(?:(?:public|package|internal|final|indirect) )*"#
                + #"(?:struct|enum|class|actor|protocol|typealias|func|let|var) (\w+)"#,
            options: .anchorsMatchLines)
        let range = NSRange(source.startIndex..., in: source)
        return Set(
            declaration.matches(in: source, range: range).compactMap { Range($0.range(at: 1), in: source) }
                .map { String(source[$0]) })
    }

    /// `source` without its comments and the text of its string literals, which may name
    /// anything; what a string interpolates is code, and kept.
    private static func code(_ source: String) -> String {
        var scanner = CodeScanner(Array(source.unicodeScalars))
        scanner.scanCode(untilClosingParenthesis: false)
        return scanner.code
    }

    /// The identifiers in `code`.
    private static func identifiers(_ code: String) -> Set<String> {
        var names: Set<String> = []
        var name = ""
        for scalar in code.unicodeScalars {
            if scalar == "_" || CharacterSet.alphanumerics.contains(scalar) {
                name.unicodeScalars.append(scalar)
            } else {
                if let first = name.unicodeScalars.first, !CharacterSet.decimalDigits.contains(first) { names.insert(name) }
                name = ""
            }
        }
        if !name.isEmpty { names.insert(name) }
        return names
    }
}

/// Copies Swift code, leaving out comments and the text of string literals (plain, multi-line and
/// raw), and keeping what strings interpolate.
private struct CodeScanner {
    private let scalars: [Unicode.Scalar]
    private var position = 0
    private(set) var code = ""

    init(_ scalars: [Unicode.Scalar]) { self.scalars = scalars }

    private func starts(with text: String) -> Bool {
        let wanted = Array(text.unicodeScalars)
        return position + wanted.count <= scalars.count && Array(scalars[position..<position + wanted.count]) == wanted
    }

    /// Code up to the end, or up to the parenthesis that closes an interpolation.
    mutating func scanCode(untilClosingParenthesis: Bool) {
        var depth = 0
        while position < scalars.count {
            if starts(with: "//") {
                while position < scalars.count && scalars[position] != "\n" { position += 1 }
            } else if starts(with: "/*") {
                position += 2
                while position < scalars.count && !starts(with: "*/") { position += 1 }
                position += 2
            } else if scalars[position] == "#" || scalars[position] == "\"" {
                var hashes = 0
                while position + hashes < scalars.count && scalars[position + hashes] == "#" { hashes += 1 }
                guard position + hashes < scalars.count, scalars[position + hashes] == "\"" else {
                    code.unicodeScalars.append(scalars[position])
                    position += 1
                    continue
                }
                position += hashes
                scanString(hashes: hashes)
                code += " \"\" "
            } else {
                let scalar = scalars[position]
                if untilClosingParenthesis && scalar == "(" { depth += 1 }
                if untilClosingParenthesis && scalar == ")" {
                    if depth == 0 {
                        position += 1
                        return
                    }
                    depth -= 1
                }
                code.unicodeScalars.append(scalar)
                position += 1
            }
        }
    }

    /// A string literal from its opening quote, with `hashes` #s before it (a raw string).
    private mutating func scanString(hashes: Int) {
        let delimiter = starts(with: "\"\"\"") ? "\"\"\"" : "\""
        position += delimiter.count
        let closing = delimiter + String(repeating: "#", count: hashes)
        let escape = "\\" + String(repeating: "#", count: hashes)
        while position < scalars.count && !starts(with: closing) {
            if starts(with: escape + "(") {
                position += escape.count + 1
                code += " "
                scanCode(untilClosingParenthesis: true)
                code += " "
            } else {
                position += starts(with: escape) ? escape.count + 1 : 1
            }
        }
        position += closing.count
    }
}
