import LeakAuditWire
import RecordStreamSupport
import XCTest

@testable import LeakAuditCore
@testable import LeakAuditModel

#if canImport(Glibc)
    import Glibc
#endif

/// The writing end of a `RecordChannel`, as the C shim (Sources/CLeakMonitorShim/channel.c) is:
/// its own `MAP_SHARED` mapping of the channel's descriptor, slots reserved by bumping the
/// header's `next_slot` and placed at index % capacity in the ring, words 1...3 written before
/// the tag, each record encoded by `RecordEncoder`. Unlike the shim it does not wait for the reader:
/// tests decode before a lap ends.
///
/// Unlike the shim it can reserve a slot and commit it later (or never), so that tests can
/// stage the states a reader meets while writers race or die.
final class ChannelWriter {
    let channel: RecordChannel
    private let mapping: UnsafeMutableRawPointer
    private let length: Int

    init(_ channel: RecordChannel) throws {
        self.channel = channel
        length = Int(LA_WIRE_HEADER_SIZE) + Int(channel.slotCapacity) * Int(LA_WIRE_SLOT_SIZE)
        let base = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, channel.fileDescriptor, 0)
        guard let base, base != MAP_FAILED else {
            throw XCTSkip("mmap of the channel failed: errno \(errno)")
        }
        mapping = base
    }

    deinit { munmap(mapping, length) }

    private var header: UnsafeMutablePointer<la_wire_header> {
        mapping.assumingMemoryBound(to: la_wire_header.self)
    }

    /// The header's `consumed_slot`, as the reader published it.
    var consumedSlot: UInt64 { header.pointee.consumed_slot }

    /// Asks for process `index`'s heap walk as its LeakMonitor does (request `number`, at exit or
    /// when a test settled), counting it among the attached processes.
    func requestWalk(of index: Int, number: UInt32, atExit: Bool, unreachable: Bool = false) {
        header.pointee.attached_processes = Swift.max(header.pointee.attached_processes, UInt32(index + 1))
        la_wire_walk_slot(mapping, UInt32(index)).pointee.requested =
            number | (atExit ? LA_WALK_AT_EXIT : 0) | (unreachable ? LA_WALK_UNREACHABLE : 0)
    }

    /// Marks process `index`'s request as its LeakMonitor does once the process begins to end
    /// (`LA_WALK_ENDING`).
    func markEnding(of index: Int) {
        la_wire_walk_slot(mapping, UInt32(index)).pointee.requested |= LA_WALK_ENDING
    }

    /// Attaches as a process linking LeakMonitor does: takes the next process index (the header's
    /// `attached_processes`), sets `attached_pid` if no process did, flags the channel attached and
    /// instrumented, and writes that process's process record for `pid`; returns the index.
    @discardableResult
    func announce(pid: Int32) -> UInt8 {
        let process = UInt8(header.pointee.attached_processes)
        header.pointee.attached_processes += 1
        if header.pointee.attached_pid == 0 { header.pointee.attached_pid = pid }
        header.pointee.flags |= UInt32(LA_FLAG_ATTACHED) | UInt32(LA_FLAG_INSTRUMENTED)
        blob(kind: Int(LA_BLOB_PROCESS), id: UInt64(UInt32(bitPattern: pid)), value: 0, payload: [], process: process)
        return process
    }

    /// The tag stored in slot `index`'s place in the ring.
    func tag(_ index: UInt64) -> UInt64 { words(index)[0] }

    /// The header's `next_slot`, as the shim's atomic add sees it.
    var nextSlot: UInt64 {
        get { header.pointee.next_slot }
        set { header.pointee.next_slot = newValue }
    }

    /// Reserves `count` consecutive slots and returns the first one's index.
    func reserve(_ count: UInt64) -> UInt64 {
        let first = header.pointee.next_slot
        header.pointee.next_slot = first + count
        return first
    }

    private func words(_ index: UInt64) -> UnsafeMutablePointer<UInt64> {
        (mapping + Int(LA_WIRE_HEADER_SIZE) + Int(index & (channel.slotCapacity - 1)) * Int(LA_WIRE_SLOT_SIZE))
            .assumingMemoryBound(to: UInt64.self)
    }

    /// Writes words 1...3 of slot `index` and leaves its tag alone.
    func fill(_ index: UInt64, _ word1: UInt64, _ word2: UInt64, _ word3: UInt64) {
        let slot = words(index)
        slot[1] = word1
        slot[2] = word2
        slot[3] = word3
    }

    /// Marks reserved slot `index` as process `process`'s until it is written, as a blob's writer
    /// does (LA_RESERVATION_MARK); `slotIndex` is the index the mark names (the slot's own unless
    /// forged).
    func mark(_ index: UInt64, process: UInt8, slotIndex: UInt64? = nil) {
        words(index)[0] =
            UInt64(LA_RESERVATION_MARK) << 8 | UInt64(process) << 16 | (slotIndex ?? index) << 32
    }

    /// Commits slot `index` by storing its tag, which the shim stores last.
    func commit(_ index: UInt64, tag: UInt64) {
        words(index)[0] = tag
    }

    /// Writes a whole slot (words first, tag last).
    func write(_ index: UInt64, tag: UInt64, _ word1: UInt64 = 0, _ word2: UInt64 = 0, _ word3: UInt64 = 0) {
        fill(index, word1, word2, word3)
        commit(index, tag: tag)
    }

    /// Appends an allocation event of process index `process` (into slot `index` when it was
    /// reserved already); returns its slot index.
    @discardableResult
    func allocated(typeID: UInt32, object: UInt64, stackID: UInt32, process: UInt8 = 0, at index: UInt64? = nil)
        -> UInt64
    {
        let index = index ?? reserve(1)
        write(
            index, tag: RecordEncoder.eventTag(Int(LA_SLOT_ALLOC), id: typeID) | UInt64(process) << 16, object,
            UInt64(stackID) | RecordEncoder.timeWord << 32, 0)
        return index
    }

    /// Appends an allocation event from a thread other than the reader's, as the shim does: the
    /// reservation and the tag stored with release ordering, the tag a moment after the
    /// reservation (where a reader polling the stream's end meets it still empty).
    func allocatedConcurrently(typeID: UInt32, object: UInt64) {
        let index = la_wire_load_acquire_u64(&header.pointee.next_slot)
        la_wire_store_release_u64(&header.pointee.next_slot, index + 1)
        fill(index, object, RecordEncoder.timeWord << 32, 0)
        la_wire_store_release_u64(words(index), RecordEncoder.eventTag(Int(LA_SLOT_ALLOC), id: typeID))
    }

    /// The header's `consumed_slot`, read with acquire ordering from another thread than the reader's.
    var consumedSlotAcquired: UInt64 { la_wire_load_acquire_u64(&header.pointee.consumed_slot) }

    /// Appends a deallocation event; returns its slot index.
    @discardableResult
    func deallocated(typeID: UInt32, object: UInt64) -> UInt64 {
        let index = reserve(1)
        write(index, tag: RecordEncoder.eventTag(Int(LA_SLOT_DEALLOC), id: typeID), object, RecordEncoder.timeWord, 0)
        return index
    }

    /// Writes the continuation slots of a blob whose head is at `head`, as the shim does (the
    /// last chunk zero-padded).
    func writeContinuations(head: UInt64, payload: [UInt8]) {
        for (offset, words) in RecordEncoder.continuationWords(payload).enumerated() {
            let index = UInt64(offset + 1)
            write(head + index, tag: RecordEncoder.continuationTag(index), words[0], words[1], words[2])
        }
    }

    /// Appends a complete blob (continuations first, head last); returns the head's slot index.
    @discardableResult
    func blob(kind: Int, id: UInt64, value: UInt64, payload: [UInt8], process: UInt8 = 0) -> UInt64 {
        let total = 1 + RecordEncoder.continuationCount(payload.count)
        let head = reserve(total)
        writeContinuations(head: head, payload: payload)
        write(
            head, tag: RecordEncoder.headTag(blobKind: kind, totalSlots: total) | UInt64(process) << 16, id,
            UInt64(payload.count), value)
        return head
    }

    @discardableResult
    func typeBlob(id: UInt32, name: String, max: Int64, process: UInt8 = 0) -> UInt64 {
        blob(
            kind: Int(LA_BLOB_TYPE), id: UInt64(id), value: UInt64(bitPattern: max),
            payload: RecordEncoder.typePayload(name: name), process: process)
    }

    @discardableResult
    func stackBlob(id: UInt32, addresses: [UInt64], truncated: Bool) -> UInt64 {
        blob(kind: Int(LA_BLOB_STACK), id: UInt64(id), value: truncated ? 1 : 0, payload: RecordEncoder.stackPayload(addresses))
    }

    @discardableResult
    func moduleBlob(index: UInt64, image: ModuleImage) -> UInt64 {
        blob(
            kind: Int(LA_BLOB_MODULE), id: index, value: image.loadBias,
            payload: RecordEncoder.modulePayload(start: image.start, end: image.end, buildID: image.buildID, path: image.path))
    }
}

/// Decodes everything committed so far and returns the events in order.
func drain(_ decoder: inout RecordDecoder, _ channel: RecordChannel, targetFinished: Bool) -> [WireEvent] {
    var events: [WireEvent] = []
    decoder.decode(channel, targetFinished: targetFinished) { event, _ in events.append(event) }
    return events
}
