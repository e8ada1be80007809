import LeakAuditModel
import LeakAuditWire

/// The reading side of a run, from a channel's bytes to a report, without a target: what a fuzz
/// target or a test needs to hand the reader bytes that a hostile target could have written
/// (Tests/RecordStreamSupport lays them out, Fuzz/RecordStreamFuzzer fuzzes them).
public enum ChannelReplay {
    /// Builds the report of a run whose channel held what `write` put there: the same decoder,
    /// ledgers and report builder as a real run, with frames that carry their address alone (no
    /// module file is opened).
    ///
    /// The channel is laid out in zeroed memory with a ring of `slotCapacity` slots, and its header
    /// written as leak-audit writes it before starting a target; then `write` gets the whole
    /// channel (the header page, then the ring at `LA_WIRE_HEADER_SIZE`) to write as a target's
    /// processes would. The replayed target runs for one pass of the reader, during which
    /// `whileRunning` gets the channel again (to write over what the reader has already seen),
    /// then has exited 0.
    ///
    /// - Parameters:
    ///   - slotCapacity: the ring's slots, a power of two.
    ///   - watch: what the run watched, as `leak-audit run`'s options set it.
    ///   - testBundle: true to replay a test bundle's run, whose allocations are attributed to the
    ///     test running when they were made.
    public static func report(
        slotCapacity: UInt64, watch: WatchOptions, testBundle: Bool = false,
        write: (UnsafeMutableRawBufferPointer) -> Void,
        whileRunning: (UnsafeMutableRawBufferPointer) -> Void = { _ in }
    ) -> AuditReport {
        precondition(slotCapacity >= 2 && slotCapacity.nonzeroBitCount == 1, "a ring's slots are a power of two")
        var watch = watch
        watch.attributesTests = testBundle
        let region = HeapRegion(byteCount: RecordChannel.byteCount(slotCapacity: slotCapacity))
        let channel = RecordChannel(region: region, slotCapacity: slotCapacity)
        write(region.buffer)
        let (outcome, received) = withoutActuallyEscaping(whileRunning) { whileRunning in
            Reception.receive(
                from: channel, while: ReplayedTarget(afterFirstPass: { whileRunning(region.buffer) }), watch: watch,
                pollMicroseconds: 0)
        }
        let run = RecordedRun(
            request: AuditRequest(target: "replayed", arguments: [], watch: watch),
            plan: RunPlan(executablePath: "/replayed", targetKind: .dynamicSwift, watch: watch),
            outcome: outcome, received: received)
        return ReportBuilder(
            toolVersion: "replay", makeSymbolizer: { _ in AddressOnlySymbolizer() }, inspectExecutable: { _ in .dynamicSwift }
        ).build(from: run)
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
