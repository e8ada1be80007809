// The record stream's fuzz target: bytes in leak-audit's channel, as a hostile target could write
// them, through the decoder, the ledgers, the report builder and every renderer. Built with
// -sanitize=fuzzer and -DFUZZING by scripts/fuzz.sh, it is a libFuzzer target; built as usual
// (`swift build`), it replays the files and directories it is given (a corpus, a crash) and exits
// 0, so that a crash found by the fuzzer can be reproduced in a debugger and the corpus replayed in
// the tests; `--print FILE` shows one input's text report, `--write-seeds DIR` writes well-formed
// streams to start fuzzing from.
import LeakAuditCore
import LeakAuditModel
import LeakAuditRendering

#if canImport(Glibc)
    import Glibc
#endif

/// The renderers an input's report goes through: one, chosen by the input's first byte (bits
/// 4–6), so that each input costs one rendering and every renderer is reached; 7 chooses all.
nonisolated(unsafe) let renderers: [any ReportRenderer] = [
    TextReportRenderer(workingDirectory: "/", width: 80), TextReportRenderer(workingDirectory: "/", verbose: true),
    JSONReportRenderer(), SARIFReportRenderer(workingDirectory: "/"), JUnitReportRenderer(workingDirectory: "/"),
    GitHubActionsReportRenderer(workingDirectory: "/"), HTMLReportRenderer(workingDirectory: "/"),
]

/// Builds one input's report and renders it; returns the bytes rendered. A JSON report is also
/// read back (`leak-audit report`'s reader) and must give the same JSON again.
func replay(_ bytes: UnsafeRawBufferPointer) -> Int {
    let report = RecordStreamReplay.report(from: bytes)
    let choice = Int(((bytes.first ?? 0) >> 4) & 7)
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

#if FUZZING
    /// libFuzzer's driver, which parses its options from the command line and calls `oneInput` for
    /// each input. (SwiftPM names an executable's entry point after its module and links `main`
    /// to it, so libFuzzer's own `main` is not used: this program's calls the driver.)
    @_silgen_name("LLVMFuzzerRunDriver")
    func runFuzzerDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
        _ oneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt
#endif

/// Fuzzes (built with FUZZING), or replays every file named on the command line and every file in
/// every directory named.
@main
enum RecordStreamFuzzer {
    static func main() {
        if CommandLine.arguments.count == 3 && CommandLine.arguments[1] == "--write-seeds" {
            writeSeeds(into: CommandLine.arguments[2])
            return
        }
        #if FUZZING
            var argc = CommandLine.argc
            var argv = CommandLine.unsafeArgv
            exit(
                runFuzzerDriver(&argc, &argv) { data, size in
                    _ = replay(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size))
                    return 0
                })
        #else
            replayCommandLine()
        #endif
    }

    /// Replays or prints, as the command line says.
    static func replayCommandLine() {
        if CommandLine.arguments.count == 3 && CommandLine.arguments[1] == "--print" {
            // One input's text report, to see what the reader made of it.
            guard let bytes = contents(of: CommandLine.arguments[2]) else { exit(66) }
            let report = bytes.withUnsafeBytes(RecordStreamReplay.report(from:))
            print(TextReportRenderer(workingDirectory: "/", verbose: true).render(report), terminator: "")
            return
        }
        var files: [String] = []
        for argument in CommandLine.arguments.dropFirst() {
            if let directory = opendir(argument) {
                while let entry = readdir(directory) {
                    let name = withUnsafeBytes(of: entry.pointee.d_name) {
                        String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
                    }
                    if entry.pointee.d_type == DT_REG { files.append(argument + "/" + name) }
                }
                closedir(directory)
            } else {
                files.append(argument)
            }
        }
        var rendered = 0
        for file in files.sorted() {
            guard let bytes = contents(of: file) else {
                print("RecordStreamFuzzer: cannot read '\(file)'")
                exit(66)
            }
            rendered += bytes.withUnsafeBytes(replay)
        }
        print("RecordStreamFuzzer: replayed \(files.count) input(s), \(rendered) bytes of reports")
    }

    /// Writes well-formed streams, as LeakMonitor writes them, for the fuzzer to start from.
    static func writeSeeds(into directory: String) {
        let seeds = RecordStreamReplay.seeds
        for (name, input) in seeds {
            guard let file = fopen(directory + "/" + name, "wb") else {
                print("RecordStreamFuzzer: cannot write '\(directory)/\(name)'")
                exit(73)
            }
            fwrite(input, 1, input.count, file)
            fclose(file)
        }
        print("RecordStreamFuzzer: wrote \(seeds.count) seeds to '\(directory)'")
    }

    /// The whole file at `path`, or nil.
    static func contents(of path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            bytes += chunk[..<count]
            if count < chunk.count { break }
        }
        return ferror(file) == 0 ? bytes : nil
    }
}
