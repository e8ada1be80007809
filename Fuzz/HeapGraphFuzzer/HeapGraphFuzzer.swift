// The heap walk's fuzz target: bytes that describe a stopped process's memory, registers and
// module records, as a hostile target could have left them, through the malloc chunk walk, the
// reading of Swift metadata, the search for retaining paths (roots, cycles, dominators) and their
// naming (HeapSnapshotReplay). Built with -sanitize=fuzzer and -DFUZZING by scripts/fuzz.sh, it is
// a libFuzzer target; built as usual (`swift build`), it replays the files and directories it is
// given (a corpus, a crash) and exits 0, so that a crash found by the fuzzer can be reproduced in
// a debugger and the corpus replayed in the tests; `--print FILE` shows one input's retainers,
// `--write-seeds DIR` writes well-formed snapshots to start fuzzing from.
import LeakAuditCore
import LeakAuditModel

#if canImport(Glibc)
    import Glibc
#endif

/// Searches one input's snapshot and names the paths; returns the steps named.
func replay(_ bytes: UnsafeRawBufferPointer) -> Int {
    let (retainers, unavailable) = HeapSnapshotReplay.retainers(from: bytes)
    return retainers.reduce(unavailable.count) { $0 + $1.path.count }
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
enum HeapGraphFuzzer {
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
            // One input's retainers, to see what the search made of it.
            guard let bytes = contents(of: CommandLine.arguments[2]) else { exit(66) }
            let (retainers, unavailable) = bytes.withUnsafeBytes(HeapSnapshotReplay.retainers(from:))
            for retainer in retainers {
                let path = retainer.path.map { "\($0.via) → \($0.type)" }.joined(separator: " → ")
                print("\(retainer.count) × \(retainer.root.kind.rawValue) \(retainer.root.name): \(path)", terminator: "")
                print(" (retains \(retainer.retainedBytes) bytes)")
            }
            for reason in unavailable { print("unavailable: \(reason)") }
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
        var steps = 0
        for file in files.sorted() {
            guard let bytes = contents(of: file) else {
                print("HeapGraphFuzzer: cannot read '\(file)'")
                exit(66)
            }
            steps += bytes.withUnsafeBytes(replay)
        }
        print("HeapGraphFuzzer: replayed \(files.count) input(s), \(steps) steps of retaining paths")
    }

    /// Writes well-formed snapshots, each with a known retaining path, for the fuzzer to start from.
    static func writeSeeds(into directory: String) {
        let seeds = HeapSnapshotReplay.seeds
        for (name, input) in seeds {
            guard let file = fopen(directory + "/" + name, "wb") else {
                print("HeapGraphFuzzer: cannot write '\(directory)/\(name)'")
                exit(73)
            }
            fwrite(input, 1, input.count, file)
            fclose(file)
        }
        print("HeapGraphFuzzer: wrote \(seeds.count) seeds to '\(directory)'")
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
