// The image files' fuzz target: the bytes of an ELF file, as a target's executable or a library it
// loads could hold them, through the readers of leak-audit that take them in (ELFReplay: section
// headers, symbol tables, program headers and build-id, the dynamic section, the pages of the
// shim's state, the symbolizer's symbol tables read in place). Built with -sanitize=fuzzer and
// -DFUZZING by scripts/fuzz.sh, it is a libFuzzer target; built as usual (`swift build`), it
// replays the files and directories it is given (a corpus, a crash) and exits 0; `--print FILE`
// shows what one input reads as, `--write-seeds DIR` writes well-formed images to start fuzzing
// from.
import FuzzDriver
import LeakAuditCore

/// Fuzzes (built with FUZZING), or replays every file named on the command line and every file in
/// every directory named (Fuzz/FuzzDriver).
@main
enum ELFFuzzer {
    static func main() {
        FuzzDriver(
            name: "ELFFuzzer",
            // Small shared objects that define the shim's state and a foreign class.
            seeds: { ELFReplay.seeds.map { ($0.key, $0.value) } },
            replay: ELFReplay.read,
            printInput: { bytes, _ in print("read \(bytes.withUnsafeBytes(ELFReplay.read)) sections, symbols and pages") },
            summary: { "\($0.reduce(0, +)) sections, symbols and pages" }
        ).main()
    }
}
