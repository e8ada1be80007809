import LeakAuditCore
import LeakAuditModel
import LeakAuditWire

/// Runs bytes through the reader as if a target had written them into leak-audit's channel
/// (`ChannelReplay`: the same decoder, ledgers and report builder as a real run), for the record
/// stream's libFuzzer target (Fuzz/RecordStreamFuzzer, scripts/fuzz.sh), its replay of a corpus and
/// the tests: every byte is what a hostile target could have written.
public enum RecordStreamReplay {
    /// Slots in the replayed ring: few, so that short inputs fill it and wrap it.
    public static let slotCapacity: UInt64 = 64

    /// How the input is laid out: the first byte chooses the watch options, the next
    /// `headerBytes` are the header fields a writer writes (`RecordEncoder.writtenHeaderFields`),
    /// the rest fills the ring's slots in order.
    private static let optionBytes = 1
    private static let headerBytes = RecordEncoder.writtenHeaderFields.count

    /// Option bit 7: the header is written after the reader's first pass.
    private static let headerWrittenOver: UInt8 = 0x80

    /// Builds the report of a run whose channel held `bytes`.
    ///
    /// `bytes[0]` chooses what the run watched (bit 0 allocations under a budget, 1 the census, 2
    /// tests, 3 `--leaks-per-test`; the fuzz target reads bits 4 to 6) and, bit 7, when the header
    /// is written: before the reader's first pass (clear), or after it (set: `next_slot` then
    /// covers every slot given, and the header is written over, whatever it held, while the target
    /// runs, as a process of the run may). The next 80 bytes, or fewer, are the header's fields from
    /// `next_slot` up to `watch_offset` (`next_slot`, `flags`, `attached_pid`, `dropped`,
    /// `consumed_slot`, `reader_pid`, `attached_processes`, `watched_processes`,
    /// `skipped_processes`, `forked_processes`, padding, `run_token`, `clock_ms`,
    /// `reader_lifecycle`, padding: `RecordEncoder.writtenHeaderFields`); the rest are slots.
    public static func report(from bytes: UnsafeRawBufferPointer) -> AuditReport {
        let options = bytes.first ?? 0
        let header = bytes.dropFirst(optionBytes).prefix(headerBytes)
        let slots = bytes.dropFirst(optionBytes + headerBytes).prefix(Int(slotCapacity) * Int(LA_WIRE_SLOT_SIZE))
        let writtenOver = options & headerWrittenOver != 0
        let headerStart = RecordEncoder.writtenHeaderFields.lowerBound
        let writeHeader = { (channel: UnsafeMutableRawBufferPointer) in
            UnsafeMutableRawBufferPointer(rebasing: channel[headerStart..<(headerStart + header.count)]).copyMemory(
                from: UnsafeRawBufferPointer(rebasing: header))
        }
        var watch = WatchOptions(
            budgets: options & 1 != 0 ? [BudgetPattern(pattern: "App.*", max: 1, origin: "--budget")] : [],
            census: options & 2 != 0)
        watch.leaksPerTest = options & 8 != 0
        return ChannelReplay.report(
            slotCapacity: slotCapacity, watch: watch, testBundle: options & 4 != 0,
            write: { channel in
                let ring = Int(LA_WIRE_HEADER_SIZE)
                UnsafeMutableRawBufferPointer(rebasing: channel[ring..<(ring + slots.count)]).copyMemory(
                    from: UnsafeRawBufferPointer(rebasing: slots))
                if writtenOver {
                    // The slots are all reserved: a writer bumped `next_slot` past each.
                    let nextSlot = MemoryLayout<la_wire_header>.offset(of: \.next_slot)!
                    channel.storeBytes(
                        of: UInt64(slots.count / Int(LA_WIRE_SLOT_SIZE)), toByteOffset: nextSlot, as: UInt64.self)
                } else {
                    writeHeader(channel)
                }
            },
            whileRunning: { channel in if writtenOver { writeHeader(channel) } })
    }

