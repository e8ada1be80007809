// The saved report's fuzz target: bytes as a file `leak-audit report` is given, through the JSON
// report reader (with its strict rules: no key twice, whole numbers in digits, no lone surrogate)
// and, for every file it reads, every renderer, HTML's included. A report that reads must render as
// JSON that reads back as the same report. Built with -sanitize=fuzzer and -DFUZZING by
// scripts/fuzz.sh, it is a libFuzzer target; built as usual (`swift build`), it replays the files
// and directories it is given and exits 0; `--print FILE` shows what one input reads as (its text
// report, or the reader's error), `--write-seeds DIR` writes well-formed reports to start from.
import FuzzDriver
import LeakAuditModel
import LeakAuditRendering
import RecordStreamSupport

/// Every format `leak-audit report` writes (every case of `ReportFormat`), the text report fitted to
/// 80 columns, then the text report unfolded as well.
nonisolated(unsafe) let renderers: [any ReportRenderer] =
    ReportFormat.allCases.map { $0.renderer(RenderingOptions(workingDirectory: "/", width: 80)) }
    + [ReportFormat.text.renderer(RenderingOptions(workingDirectory: "/", verbose: true))]

/// Reads one input as a saved report and, when it reads, renders it in every format; returns the
/// bytes rendered (0 for an input the reader refuses).
func replay(_ bytes: UnsafeRawBufferPointer) -> Int {
    let report: AuditReport
    do {
        report = try JSONReportReader().decode(Array(bytes), path: "fuzz.json")
    } catch {
        // A refusal is one line that names the file.
        let line = error.description
        if line.contains("\n") || !line.hasPrefix("'fuzz.json' ") { fatalError("a refusal that is not one line: \(line)") }
        return 0
    }
    var rendered = 0
    for renderer in renderers {
        let text = renderer.render(report)
        rendered += text.utf8.count
        if renderer is JSONReportRenderer {
            do {
                let again = try JSONReportReader().decode(Array(text.utf8), path: "again.json")
                if JSONReportRenderer().render(again) != text { fatalError("a report read does not render as itself") }
            } catch {
                fatalError("a report read renders as JSON that does not read back: \(error)")
            }
        }
    }
    return rendered
}

/// Fuzzes (built with FUZZING), or replays every file named on the command line and every file in
/// every directory named (Fuzz/FuzzDriver).
@main
enum ReportFuzzer {
    static func main() {
        FuzzDriver(
            name: "ReportFuzzer", seeds: { seeds }, replay: replay,
            printInput: { bytes, path in
                do throws(ReportFileError) {
                    let report = try JSONReportReader().decode(bytes, path: path)
                    print(TextReportRenderer(workingDirectory: "/", verbose: true).render(report), terminator: "")
                } catch {
                    print(error.description)
                }
            },
            summary: { figures in
                "\(figures.filter { $0 > 0 }.count) read as reports, \(figures.reduce(0, +)) bytes rendered"
            }
        ).main()
    }

    /// Saved reports to start from: each record stream seed's report as JSON, compact (so that
    /// mutations reach its values sooner), and in schema 1 (the older shape the reader still
    /// reads), a few that the strict rules refuse, and a few whose references to stacks and frames
    /// are damaged.
    static var seeds: [(String, [UInt8])] {
        var seeds: [(String, [UInt8])] = []
        for (name, stream) in RecordStreamReplay.seeds.sorted(by: { $0.key < $1.key }) {
            let report = stream.withUnsafeBytes(RecordStreamReplay.report(from:))
            let json = JSONReportRenderer().render(report)
            seeds.append(("\(name).json", Array(json.utf8)))
            seeds.append(("\(name)-compact.json", compacted(json)))
            seeds.append(("\(name)-schema-1-compact.json", compacted(JSONReportRenderer.schema1.render(report))))
        }
        if let (_, withStack) = seeds.first(where: { String(decoding: $0.1, as: UTF8.self).contains("\"stack\" : ") }) {
            seeds += damagedReferences(String(decoding: withStack, as: UTF8.self))
        }
        seeds += unreachableSeeds()
        if let (_, first) = seeds.first {
            let text = String(decoding: first, as: UTF8.self)
            seeds.append(("duplicate-key.json", Array(("{\"summary\": {}, " + text.dropFirst()).utf8)))
            seeds.append(("tiny-number.json", Array(text.replacing(": 0,", with: ": 1e-400,").utf8)))
            seeds.append(
                ("lone-surrogate.json", Array(text.replacing("\"leak-audit\"", with: "\"leak\\ud800\"").utf8)))
        }
        return seeds
    }

