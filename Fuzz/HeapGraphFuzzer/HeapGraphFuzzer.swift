// The heap walk's fuzz target: bytes that describe a stopped process's memory, registers and
// module records, as a hostile target could have left them, through the malloc chunk walk, the
// reading of Swift metadata, the search for retaining paths (roots, cycles, dominators) and their
// naming, and the grouping of unreachable objects into structures (HeapSnapshotReplay). Built
// with -sanitize=fuzzer and -DFUZZING by scripts/fuzz.sh, it is a libFuzzer target; built as
// usual (`swift build`), it replays the files and directories it is given (a corpus, a crash) and
// exits 0, so that a crash found by the fuzzer can be reproduced in a debugger and the corpus
// replayed in the tests; `--print FILE` shows one input's retainers and unreachable groups,
// `--write-seeds DIR` writes well-formed snapshots to start fuzzing from.
import FuzzDriver
import LeakAuditCore
import LeakAuditModel

/// Searches one input's snapshot and names the paths, then groups what no root reaches into
/// structures, and asks whether its test case objects hold its instances; returns the steps
/// named. A search that ends once it has reached the instances (the walk at exit without
/// `--retainers`), searches for cycles that read the graph of unreached objects, and paths taken
/// from an instance's sole holder, must find the paths a whole search finds: a finding when they
/// do not.
func replay(_ bytes: UnsafeRawBufferPointer) -> Int {
    let kept = HeapSnapshotReplay.shortcutsKeepPaths(from: bytes)
    guard kept.earlyEnd else {
        fatalError("the search that ends once it reached the instances found other paths than the whole search")
    }
    guard kept.cyclesFromGraph else {
        fatalError("the searches for cycles that read the graph of unreached objects found other paths")
    }
    guard kept.sharedHolderPaths else {
        fatalError("the paths shared with an instance's sole holder differ from the searches of their own")
    }
    let (retainers, unavailable) = HeapSnapshotReplay.retainers(from: bytes)
    let unreachable = HeapSnapshotReplay.unreachable(from: bytes)
    let held = HeapSnapshotReplay.testCasesHold(from: bytes) ? 1 : 0
    return held + retainers.reduce(unavailable.count) { $0 + $1.path.count } + unreachable.groups.reduce(0) { $0 + $1.path.count }
}

/// Fuzzes (built with FUZZING), or replays every file named on the command line and every file in
/// every directory named (Fuzz/FuzzDriver).
@main
enum HeapGraphFuzzer {
    static func main() {
        FuzzDriver(
            name: "HeapGraphFuzzer",
            // Well-formed snapshots, each with a known retaining path, for the fuzzer to start from.
            seeds: { HeapSnapshotReplay.seeds.map { ($0.key, $0.value) } },
            replay: replay,
            printInput: { bytes, _ in
                // One input's retainers, to see what the search made of it.
                let (retainers, unavailable) = bytes.withUnsafeBytes(HeapSnapshotReplay.retainers(from:))
                for retainer in retainers {
                    let path = retainer.path.map { "\($0.via) → \($0.type)" }.joined(separator: " → ")
                    print("\(retainer.count) × \(retainer.root.kind.rawValue) \(retainer.root.name): \(path)", terminator: "")
                    print(" (retains \(retainer.retainedBytes) bytes)")
                }
                for reason in unavailable { print("unavailable: \(reason)") }
                let unreachable = bytes.withUnsafeBytes(HeapSnapshotReplay.unreachable(from:))
                for group in unreachable.groups {
                    let path = group.path.map { "\($0.via) → \($0.type)" }.joined(separator: " → ")
                    print(
                        "unreachable: \(group.count) × \(group.shape.rawValue) (\(group.objects) objects, \(group.bytes) bytes): \(path)"
                    )
                }
            },
            summary: { "\($0.reduce(0, +)) steps of retaining paths" }
        ).main()
    }
}
