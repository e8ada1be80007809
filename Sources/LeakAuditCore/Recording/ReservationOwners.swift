import LeakAuditWire

/// The processes that may have reserved the slot the reader waits on, and whether they ended.
///
/// A process's first reservation is its process record (docs/record-format.md, "Channel creation
/// and discovery", step 8), and it takes its index before it. So the slot at the cursor belongs to
/// a process that announced itself before it (its process record is decoded already), or to one
/// that took an index and whose process record the reader has not seen: neither decoded nor
/// committed after the cursor. A process whose process record lies after the cursor reserved
/// nothing before it. Only when every possible owner has ended is the slot's writer known to be
/// dead: a live process may have a writer that the machine's load (or a stop) holds between
/// reserving and committing, and whose record would land in a place the ring hands out again.
struct ReservationOwners {
    /// Every process that may own the reservation is known and has ended.
    var allEnded: Bool
    /// A process that may own it has ended.
    var someEnded: Bool
    /// The first slot after the cursor that holds a committed process record: every slot between
    /// the cursor and it was reserved before that process announced itself.
    var firstLaterAnnouncement: UInt64?
    /// The slot's writer marked it with its process index (`LA_RESERVATION_MARK`, a blob's
    /// writer) and that process announced itself and has ended: the slot will never be written,
    /// whoever else lives. A mark is only what the target wrote: one naming a process that did not
    /// announce itself, or another slot's index, says nothing.
    var markedOwnerEnded: Bool
    /// With `markedOwnerEnded`, the end of that writer's blob: the slots from the cursor on that
    /// are marked by the same process or are continuations it committed before it died.
    var markedSlotsEnd: UInt64

    /// The possible owners of the uncommitted slot at `cursor` in `channel`, given the processes
    /// whose records were decoded (`announced`: index and pid) and `hasEnded`, which says whether
    /// a pid has ended. Looks at most a ring of slots after the cursor.
    init(
        of cursor: UInt64, in channel: RecordChannel, announced: [(index: UInt8, pid: Int32)],
        hasEnded: (Int32) -> Bool
    ) {
        // The count is read before the slots: a process that takes an index after this read
        // reserves its process record after it too, more than a wait after the cursor's slot.
        let indexes = Swift.min(channel.attachedProcesses, Int(LA_WIRE_MAX_PROCESSES))
        var known = [Bool](repeating: false, count: Int(LA_WIRE_MAX_PROCESSES))
        for process in announced { known[Int(process.index)] = true }
        let reserved = channel.reservedSlots
        let end = reserved > cursor ? Swift.min(reserved, cursor &+ channel.slotCapacity) : cursor
        var firstLater: UInt64? = nil
        var index = cursor &+ 1
        while index < end {
            let tag = channel.slot(index).tag
            if tag & 0xFF == UInt64(LA_SLOT_BLOB_HEAD) && (tag >> 8) & 0xFF == UInt64(LA_BLOB_PROCESS) {
                known[Int((tag >> 16) & 0xFF)] = true
                if firstLater == nil { firstLater = index }
            }
            index &+= 1
        }
        let unseen = (0..<indexes).contains { !known[$0] }
        let ended = announced.map { hasEnded($0.pid) }
        allEnded = !unseen && !ended.isEmpty && ended.allSatisfy { $0 }
        someEnded = ended.contains(true)
        firstLaterAnnouncement = firstLater
        let marker = Self.markedWriter(of: cursor, tag: channel.slot(cursor).tag)
        markedOwnerEnded = announced.indices.contains { announced[$0].index == marker && ended[$0] }
        markedSlotsEnd = cursor &+ 1
        while markedOwnerEnded && markedSlotsEnd < end {
            let tag = channel.slot(markedSlotsEnd).tag
            guard Self.markedWriter(of: markedSlotsEnd, tag: tag) == marker || tag & 0xFF == UInt64(LA_SLOT_BLOB_CONT)
            else { break }
            markedSlotsEnd &+= 1
        }
    }

    /// The process index a reservation mark in `tag`, the tag of slot `cursor`, names; nil when
    /// the tag is no whole mark for that slot (not committed and not marked, or committed since).
    static func markedWriter(of cursor: UInt64, tag: UInt64) -> UInt8? {
        guard tag & 0xFFFF == UInt64(LA_SLOT_EMPTY) | UInt64(LA_RESERVATION_MARK) << 8,
            tag >> 32 == cursor & 0xFFFF_FFFF
        else { return nil }
        return UInt8(truncatingIfNeeded: tag >> 16)
    }
}