    /// `json` (pretty-printed, with a group that names a stack) with its references damaged: a stack
    /// or a frame out of range, a stack inside a stack, no table of frames, a group of schema 2 in
    /// a report that says it is schema 1.
    static func damagedReferences(_ json: String) -> [(String, [UInt8])] {
        func replacingFirst(_ pattern: Regex<Substring>, in text: String, with replacement: String) -> String {
            guard let match = text.firstMatch(of: pattern) else { return text }
            var text = text
            text.replaceSubrange(match.range, with: replacement)
            return text
        }
        let damaged: [(String, String)] = [
            ("stack-beyond.json", replacingFirst(#/"stack" : \d+/#, in: json, with: "\"stack\" : 1000000")),
            ("stack-negative.json", replacingFirst(#/"stack" : \d+/#, in: json, with: "\"stack\" : -1")),
            ("frame-beyond.json", replacingFirst(#/"stacks" : \[\s*\[\s*\d+/#, in: json, with: "\"stacks\" : [[1000000")),
            ("stack-in-a-stack.json", replacingFirst(#/"stacks" : \[\s*\[/#, in: json, with: "\"stacks\" : [[[0], ")),
            ("no-frames.json", json.replacing("\"frames\" : [", with: "\"unknown\" : [")),
            ("schema-1-naming-stacks.json", json.replacing("\"schemaVersion\" : 2", with: "\"schemaVersion\" : 1")),
        ]
        return damaged.map { ($0, Array($1.utf8)) }
    }

    /// Reports with unreachable objects (`"unreachable"`): one of each kind of group, whose
    /// allocations name a stack the report holds, written whole and compact; and the same with its
    /// values damaged: a stack out of range, a shape that is no shape, values of the wrong type, a
    /// status on an internal group.
    static func unreachableSeeds() -> [(String, [UInt8])] {
        let streams = RecordStreamReplay.seeds.sorted(by: { $0.key < $1.key }).map(\.value)
        let reports = streams.map { $0.withUnsafeBytes(RecordStreamReplay.report(from:)) }
        guard var report = reports.first(where: { report in report.types.contains { !$0.allocations.isEmpty } }) ?? reports.first
        else { return [] }
        let allocations = report.types.first { !$0.allocations.isEmpty }?.allocations ?? []
        let cycle: [Retainer.Step] = [
            .init(via: "", type: "App.PairA"), .init(via: "other", type: "App.PairB"), .init(via: "other", type: "App.PairA"),
        ]
        report.unreachable = UnreachableObjects(
            objects: 8, bytes: 512,
            types: [
                .init(name: "App.PairA", count: 2, bytes: 128, isInternal: false),
                .init(name: "App.PairB", count: 2, bytes: 128, isInternal: false),
                .init(name: "Foundation.NSTimer", count: 4, bytes: 256, isInternal: true),
            ],
            groups: [
                .init(count: 2, objects: 4, bytes: 256, shape: .cycle, path: cycle, allocations: allocations, isInternal: false),
                .init(
                    count: 1, objects: 1, bytes: 64, shape: .overRetained, path: [.init(via: "", type: "App.PairA")],
                    allocations: [], isInternal: false,
                    status: .suppressed(Suppression(.type("App.Pair*"), reason: "known", origin: ".leak-audit.json"))),
                .init(
                    count: 4, objects: 4, bytes: 256, shape: .overRetained,
                    path: [.init(via: "", type: "Foundation.NSTimer")], allocations: [], isInternal: true),
            ],
            processesChecked: 1, unavailable: ["process 7 was killed by a signal before its heap could be checked"])
        let json = JSONReportRenderer().render(report)
        guard let start = json.firstRange(of: "\"unreachable\" : {") else { return [] }
        /// `json` with the first `original` inside its "unreachable" object replaced.
        func damaged(_ original: String, _ replacement: String) -> [UInt8] {
            guard let found = json[start.lowerBound...].firstRange(of: original) else { return Array(json.utf8) }
            var text = json
            text.replaceSubrange(found, with: replacement)
            return Array(text.utf8)
        }
        return [
            ("unreachable.json", Array(json.utf8)), ("unreachable-compact.json", compacted(json)),
            ("unreachable-stack-beyond.json", damaged("\"stack\" : ", "\"stack\" : 1000000, \"was\" : ")),
            ("unreachable-shape-unknown.json", damaged("\"shape\" : \"cycle\"", "\"shape\" : \"ring\"")),
            ("unreachable-shape-number.json", damaged("\"shape\" : \"cycle\"", "\"shape\" : 3")),
            ("unreachable-objects-string.json", damaged("\"objects\" : 8", "\"objects\" : \"8\"")),
            ("unreachable-types-object.json", damaged("\"types\" : [", "\"types\" : {}, \"was\" : [")),
            ("unreachable-path-empty.json", damaged("\"path\" : [", "\"path\" : [], \"was\" : [")),
            ("unreachable-internal-status.json", damaged("\"status\" : null", "\"status\" : \"failing\"")),
            ("unreachable-negative-bytes.json", damaged("\"bytes\" : 512", "\"bytes\" : -512")),
        ]
    }

    /// `json` without the spaces and line breaks between its tokens.
    static func compacted(_ json: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var inString = false
        var escaped = false
        for byte in json.utf8 {
            if inString {
                bytes.append(byte)
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
                bytes.append(byte)
            } else if byte != 0x20 && byte != 0x0A {
                bytes.append(byte)
            }
        }
        return bytes
    }
}
