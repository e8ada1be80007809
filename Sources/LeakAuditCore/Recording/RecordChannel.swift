import CLeakAuditHost
import LeakAuditModel
import LeakAuditWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The reading end of the record stream: a ring in memory shared with the target's processes,
/// which append to it (see docs/record-format.md). Because it is shared memory, every record the
/// target committed is here even when the target dies abruptly. The platform provides the memory
/// (`SharedRegion`); this type only reads and writes the ring's layout.
public final class RecordChannel {
    /// How many 32-byte slots the ring holds (a power of two).
    public let slotCapacity: UInt64
    /// The memory the ring lives in.
    let region: any SharedRegion
    private let mapping: UnsafeMutableRawPointer

    /// 2^19 slots: 16 MiB.
    public static let defaultSlotCapacity: UInt64 = 1 << 19

    /// The environment variable through which the target finds the channel.
    public static let environmentVariable = LA_WIRE_ENV_CHANNEL

    /// This run's token, in the header and in the variable: a process whose variable was left
    /// from another run names another, and stays out of this channel.
    let runToken: UInt64

    /// The variable's value: how the target's processes find the shared memory, and this run's
    /// token (`<pid>:<fd>:<token in hex>`).
    public var environmentValue: String { region.handle + ":" + String(runToken, radix: 16) }

    /// The bytes a ring of `slotCapacity` slots needs, header included.
    static func byteCount(slotCapacity: UInt64) -> Int {
        Int(LA_WIRE_HEADER_SIZE) + Int(slotCapacity) * Int(LA_WIRE_SLOT_SIZE)
    }

    /// `requested` rounded up to a power of two, at least 2.
    static func roundedSlotCapacity(_ requested: UInt64) -> UInt64 {
        UInt64(1) << UInt64(64 - max(requested, 2).subtractingReportingOverflow(1).partialValue.leadingZeroBitCount)
    }

    /// Lays out an empty ring of `slotCapacity` slots (a power of two) in `region`, which must
    /// hold `byteCount(slotCapacity:)` zeroed bytes and `watchLines` after them, and writes its
    /// header; `watchLines` (LEAK_AUDIT_WATCH's, too long for the environment) go after the ring.
    init(region: any SharedRegion, slotCapacity: UInt64, watchLines: [UInt8] = []) {
        let ringEnd = Self.byteCount(slotCapacity: slotCapacity)
        precondition(region.length >= ringEnd + watchLines.count, "the shared region is too small")
        self.region = region
        self.slotCapacity = slotCapacity
        mapping = region.base
        let header = mapping.assumingMemoryBound(to: la_wire_header.self)
        header.pointee.version = LA_WIRE_VERSION
        header.pointee.slot_size = LA_WIRE_SLOT_SIZE
        header.pointee.slot_capacity = slotCapacity
        header.pointee.reader_pid = getpid()
        runToken = UInt64.random(in: 1...UInt64.max)
        header.pointee.run_token = runToken
        // An attached process that finds leak-audit gone before the run's end ends itself.
        header.pointee.reader_lifecycle = UInt32(LA_READER_SUPERVISES)
        if !watchLines.isEmpty {
            UnsafeMutableRawBufferPointer(start: mapping + ringEnd, count: watchLines.count).copyBytes(from: watchLines)
            header.pointee.watch_offset = UInt64(ringEnd)
            header.pointee.watch_length = UInt64(watchLines.count)
        }
        // The magic goes last: a target never sees a half-written header as valid.
        withUnsafeMutablePointer(to: &header.pointee.magic) { $0.pointee = LA_WIRE_MAGIC }
    }

    /// The run is over: a process still attached (one the target left running) is told so before
    /// leak-audit closes the channel, and runs on detached rather than end itself as it would if
    /// leak-audit had died (docs/record-format.md, "When leak-audit is gone").
    deinit {
        la_wire_store_release_u32(
            &header.pointee.reader_lifecycle, UInt32(LA_READER_SUPERVISES | LA_READER_CLOSED))
    }

    private var header: UnsafeMutablePointer<la_wire_header> {
        mapping.assumingMemoryBound(to: la_wire_header.self)
    }

    /// Slot indices the target has reserved so far (some may not be committed yet).
    public var reservedSlots: UInt64 { la_wire_load_acquire_u64(&header.pointee.next_slot) }

    /// The header's LA_FLAG_* bits.
    public var flags: UInt32 { la_wire_load_acquire_u32(&header.pointee.flags) }

    /// The pid of the first process that attached, or 0.
    public var attachedPID: Int32 { Int32(bitPattern: la_wire_load_acquire_u32(&header.pointee.attached_pid)) }

    /// Processes that attached (the target and any instrumented process it started).
    public var attachedProcesses: Int { Int(la_wire_load_acquire_u32(&header.pointee.attached_processes)) }

    /// Swift processes of the run that were left out (SwiftPM's manifests and plugins, build
    /// helpers).
    public var skippedProcesses: Int { Int(la_wire_load_acquire_u32(&header.pointee.skipped_processes)) }

    /// Swift processes whose allocations the preloaded library watched.
    public var watchedProcesses: Int { Int(la_wire_load_acquire_u32(&header.pointee.watched_processes)) }
    /// Children that attached processes forked without exec: they stopped writing.
    public var forkedProcesses: Int { Int(la_wire_load_acquire_u32(&header.pointee.forked_processes)) }

    /// Records the target did not write: leak-audit had stopped reading, or one was larger than the ring.
    public var droppedRecords: UInt64 { la_wire_load_acquire_u64(&header.pointee.dropped) }

    /// The ring's first word: slot `index` is the four words at `ring + 4 × (index & (slotCapacity − 1))`.
    var ring: UnsafeMutablePointer<UInt64> {
        (mapping + Int(LA_WIRE_HEADER_SIZE)).assumingMemoryBound(to: UInt64.self)
    }

    private func words(_ index: UInt64) -> UnsafeMutablePointer<UInt64> {
        (mapping + Int(LA_WIRE_HEADER_SIZE) + Int(index & (slotCapacity - 1)) * Int(LA_WIRE_SLOT_SIZE))
            .assumingMemoryBound(to: UInt64.self)
    }

    /// The four words of the slot with index `index`; the first (the tag) is read with acquire
    /// ordering so the others are complete when it is non-zero.
    func slot(_ index: UInt64) -> (tag: UInt64, UInt64, UInt64, UInt64) {
        let words = words(index)
        let tag = la_wire_load_acquire_u64(words)
        return (tag, words[1], words[2], words[3])
    }

    /// Raw payload bytes of a blob's continuation slot.
    func continuationPayload(_ index: UInt64) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: words(index) + 1, count: Int(LA_WIRE_CONT_PAYLOAD))
    }

    /// Marks the slot decoded: its place in the ring reads as empty until the next lap writes it.
    func retire(_ index: UInt64) {
        la_wire_store_release_u64(words(index), 0)
    }

    /// Tells the target that every index below `index` is decoded, so their places can be reused.
    /// Process `index`'s heap-walk handshake (la_wire_walk): `requested`, then `answered`.
    private func walk(_ index: Int) -> UnsafeMutableRawPointer {
        mapping + Int(LA_WIRE_WALKS_OFFSET) + index * MemoryLayout<la_wire_walk>.stride
    }

    /// The request process `index` waits on, if any: its number, whether the process is exiting
    /// (else a test of it settled), whether, exiting, it asks for its unreachable objects, and
    /// whether it asks no walk but whether its finished tests still have instances alive
    /// (`LA_WALK_GRACE_QUESTION`), and whether a test's settling asked before the process began to
    /// end (`LA_WALK_ENDING`).
    func pendingWalk(
        of index: Int
    ) -> (number: UInt32, atExit: Bool, unreachable: Bool, graceQuestion: Bool, ending: Bool)? {
        let requested = la_wire_load_acquire_u32(walk(index))
        let number = requested & (UInt32(LA_WALK_ENDING) - 1)
        let answered = la_wire_load_acquire_u32(walk(index) + MemoryLayout<UInt32>.stride)
        guard number != 0, number != answered & ~UInt32(LA_WALK_GRACE_NEEDED) else { return nil }
        let atExit = requested & UInt32(LA_WALK_AT_EXIT) != 0
        let question = !atExit && requested & UInt32(LA_WALK_GRACE_QUESTION) != 0
        let ending = !atExit && !question && requested & UInt32(LA_WALK_ENDING) != 0
        return (number, atExit, atExit && requested & UInt32(LA_WALK_UNREACHABLE) != 0, question, ending)
    }

    /// Answers request `number` of process `index`, which then goes on, and wakes it; `graceNeeded`
    /// answers a grace question yes.
    func answerWalk(of index: Int, number: UInt32, graceNeeded: Bool = false) {
        let answered = walk(index) + MemoryLayout<UInt32>.stride
        la_wire_store_release_u32(answered, number | (graceNeeded ? UInt32(LA_WALK_GRACE_NEEDED) : 0))
        leakaudit_host_futex_wake(answered.assumingMemoryBound(to: UInt32.self))
    }

    /// When the channel was created, in nanoseconds of the boot-time clock (ContinuousClock's,
    /// which goes on while the machine sleeps): the origin of its clock.
    private let createdAt = RecordChannel.bootTimeNanoseconds()

    /// The boot-time clock, read directly: the reader publishes it every pass, and
    /// ContinuousClock's Duration arithmetic (128-bit) cost about 370 instructions a pass.
    private static func bootTimeNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_BOOTTIME, &now)
        return UInt64(truncatingIfNeeded: now.tv_sec) &* 1_000_000_000 &+ UInt64(truncatingIfNeeded: now.tv_nsec)
    }

    /// Publishes the milliseconds since the channel was created as the header's `clock_ms`, which
    /// writers copy into their records' time words, and returns them.
    @discardableResult
    func publishClock() -> UInt64 {
        let now = Self.bootTimeNanoseconds()
        let milliseconds = now > createdAt ? (now &- createdAt) / 1_000_000 : 0
        la_wire_store_release_u64(&header.pointee.clock_ms, milliseconds)
        return milliseconds
    }

    func publishConsumed(upTo index: UInt64) {
        la_wire_store_release_u64(&header.pointee.consumed_slot, index)
    }
}

extension RecordChannel {
    /// The ring's size: LEAK_AUDIT_CHANNEL_SLOTS (64 to 2^26 slots, a power of two) when set —
    /// tests shrink it to exercise wrap-around and a writer waiting for the reader — else the
    /// default.
    static func requestedSlotCapacity(inherited: [String: String]) -> UInt64 {
        let requested = inherited["LEAK_AUDIT_CHANNEL_SLOTS"].flatMap { UInt64($0) }
        return requested.map { Swift.min(Swift.max($0, 64), 1 << 26) } ?? defaultSlotCapacity
    }

    /// A ring of `slotCapacity` slots (rounded up to a power of two) in new shared memory of the
    /// current platform; 2^19 slots are 16 MiB, enough for the target to run a whole polling
    /// interval ahead of the reader.
    convenience init(slotCapacity requested: UInt64 = defaultSlotCapacity) throws(LeakAuditError) {
        let slotCapacity = Self.roundedSlotCapacity(requested)
        let region = try currentPlatform().makeSharedRegion(byteCount: Self.byteCount(slotCapacity: slotCapacity))
        self.init(region: region, slotCapacity: slotCapacity)
    }

    /// The file descriptor of the ring's memory, -1 when it is not in a file.
    var fileDescriptor: Int32 { region.fileDescriptor }

    /// Whether a process waits for its heap to be walked (`pendingWalk`).
    var hasPendingWalk: Bool {
        (0..<Swift.min(attachedProcesses, Int(LA_WIRE_MAX_PROCESSES))).contains { pendingWalk(of: $0) != nil }
    }
}
