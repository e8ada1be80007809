// What every libFuzzer target of leak-audit does the same way (Fuzz/RecordStreamFuzzer,
// Fuzz/HeapGraphFuzzer, Fuzz/ReportFuzzer): `--write-seeds DIR` writes its well-formed inputs;
// built with -sanitize=fuzzer and -DFUZZING by scripts/fuzz.sh (which passes both to every module,
// this one included), it hands its inputs to libFuzzer's driver; built as usual (`swift build`), it
// replays the files and directories it is given (a corpus, a crash) and exits 0, so that a crash
// found by the fuzzer can be reproduced in a debugger, or with `--print FILE` shows what one input
// reads as. Each target gives only what is its own: its seeds, one input's replay, one input's
// printing and the summary of a replay.
#if canImport(Glibc)
    import Glibc
#endif

#if FUZZING
    /// libFuzzer's driver, which parses its options from the command line and calls `oneInput` for
    /// each input. (SwiftPM names an executable's entry point after its module and links `main`
    /// to it, so libFuzzer's own `main` is not used: the target's calls the driver.)
    @_silgen_name("LLVMFuzzerRunDriver")
    func runFuzzerDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
        _ oneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt

    /// The target's replay, for the C callback that libFuzzer calls, which cannot capture it.
    nonisolated(unsafe) private var fuzzedReplay: ((UnsafeRawBufferPointer) -> Int)?
#endif

/// The command line of one libFuzzer target: fuzzes (built with FUZZING), writes seeds, prints one
/// input, or replays every file named and every file in every directory named.
public struct FuzzDriver {
    /// The target's name, which starts each line it prints.
    let name: String
    /// The well-formed inputs to start fuzzing from, each with its file name.
    let seeds: () -> [(name: String, bytes: [UInt8])]
    /// Takes one input through the code under test; returns a figure of what it did.
    let replay: (UnsafeRawBufferPointer) -> Int
    /// Prints what one input (its bytes, then its path) reads as.
    let printInput: ([UInt8], String) -> Void
    /// What a replay did, from the figure of each input (in the order of their paths).
    let summary: ([Int]) -> String

    /// A target named `name`, with its seeds, its replay of one input, its printing of one input,
    /// and the words that end the line a replay prints (after "replayed N input(s), ").
    public init(
        name: String, seeds: @escaping () -> [(name: String, bytes: [UInt8])],
        replay: @escaping (UnsafeRawBufferPointer) -> Int, printInput: @escaping ([UInt8], String) -> Void,
        summary: @escaping ([Int]) -> String
    ) {
        self.name = name
        self.seeds = seeds
        self.replay = replay
        self.printInput = printInput
        self.summary = summary
    }

    /// Does what the command line says; exits 66 on a file it cannot read, 73 on a seed it cannot
    /// write and, fuzzing, with libFuzzer's status.
    public func main() {
        if CommandLine.arguments.count == 3 && CommandLine.arguments[1] == "--write-seeds" {
            writeSeeds(into: CommandLine.arguments[2])
            return
        }
        #if FUZZING
            fuzzedReplay = replay
            var argc = CommandLine.argc
            var argv = CommandLine.unsafeArgv
            exit(
                runFuzzerDriver(&argc, &argv) { data, size in
                    _ = fuzzedReplay?(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size))
                    return 0
                })
        #else
            replayCommandLine()
        #endif
    }

    /// Replays or prints, as the command line says.
    func replayCommandLine() {
        if CommandLine.arguments.count == 3 && CommandLine.arguments[1] == "--print" {
            // One input, to see what the code under test made of it.
            guard let bytes = Self.contents(of: CommandLine.arguments[2]) else { exit(66) }
            printInput(bytes, CommandLine.arguments[2])
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
        var figures: [Int] = []
        for file in files.sorted() {
            guard let bytes = Self.contents(of: file) else {
                print("\(name): cannot read '\(file)'")
                exit(66)
            }
            figures.append(bytes.withUnsafeBytes(replay))
        }
        print("\(name): replayed \(files.count) input(s), \(summary(figures))")
    }

    /// Writes the seeds into `directory`.
    func writeSeeds(into directory: String) {
        let seeds = self.seeds()
        for (name, input) in seeds {
            guard let file = fopen(directory + "/" + name, "wb") else {
                print("\(self.name): cannot write '\(directory)/\(name)'")
                exit(73)
            }
            fwrite(input, 1, input.count, file)
            fclose(file)
        }
        print("\(name): wrote \(seeds.count) seeds to '\(directory)'")
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
