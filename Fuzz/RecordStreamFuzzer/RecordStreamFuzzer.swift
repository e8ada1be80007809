// The record stream's fuzz target: bytes in leak-audit's channel, as a hostile target could write
// them, through the decoder, the ledgers, the report builder and every renderer. Built with
// -sanitize=fuzzer and -DFUZZING by scripts/fuzz.sh, it is a libFuzzer target; built as usual
// (`swift build`), it replays the files and directories it is given (a corpus, a crash) and exits
// 0, so that a crash found by the fuzzer can be reproduced in a debugger and the corpus replayed in
// the tests; `--print FILE` shows one input's text report, `--write-seeds DIR` writes well-formed
// streams to start fuzzing from.
import FuzzDriver
import LeakAuditModel
import LeakAuditRendering
import RecordStreamSupport

/// The renderers an input's report goes through: every case of `ReportFormat` (the text report
/// fitted to 80 columns) and the text report unfolded. One is chosen by the input's first byte
/// (bits 4–7, modulo one more than there are renderers), so that each input costs one rendering
/// and every renderer is reached; the last choice is all of them.
nonisolated(unsafe) let renderers: [any ReportRenderer] =
    ReportFormat.allCases.map { $0.renderer(RenderingOptions(workingDirectory: "/", width: 80)) }
    + [ReportFormat.text.renderer(RenderingOptions(workingDirectory: "/", verbose: true))]

/// Builds one input's report and renders it; returns the bytes rendered. A JSON report is also
/// read back (`leak-audit report`'s reader) and must give the same JSON again.
func replay(_ bytes: UnsafeRawBufferPointer) -> Int {
    let report = RecordStreamReplay.report(from: bytes)
    let choice = Int((bytes.first ?? 0) >> 4) % (renderers.count + 1)
    let chosen = choice < renderers.count ? [renderers[choice]] : renderers
    var rendered = 0
    for renderer in chosen {
        let text = renderer.render(report)
        rendered += text.utf8.count
        if renderer is JSONReportRenderer {
            do {
                let read = try JSONReportReader().decode(Array(text.utf8), path: "fuzz.json")
                if JSONReportRenderer().render(read) != text { fatalError("the JSON report does not read back as itself") }
            } catch {
                fatalError("leak-audit's own JSON report does not read back: \(error)")
            }
        }
    }
    return rendered
}

/// Fuzzes (built with FUZZING), or replays every file named on the command line and every file in
/// every directory named (Fuzz/FuzzDriver).
@main
enum RecordStreamFuzzer {
    static func main() {
        FuzzDriver(
            name: "RecordStreamFuzzer",
            // Well-formed streams, as LeakMonitor writes them, for the fuzzer to start from.
            seeds: { RecordStreamReplay.seeds.map { ($0.key, $0.value) } },
            replay: replay,
            printInput: { bytes, _ in
                // One input's text report, to see what the reader made of it.
                let report = bytes.withUnsafeBytes(RecordStreamReplay.report(from:))
                print(TextReportRenderer(workingDirectory: "/", verbose: true).render(report), terminator: "")
            },
            summary: { "\($0.reduce(0, +)) bytes of reports" }
        ).main()
    }
}
