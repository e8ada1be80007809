import LeakAuditWire

/// Records as LeakMonitor's shim writes them (docs/record-format.md, Sources/LeakAuditWire): slot
/// tags, whole slots as words, blob payloads, and the header fields a target's processes write.
/// The tests' channel writer and the record stream's seeds both encode through it, so that what
/// they stage is what the shim lays out.
public enum RecordEncoder {
    /// The 64-bit words of one slot: its tag, then words 1...3.
    public static let wordsPerSlot = Int(LA_WIRE_SLOT_SIZE) / MemoryLayout<UInt64>.size

    /// The time word the shim's events carry, as when the clock read 0 ms: events decode at time 0.
    public static let timeWord = UInt64(LA_TIME_STAMPED)

    /// The tag of an event slot: `kind` (`LA_SLOT_ALLOC`, `LA_SLOT_DEALLOC`, `LA_SLOT_TEST`) in
    /// bits 0...7, `subkind` (a test's `LA_TEST_*` phase) in 8...15, and `id` (the type's or the
    /// test's) in 32...63; process index 0.
    public static func eventTag(_ kind: Int, subkind: UInt64 = 0, id: UInt32) -> UInt64 {
        UInt64(kind) | subkind << 8 | UInt64(id) << 32
    }

    /// The tag of a blob's head: `LA_SLOT_BLOB_HEAD`, the blob's kind (`LA_BLOB_*`) and its slots,
    /// head included; process index 0.
    public static func headTag(blobKind: Int, totalSlots: UInt64) -> UInt64 {
        UInt64(LA_SLOT_BLOB_HEAD) | UInt64(blobKind) << 8 | totalSlots << 32
    }

    /// The tag of a blob's continuation slot `index` (1-based, 24 bits).
    public static func continuationTag(_ index: UInt64) -> UInt64 {
        UInt64(LA_SLOT_BLOB_CONT) | (index & 0xFF_FFFF) << 8
    }

    /// The continuation slots a payload of `length` bytes needs.
    public static func continuationCount(_ length: Int) -> UInt64 {
        UInt64((length + Int(LA_WIRE_CONT_PAYLOAD) - 1) / Int(LA_WIRE_CONT_PAYLOAD))
    }

    /// Words 1...3 of each continuation slot of `payload`, in order, the last chunk zero-padded.
    public static func continuationWords(_ payload: [UInt8]) -> [[UInt64]] {
        let chunkSize = Int(LA_WIRE_CONT_PAYLOAD)
        let wordCount = chunkSize / MemoryLayout<UInt64>.size
        let padded = payload + [UInt8](repeating: 0, count: Int(continuationCount(payload.count)) * chunkSize - payload.count)
        return stride(from: 0, to: padded.count, by: chunkSize).map { chunk in
            (0..<wordCount).map { word in littleEndianWord(padded[(chunk + word * 8)..<(chunk + word * 8 + 8)]) }
        }
    }

    /// An event's slot: its tag, then words 1...3.
    public static func eventSlot(
        _ kind: Int, subkind: UInt64 = 0, id: UInt32, _ word1: UInt64 = 0, _ word2: UInt64 = 0, _ word3: UInt64 = 0
    ) -> [UInt64] {
        [eventTag(kind, subkind: subkind, id: id), word1, word2, word3]
    }

    /// A whole blob's slots, as they lie in the ring: the head (id, payload length, `value`), then
    /// its continuations.
    public static func blobSlots(kind: Int, id: UInt64, value: UInt64, payload: [UInt8]) -> [UInt64] {
        let continuations = continuationWords(payload)
        var slots = [headTag(blobKind: kind, totalSlots: 1 + UInt64(continuations.count)), id, UInt64(payload.count), value]
        for (index, words) in continuations.enumerated() {
            slots += [continuationTag(UInt64(index + 1))] + words
        }
        return slots
    }

    /// A type blob's payload: `la_wire_type` (where the budget comes from, `LA_BUDGET_*`, and the
    /// pattern's index), then the name.
    public static func typePayload(
        name: String, budgetSource: UInt32 = UInt32(LA_BUDGET_CODE), patternIndex: UInt32 = 0
    ) -> [UInt8] {
        var fixed = la_wire_type(budget_source: budgetSource, pattern_index: patternIndex)
        return withUnsafeBytes(of: &fixed) { Array($0) } + Array(name.utf8)
    }

    /// A stack blob's payload: the return addresses, innermost first.
    public static func stackPayload(_ addresses: [UInt64]) -> [UInt8] { bytes(of: addresses) }

    /// A module blob's payload: `la_wire_module`, then the build-id and the path, as modules.c
    /// writes it.
    public static func modulePayload(start: UInt64, end: UInt64, buildID: [UInt8], path: String) -> [UInt8] {
        var fixed = la_wire_module(
            start: start, end: end, build_id_size: UInt32(buildID.count), path_size: UInt32(path.utf8.count))
        return withUnsafeBytes(of: &fixed) { Array($0) } + buildID + Array(path.utf8)
    }

    /// Where the header fields that a target's processes write lie in the header page: from
    /// `next_slot` up to `watch_offset` (`reader_lifecycle` and the padding after it included);
    /// leak-audit writes the fields before and after.
    public static let writtenHeaderFields: Range<Int> =
        MemoryLayout<la_wire_header>.offset(of: \.next_slot)!..<MemoryLayout<la_wire_header>.offset(of: \.watch_offset)!

    /// `header`'s bytes in `writtenHeaderFields`.
    public static func writtenHeaderBytes(_ header: la_wire_header) -> [UInt8] {
        var header = header
        return withUnsafeBytes(of: &header) { Array($0[writtenHeaderFields]) }
    }

    /// The little-endian bytes of `words`.
    public static func bytes(of words: [UInt64]) -> [UInt8] { words.flatMap(bytes) }

    /// The little-endian bytes of `value`.
    public static func bytes<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.littleEndian) { Array($0) }
    }

    private static func littleEndianWord(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }
}