    /// Well-formed inputs, as LeakMonitor writes its records, by name: a type over budget, a test
    /// that leaked (with its process, module and test records), and a census.
    public static var seeds: [String: [UInt8]] {
        var budget = Stream()
        budget.blob(kind: LA_BLOB_PROCESS, id: 4242, value: 0, payload: Array("/b/App".utf8))
        budget.type(id: 0, name: "App.ViewModel", max: 1)
        budget.stack(id: 0, [0x1000, 0x2000, 0x3000])
        for object in UInt64(1)...3 { budget.event(LA_SLOT_ALLOC, id: 0, object * 16) }
        budget.event(LA_SLOT_DEALLOC, id: 0, 16)

        var tests = Stream(options: 1 | 4 | 8)
        tests.blob(
            kind: LA_BLOB_PROCESS, id: 4242, value: UInt64(LA_PROCESS_TEST_BUNDLE),
            payload: Array("/b/AppPackageTests.xctest\0AppTests.LoginTests".utf8))
        tests.blob(
            kind: LA_BLOB_MODULE, id: 0, value: 0x1000,
            payload: RecordEncoder.modulePayload(
                start: 0x1000, end: 0x9000, buildID: [0xAB, 0xCD], path: "/b/AppPackageTests.xctest"))
        tests.type(id: 0, name: "App.Session", max: 0, budgetSource: UInt32(LA_BUDGET_PATTERN))
        tests.blob(kind: LA_BLOB_TEST, id: 0, value: 0, payload: Array("AppTests.LoginTests/testLogout".utf8))
        tests.event(LA_SLOT_TEST, subkind: UInt64(LA_TEST_STARTED), id: 0)
        tests.stack(id: 0, [0x1100])
        tests.event(LA_SLOT_ALLOC, id: 0, 0x40, 0, 1)
        tests.event(LA_SLOT_TEST, subkind: UInt64(LA_TEST_FINISHED), id: 0)
        tests.event(LA_SLOT_TEST, subkind: UInt64(LA_TEST_SETTLED), id: 0)

        var census = Stream(options: 2)
        census.blob(kind: LA_BLOB_PROCESS, id: 4242, value: 0, payload: Array("/b/App".utf8))
        census.type(id: 0, name: "Swift._ContiguousArrayStorage<App.Item>", max: 0, budgetSource: UInt32(LA_BUDGET_NONE))
        census.type(id: 1, name: "App.Cache", max: 0, budgetSource: UInt32(LA_BUDGET_NONE))
        for object in UInt64(1)...5 { census.event(LA_SLOT_ALLOC, id: UInt32(object % 2), object * 32) }
        // A second definition of the type over budget: damage, and the first stands.
        var redefined = budget
        redefined.type(id: 0, name: "App.Other", max: 1_000)
        // The header's flags and attached fields zeroed, then random words over it, once the
        // records are read: the type over budget stays, and the header is damage.
        let random = (0..<headerBytes).map { UInt8(truncatingIfNeeded: ($0 &* 0x9E37_79B9) >> 7) }
        return [
            "budget-exceeded": budget.input, "leaks-per-test": tests.input, "census": census.input,
            "type-redefined": redefined.input, "header-zeroed": budget.input(writtenOver: []),
            "header-random": budget.input(writtenOver: random),
        ]
    }

    /// An input under construction: the options byte, and slots as the shim writes them.
    private struct Stream {
        var options: UInt8 = 1
        var slots: [UInt64] = []

        /// The header as the writers of one process leave it: `next_slot` past every slot, flags
        /// attached and instrumented, `attached_pid`, one attached process, the rest 0.
        var header: [UInt8] {
            var header = la_wire_header()
            header.next_slot = UInt64(slots.count / RecordEncoder.wordsPerSlot)
            header.flags = UInt32(LA_FLAG_ATTACHED) | UInt32(LA_FLAG_INSTRUMENTED)
            header.attached_pid = 4242
            header.attached_processes = 1
            return RecordEncoder.writtenHeaderBytes(header)
        }

        /// The options byte, the header (`header`, or `writtenOver` after the first pass: option
        /// bit 7), then the slots.
        var input: [UInt8] { [options] + header + RecordEncoder.bytes(of: slots) }

        /// The input with its header written over by `header` after the reader's first pass.
        func input(writtenOver header: [UInt8]) -> [UInt8] {
            [options | RecordStreamReplay.headerWrittenOver] + header
                + [UInt8](repeating: 0, count: RecordStreamReplay.headerBytes - header.count) + RecordEncoder.bytes(of: slots)
        }

        mutating func event(
            _ kind: Int, subkind: UInt64 = 0, id: UInt32, _ word1: UInt64 = 0, _ word2: UInt64 = 0, _ word3: UInt64 = 0
        ) {
            slots += RecordEncoder.eventSlot(kind, subkind: subkind, id: id, word1, word2, word3)
        }

        mutating func blob(kind: Int, id: UInt64, value: UInt64, payload: [UInt8]) {
            slots += RecordEncoder.blobSlots(kind: kind, id: id, value: value, payload: payload)
        }

        mutating func type(id: UInt64, name: String, max: Int64, budgetSource: UInt32 = UInt32(LA_BUDGET_CODE)) {
            blob(
                kind: LA_BLOB_TYPE, id: id, value: UInt64(bitPattern: max),
                payload: RecordEncoder.typePayload(name: name, budgetSource: budgetSource))
        }

        mutating func stack(id: UInt64, _ addresses: [UInt64]) {
            blob(kind: LA_BLOB_STACK, id: id, value: 0, payload: RecordEncoder.stackPayload(addresses))
        }
    }
}
