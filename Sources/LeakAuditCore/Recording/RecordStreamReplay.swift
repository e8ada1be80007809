import LeakAuditModel
import LeakAuditWire

// The whole reading side, from a channel's bytes to a report, for the libFuzzer target
// (Fuzz/RecordStreamFuzzer, scripts/fuzz.sh) and its replay of a corpus: every byte is what a
// hostile target could have written.

/// Runs bytes through the reader as if a target had written them into leak-audit's channel: the
/// same decoder, ledgers and report builder as a real run (`Reception.receive`), with a symbolizer
/// that opens no file.
package enum RecordStreamReplay {
    /// Slots in the replayed ring: few, so that short inputs fill it and wrap it.
    package static let slotCapacity: UInt64 = 64

    /// How the input is laid out: the first byte chooses the watch options, the next
    /// `headerBytes` are the header from `next_slot` (offset 24) to `reader_lifecycle` (offset 100),
    /// as a writer lays them out, the rest fills the ring's slots in order.
    private static let optionBytes = 1
    private static let headerOffset = 24
    private static let headerBytes = 80

    /// Builds the report of a run whose channel held `bytes`.
    ///
    /// `bytes[0]` chooses what the run watched (bit 0 allocations under a budget, 1 the census, 2
    /// tests, 3 `--leaks-per-test`; the fuzz target reads bits 4 to 6) and, bit 7, when the header
    /// is written: before the reader's first pass (clear), or after it (set: `next_slot` then
    /// covers every slot given, and the header is written over, whatever it held, while the target
    /// runs, as a process of the run may). The next 80 bytes, or fewer, are the header's fields
    /// from offset 24 on (`next_slot`, `flags`, `attached_pid`, `dropped`, `consumed_slot`,
    /// `reader_pid`, `attached_processes`, `watched_processes`, `skipped_processes`,
    /// `forked_processes`, padding, `run_token`, `clock_ms`, `reader_lifecycle`); the rest are slots.
    package static func report(from bytes: UnsafeRawBufferPointer) -> AuditReport {
        let region = HeapRegion(byteCount: RecordChannel.byteCount(slotCapacity: slotCapacity))
        let channel = RecordChannel(region: region, slotCapacity: slotCapacity)
        let options = bytes.first ?? 0
        let header = bytes.dropFirst(optionBytes).prefix(headerBytes)
        let slots = bytes.dropFirst(optionBytes + headerBytes).prefix(Int(slotCapacity) * Int(LA_WIRE_SLOT_SIZE))
        let ring = Int(LA_WIRE_HEADER_SIZE)
        UnsafeMutableRawBufferPointer(rebasing: region.buffer[ring..<(ring + slots.count)]).copyMemory(
            from: UnsafeRawBufferPointer(rebasing: slots))
        let writeHeader = {
            UnsafeMutableRawBufferPointer(rebasing: region.buffer[headerOffset..<(headerOffset + header.count)]).copyMemory(
                from: UnsafeRawBufferPointer(rebasing: header))
        }
        let writtenOver = options & 0x80 != 0
        if writtenOver {
            region.base.storeBytes(
                of: UInt64(slots.count / Int(LA_WIRE_SLOT_SIZE)), toByteOffset: headerOffset, as: UInt64.self)
        } else {
            writeHeader()
        }

        var watch = WatchOptions(
            budgets: options & 1 != 0 ? [BudgetPattern(pattern: "App.*", max: 1, origin: "--budget")] : [],
            census: options & 2 != 0)
        watch.attributesTests = options & 4 != 0
        watch.leaksPerTest = options & 8 != 0
        let (outcome, received) = Reception.receive(
            from: channel, while: ReplayedTarget(afterFirstPass: writtenOver ? writeHeader : {}), watch: watch,
            pollMicroseconds: 0)
        let run = RecordedRun(
            request: AuditRequest(target: "replayed", arguments: [], watch: watch),
            plan: RunPlan(executablePath: "/replayed", targetKind: .dynamicSwift, watch: watch),
            outcome: outcome, received: received)
        return ReportBuilder(
            toolVersion: "replay", makeSymbolizer: { _ in AddressOnlySymbolizer() }, inspectExecutable: { _ in .dynamicSwift }
        ).build(from: run)
    }

    /// Well-formed inputs, as LeakMonitor writes its records, by name: a type over budget, a test
    /// that leaked (with its process, module and test records), and a census.
    package static var seeds: [String: [UInt8]] {
        var budget = Stream()
        budget.blob(kind: LA_BLOB_PROCESS, id: 4242, value: 0, payload: Array("/b/App".utf8))
        budget.type(id: 0, name: "App.ViewModel", max: 1)
        budget.stack(id: 0, [0x1000, 0x2000, 0x3000])
        for object in UInt64(1)...3 { budget.event(kind: LA_SLOT_ALLOC, id: 0, object * 16) }
        budget.event(kind: LA_SLOT_DEALLOC, id: 0, 16)

        var tests = Stream(options: 1 | 4 | 8)
        tests.blob(
            kind: LA_BLOB_PROCESS, id: 4242, value: UInt64(LA_PROCESS_TEST_BUNDLE),
            payload: Array("/b/AppPackageTests.xctest\0AppTests.LoginTests".utf8))
        let module = Array("/b/AppPackageTests.xctest".utf8)
        tests.blob(
            kind: LA_BLOB_MODULE, id: 0, value: 0x1000,
            payload: bytes(UInt64(0x1000)) + bytes(UInt64(0x9000)) + bytes(UInt32(2)) + bytes(UInt32(module.count))
                + [0xAB, 0xCD] + module)
        tests.type(id: 0, name: "App.Session", max: 0, budgetSource: UInt32(LA_BUDGET_PATTERN))
        tests.blob(kind: LA_BLOB_TEST, id: 0, value: 0, payload: Array("AppTests.LoginTests/testLogout".utf8))
        tests.event(kind: LA_SLOT_TEST, subkind: UInt64(LA_TEST_STARTED), id: 0)
        tests.stack(id: 0, [0x1100])
        tests.event(kind: LA_SLOT_ALLOC, id: 0, 0x40, 0, 1)
        tests.event(kind: LA_SLOT_TEST, subkind: UInt64(LA_TEST_FINISHED), id: 0)
        tests.event(kind: LA_SLOT_TEST, subkind: UInt64(LA_TEST_SETTLED), id: 0)

        var census = Stream(options: 2)
        census.blob(kind: LA_BLOB_PROCESS, id: 4242, value: 0, payload: Array("/b/App".utf8))
        census.type(id: 0, name: "Swift._ContiguousArrayStorage<App.Item>", max: 0, budgetSource: UInt32(LA_BUDGET_NONE))
        census.type(id: 1, name: "App.Cache", max: 0, budgetSource: UInt32(LA_BUDGET_NONE))
        for object in UInt64(1)...5 { census.event(kind: LA_SLOT_ALLOC, id: object % 2, object * 32) }
        // A second definition of the type over budget: damage, and the first stands.
        var redefined = budget
        redefined.type(id: 0, name: "App.Other", max: 1_000)
        // The header's flags and attached fields zeroed, then random words over it, once the
        // records are read: the type over budget stays, and the header is damage.
        let random = (0..<80).map { UInt8(truncatingIfNeeded: ($0 &* 0x9E37_79B9) >> 7) }
        return [
            "budget-exceeded": budget.input, "leaks-per-test": tests.input, "census": census.input,
            "type-redefined": redefined.input, "header-zeroed": budget.input(writtenOver: []),
            "header-random": budget.input(writtenOver: random),
        ]
    }

    /// An input under construction: slots written as the shim writes them (docs/record-format.md).
    private struct Stream {
        var options: UInt8 = 1
        var slots: [UInt64] = []

        /// The header as the writers of one process leave it: `next_slot` past every slot, flags
        /// attached and instrumented, `attached_pid`, one attached process, the rest 0.
        var header: [UInt8] {
            let flags = UInt32(LA_FLAG_ATTACHED) | UInt32(LA_FLAG_INSTRUMENTED)
            return bytes(UInt64(slots.count / 4)) + bytes(flags) + bytes(Int32(4242)) + bytes(UInt64(0)) + bytes(UInt64(0))
                + bytes(Int32(0)) + bytes(UInt32(1)) + [UInt8](repeating: 0, count: 40)
        }

        /// The options byte, the header (`header`, or `writtenOver` after the first pass: option
        /// bit 7), then the slots.
        var input: [UInt8] { [options] + header + slots.flatMap(bytes) }

        /// The input with its header written over by `header` after the reader's first pass.
        func input(writtenOver header: [UInt8]) -> [UInt8] {
            [options | 0x80] + header + [UInt8](repeating: 0, count: 80 - header.count) + slots.flatMap(bytes)
        }

        mutating func event(kind: Int, subkind: UInt64 = 0, id: UInt64, _ w1: UInt64 = 0, _ w2: UInt64 = 0, _ w3: UInt64 = 0) {
            slots += [UInt64(kind) | subkind << 8 | id << 32, w1, w2, w3]
        }

        mutating func blob(kind: Int, id: UInt64, value: UInt64, payload: [UInt8]) {
            let continuations = (payload.count + 23) / 24
            slots += [
                UInt64(LA_SLOT_BLOB_HEAD) | UInt64(kind) << 8 | UInt64(1 + continuations) << 32, id, UInt64(payload.count), value,
            ]
            let padded = payload + [UInt8](repeating: 0, count: continuations * 24 - payload.count)
            for index in 0..<continuations {
                slots.append(UInt64(LA_SLOT_BLOB_CONT) | UInt64(index + 1) << 8)
                for word in 0..<3 {
                    slots.append((0..<8).reduce(0) { $0 | UInt64(padded[index * 24 + word * 8 + $1]) << (8 * $1) })
                }
            }
        }

        mutating func type(id: UInt64, name: String, max: Int64, budgetSource: UInt32 = UInt32(LA_BUDGET_CODE)) {
            blob(
                kind: LA_BLOB_TYPE, id: id, value: UInt64(bitPattern: max),
                payload: bytes(budgetSource) + bytes(UInt32(0)) + Array(name.utf8))
        }

        mutating func stack(id: UInt64, _ addresses: [UInt64]) {
            blob(kind: LA_BLOB_STACK, id: id, value: 0, payload: addresses.flatMap(bytes))
        }
    }

    /// Zeroed memory standing in for the shared file.
    private final class HeapRegion: SharedRegion {
        let buffer: UnsafeMutableRawBufferPointer
        var base: UnsafeMutableRawPointer { buffer.baseAddress! }
        var length: Int { buffer.count }
        var handle: String { "replay" }

        init(byteCount: Int) {
            buffer = .allocate(byteCount: byteCount, alignment: 4096)
            buffer.initializeMemory(as: UInt8.self, repeating: 0)
        }

        deinit { buffer.deallocate() }
    }

    /// A target that runs for one pass of the reader, does `afterFirstPass`, then has exited 0.
    private final class ReplayedTarget: RunningTarget {
        private var polls = 0
        private let afterFirstPass: () -> Void

        init(afterFirstPass: @escaping () -> Void) { self.afterFirstPass = afterFirstPass }

        func poll() -> TargetOutcome? {
            polls += 1
            if polls == 2 { afterFirstPass() }
            return polls > 1 ? .exited(code: 0) : nil
        }
        func send(_ signal: Int32) {}
        var receivedSignal: Int32? { nil }
        func hasEnded(process pid: Int32) -> Bool { true }
        func pause(microseconds: UInt32) {}
    }

    /// Frames with an address and nothing else: the replay opens no module file.
    private struct AddressOnlySymbolizer: AddressSymbolizer {
        func symbolize(_ returnAddress: UInt64) -> [SymbolizedFrame] { [SymbolizedFrame(address: returnAddress)] }
        func variable(at address: UInt64) -> String? { nil }
        func closureParameters(at address: UInt64) -> [(name: String, type: String?)] { [] }
        var problems: [String] { [] }
    }
}

/// The little-endian bytes of `value`.
private func bytes<T: FixedWidthInteger>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }
