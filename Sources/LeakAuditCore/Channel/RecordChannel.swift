import CLeakAuditHost
import LeakAuditWire

#if canImport(Glibc)
    import Glibc
#endif

/// The reading end of the record stream: an anonymous shared file that the target inherits and
/// appends to (see docs/record-format.md). Because it is shared memory, every record the target
/// committed is here even when the target dies abruptly.
public final class RecordChannel {
    /// The descriptor the target inherits; named in LEAK_AUDIT_CHANNEL_FD.
    public let fileDescriptor: Int32
    /// How many 32-byte slots the channel holds.
    public let slotCapacity: UInt64
    private let mapping: UnsafeMutableRawPointer
    private let mappingLength: Int
    private var punchedUpTo: UInt64 = 0

    /// The environment variable through which the target finds the channel.
    public static let environmentVariable = LA_WIRE_ENV_CHANNEL_FD

    /// Creates and maps a channel of `slotCapacity` slots; the file is sparse, so unused capacity
    /// costs nothing.
    public init(slotCapacity: UInt64 = 1 << 29) throws(LeakAuditError) {
        let fd = leakaudit_host_memfd_create("leak-audit-records")
        guard fd >= 0 else { throw .channelUnavailable(call: "memfd_create", errno: errno) }
        let length = Int(LA_WIRE_HEADER_SIZE) + Int(slotCapacity) * Int(LA_WIRE_SLOT_SIZE)
        guard ftruncate(fd, off_t(length)) == 0 else {
            let code = errno
            close(fd)
            throw .channelUnavailable(call: "ftruncate", errno: code)
        }
        guard let base = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0),
            base != MAP_FAILED
        else {
            let code = errno
            close(fd)
            throw .channelUnavailable(call: "mmap", errno: code)
        }
        fileDescriptor = fd
        self.slotCapacity = slotCapacity
        mapping = base
        mappingLength = length
        let header = base.assumingMemoryBound(to: la_wire_header.self)
        header.pointee.version = LA_WIRE_VERSION
        header.pointee.slot_size = LA_WIRE_SLOT_SIZE
        header.pointee.slot_capacity = slotCapacity
        // The magic goes last: a target never sees a half-written header as valid.
        withUnsafeMutablePointer(to: &header.pointee.magic) { $0.pointee = LA_WIRE_MAGIC }
    }

    deinit {
        munmap(mapping, mappingLength)
        close(fileDescriptor)
    }

    private var header: UnsafeMutablePointer<la_wire_header> {
        mapping.assumingMemoryBound(to: la_wire_header.self)
    }

    /// Slots the target has reserved so far (some may not be committed yet).
    public var reservedSlots: UInt64 {
        min(la_wire_load_acquire_u64(&header.pointee.next_slot), slotCapacity)
    }

    /// The header's LA_FLAG_* bits.
    public var flags: UInt32 { la_wire_load_acquire_u32(&header.pointee.flags) }

    /// The pid of the process that attached, or 0.
    public var attachedPID: Int32 { Int32(bitPattern: la_wire_load_acquire_u32(&header.pointee.attached_pid)) }

    /// Records the target could not write because the channel was full.
    public var droppedRecords: UInt64 { la_wire_load_acquire_u64(&header.pointee.dropped) }

    /// The four words of slot `index`; the first (the tag) is read with acquire ordering so the
    /// others are complete when it is non-zero.
    func slot(_ index: UInt64) -> (tag: UInt64, UInt64, UInt64, UInt64) {
        let words = (mapping + Int(LA_WIRE_HEADER_SIZE) + Int(index) * Int(LA_WIRE_SLOT_SIZE))
            .assumingMemoryBound(to: UInt64.self)
        let tag = la_wire_load_acquire_u64(words)
        return (tag, words[1], words[2], words[3])
    }

    /// Raw payload bytes of a blob's continuation slots.
    func continuationPayload(_ index: UInt64) -> UnsafeRawBufferPointer {
        let start = mapping + Int(LA_WIRE_HEADER_SIZE) + Int(index) * Int(LA_WIRE_SLOT_SIZE) + 8
        return UnsafeRawBufferPointer(start: start, count: Int(LA_WIRE_CONT_PAYLOAD))
    }

    /// Returns the memory of slots below `index` to the system once they are decoded, so that a
    /// long run holds only its unread backlog.
    func release(slotsBelow index: UInt64) {
        let headerSize = UInt64(LA_WIRE_HEADER_SIZE)
        let chunk: UInt64 = 16 << 20
        let end = (headerSize + index * UInt64(LA_WIRE_SLOT_SIZE)) / chunk * chunk
        let start = max(punchedUpTo, headerSize)
        guard end > start + chunk else { return }
        let alignedStart = (start + 4095) / 4096 * 4096
        // Where punching holes is unsupported the memory is only kept longer: nothing is lost.
        _ = leakaudit_host_punch_hole(fileDescriptor, Int64(alignedStart), Int64(end - alignedStart))
        punchedUpTo = end
    }
}
