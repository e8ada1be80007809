import LeakAuditModel
import LeakAuditWire

/// Decodes the channel's slots into events, incrementally, while the target runs and after.
///
/// Slots are committed out of order by concurrent writers. While the target lives, decoding stops
/// at the first uncommitted slot and resumes there later. Once the target is gone an uncommitted
/// slot can never complete (its writer died mid-record): it is skipped and counted as torn. A
/// committed slot no writer could have written is counted as damaged: a damaged stream, which
/// makes the report incomplete.
struct RecordDecoder {
    /// The next slot to decode.
    private(set) var cursor: UInt64 = 0
    /// Slots that were reserved but never committed: their writer died, or the target ended, first.
    private(set) var tornSlots: UInt64 = 0
    /// Committed slots that are no record (an unknown kind, a malformed blob), and a `next_slot`
    /// further ahead than any writer can reserve: the stream was damaged.
    private(set) var damagedSlots: UInt64 = 0

    /// Stack blobs of more than LA_WIRE_MAX_FRAMES addresses, cut to their first ones (each also
    /// counted as a damaged slot), and the addresses cut from them.
    private(set) var overlongStacks: UInt64 = 0
    private(set) var cutFrames: UInt64 = 0
    /// Type and test names longer than LA_WIRE_MAX_NAME bytes, cut there.
    private(set) var longNames: UInt64 = 0

    /// The most return addresses a stack keeps (LA_WIRE_MAX_FRAMES).
    static let mostFrames = Int(LA_WIRE_MAX_FRAMES)
    /// The most bytes of a type or test name kept (LA_WIRE_MAX_NAME).
    static let longestName = Int(LA_WIRE_MAX_NAME)

    /// The channel's clock as this decoder last published it: no record it decodes was written
    /// later (docs/record-format.md, "Time").
    private(set) var clock: UInt64 = 0

    /// When a record whose time word is `word` was written, in milliseconds since the channel was
    /// created: `clock` less how far the word's low bits lie behind it (a word is never ahead of
    /// the clock it was copied from), and `clock` itself for a writer that stamps no time.
    func time(ofWord word: UInt64) -> UInt64 { Self.time(ofWord: word, clock: clock) }

    /// `time(ofWord:)` at a given clock. The word holds the clock's low 31 bits when it was
    /// copied, so the result is exact while the reader is less than 2^31 ms (24 days) behind its
    /// writers; whatever the word holds, it lies between 0 and `clock`.
    static func time(ofWord word: UInt64, clock: UInt64) -> UInt64 {
        guard word & UInt64(LA_TIME_STAMPED) != 0 else { return clock }
        let behind = (clock &- word) & UInt64(LA_TIME_MASK)
        return clock >= behind ? clock - behind : 0
    }

    /// Decodes every committed slot from the cursor on and passes each event, with the index of
    /// the process that wrote it, to `body`; for tests, which collect events in a closure.
    mutating func decode(_ channel: RecordChannel, targetFinished: Bool, into body: (WireEvent, _ process: UInt8) -> Void) {
        withoutActuallyEscaping(body) { body in
            var sink = ClosureSink(body: body)
            decode(channel, targetFinished: targetFinished, into: &sink)
        }
    }

    /// Decodes every committed slot from the cursor on and passes each event, with the index of
    /// the process that wrote it, to `sink`, retiring each decoded slot and publishing progress so
    /// that the target can reuse the ring. The sink is generic and `inout`, not a closure: a
    /// closure that captures the ledgers made every record pay for a dynamic exclusivity check.
    /// - Parameter targetFinished: true once the target can write no more.
    mutating func decode<Sink: RecordSink>(_ channel: RecordChannel, targetFinished: Bool, into sink: inout Sink) {
        defer { channel.publishConsumed(upTo: cursor) }
        clock = channel.publishClock()
        // No committed slot lies a whole ring past the cursor (its writer would still be waiting
        // for room): one pass reads at most one ring, so a damaged `next_slot` sizes no loop.
        let reserved = channel.reservedSlots
        let end = reserved > cursor ? Swift.min(reserved, cursor &+ channel.slotCapacity) : cursor
        // Writers reserve at most a ring ahead of the reader, plus one record each while they wait
        // for room: a larger gap is a damaged header, and its empty slots are no torn records.
        let impossibleGap = reserved > cursor && reserved &- cursor > channel.slotCapacity &+ Self.mostWaitingWriters
        defer {
            // Once the target is gone, what was reserved beyond and never written is torn.
            if targetFinished && reserved > cursor {
                if impossibleGap { damagedSlots &+= 1 } else { tornSlots &+= reserved &- cursor }
                cursor = reserved
            }
        }
        // The ring's words, read here rather than through the channel's methods: this loop runs once
        // per record.
        let ring = channel.ring
        let placeMask = channel.slotCapacity &- 1
        let prefetching = sink.prefersPrefetch
        // The loop's own copy of the cursor, in a register rather than written back to `self` at
        // every record; `self.cursor` takes it wherever the loop ends.
        var position = cursor
        defer { cursor = position }
        while position < end {
            // Writers blocked on a full ring must not wait for a long decode to finish.
            if position % Self.publicationInterval == 0 {
                channel.publishConsumed(upTo: position)
                clock = channel.publishClock()
            }
            // Allocations and deallocations, nearly every record, up to the next publication or
            // the first other record, in a loop of their own.
            let runEnd = Swift.min(end, (position | (Self.publicationInterval &- 1)) &+ 1)
            position =
                prefetching
                ? decodeAllocations(
                    from: position, to: runEnd, end: end, ring: ring, placeMask: placeMask, prefetching: true, into: &sink)
                : decodeAllocations(
                    from: position, to: runEnd, end: end, ring: ring, placeMask: placeMask, prefetching: false, into: &sink)
            if position == runEnd { continue }
            let words = Self.words(of: position, in: ring, placeMask: placeMask)
            let tag = la_wire_load_acquire_u64(words)
            let (word1, word2, word3) = (words[1], words[2], words[3])
            let kind = UInt32(truncatingIfNeeded: tag & 0xFF)
            let process = UInt8(truncatingIfNeeded: tag >> 16)
            var length: UInt64 = 1
            switch kind {
            case UInt32(LA_SLOT_ALLOC), UInt32(LA_SLOT_DEALLOC):
                // Committed since `decodeAllocations` found the slot empty (this read is a second
                // look at it): decoded there, on the next turn of the loop.
                continue
            case UInt32(LA_SLOT_EMPTY):
                guard targetFinished || position < abandonedBelow else { return }
                if !impossibleGap { tornSlots += 1 }
            case UInt32(LA_SLOT_TEST):
                sink.receive(
                    .testPhase(
                        id: UInt32(tag >> 32), phase: UInt32((tag >> 8) & 0xFF), sequence: position, time: time(ofWord: word1)),
                    from: process)
            case UInt32(LA_SLOT_BLOB_HEAD):
                length = Swift.min(Swift.max(tag >> 32, 1), channel.slotCapacity)
                let blobKind = UInt32((tag >> 8) & 0xFF)
                if let event = decodeBlob(
                    channel, at: position, kind: blobKind, slotCount: length, id: word1, length: word2, value: word3)
                {
                    sink.receive(event, from: process)
                } else {
                    // Writers commit a blob's continuations before its head: a committed head
                    // without them, or with a wrong length or kind, is damage.
                    damagedSlots += 1
                    length = 1  // its continuations are skipped one by one
                }
            case UInt32(LA_SLOT_BLOB_CONT):
                // A continuation whose head was torn, or that followed a damaged head: skip it alone.
                tornSlots += 1
            default:
                // No writer commits any other kind.
                damagedSlots += 1
            }
            for index in position..<(position + length) { channel.retire(index) }
            position += length
        }
    }

    /// Decodes the allocations and deallocations from slot `start` on, up to `stop` or the first
    /// slot of another kind (or not committed), and returns where it stopped. With `prefetching`
    /// (a constant at each call), each record first announces the object of the record
    /// `prefetchDistance` slots on, before `end`.
    @inline(__always)
    private func decodeAllocations<Sink: RecordSink>(
        from start: UInt64, to stop: UInt64, end: UInt64, ring: UnsafeMutablePointer<UInt64>, placeMask: UInt64,
        prefetching: Bool, into sink: inout Sink
    ) -> UInt64 {
        var position = start
        while position < stop {
            // With a million instances alive, each record's table slot is a cache miss: the
            // slot of the record a few places on is asked for now, so that it arrives meanwhile.
            // The slot may not be committed yet: what it holds is only a hint.
            if prefetching && position &+ Self.prefetchDistance < end {
                let ahead = Self.words(of: position &+ Self.prefetchDistance, in: ring, placeMask: placeMask)
                let aheadTag = la_wire_load_acquire_u64(ahead)
                let aheadKind = UInt32(truncatingIfNeeded: aheadTag & 0xFF)
                if aheadKind == UInt32(LA_SLOT_ALLOC) || aheadKind == UInt32(LA_SLOT_DEALLOC) {
                    sink.prefetch(object: ahead[1], from: UInt8(truncatingIfNeeded: aheadTag >> 16))
                }
            }
            let words = Self.words(of: position, in: ring, placeMask: placeMask)
            let tag = la_wire_load_acquire_u64(words)
            let kind = UInt32(truncatingIfNeeded: tag & 0xFF)
            guard kind == UInt32(LA_SLOT_ALLOC) || kind == UInt32(LA_SLOT_DEALLOC) else { break }
            let (word1, word2, word3) = (words[1], words[2], words[3])
            // Retired as soon as it is read: writers reuse it only once `publishConsumed` says so,
            // and the slot's address need not be kept while the sink counts the record.
            la_wire_store_release_u64(words, 0)
            let process = UInt8(truncatingIfNeeded: tag >> 16)
            if kind == UInt32(LA_SLOT_ALLOC) {
                sink.allocated(
                    typeID: UInt32(tag >> 32), object: word1, stackID: UInt32(truncatingIfNeeded: word2), sequence: position,
                    test: word3 == 0 ? nil : UInt32(truncatingIfNeeded: word3 &- 1),
                    time: RecordTime(word: word2 >> 32, clock: clock), from: process)
            } else {
                sink.deallocated(
                    typeID: UInt32(tag >> 32), object: word1, sequence: position, time: RecordTime(word: word2, clock: clock),
                    from: process)
            }
            position &+= 1
        }
        return position
    }

    /// The four words of slot `index` in the ring (`placeMask`: its capacity less one).
    @inline(__always)
    private static func words(of index: UInt64, in ring: UnsafeMutablePointer<UInt64>, placeMask: UInt64)
        -> UnsafeMutablePointer<UInt64>
    {
        ring + Int(truncatingIfNeeded: (index & placeMask) &<< 2)
    }

    /// Whether the cursor waits on a slot that was reserved and is not committed.
    func isWaiting(on channel: RecordChannel) -> Bool {
        channel.reservedSlots > cursor && channel.slot(cursor).0 & 0xFF == UInt64(LA_SLOT_EMPTY)
    }

    /// Slots below it that are still not committed are torn, even while the target runs
    /// (`abandonReservations(below:)`).
    private(set) var abandonedBelow: UInt64 = 0

    /// Takes every slot below `index` that is not committed by the next pass for torn: leak-audit
    /// decided that their writers stalled or died (each was reserved when the cursor started
    /// waiting, long ago). One reservation can span a whole ring: its slots are skipped in one
    /// pass rather than one wait each.
    mutating func abandonReservations(below index: UInt64) {
        abandonedBelow = Swift.max(abandonedBelow, index)
    }

    /// A bound on the writers that can wait for room at once, each with a record reserved beyond
    /// the ring: threads of the processes of one run.
    static let mostWaitingWriters: UInt64 = 1 << 16

    /// How often a pass publishes its progress and the clock, in slots: every 4,096 records a pass
    /// decodes, writers waiting for room may go on.
    static let publicationInterval: UInt64 = 4096

    /// How many slots ahead the decoder announces a record's object (`RecordSink.prefetch`): about
    /// as many records as it decodes while a cache miss is served.
    static let prefetchDistance: UInt64 = 8

    /// The blob whose head is the slot at `cursor`.
    private mutating func decodeBlob(
        _ channel: RecordChannel, at cursor: UInt64, kind: UInt32, slotCount: UInt64, id: UInt64, length: UInt64,
        value: UInt64
    ) -> WireEvent? {
        guard length <= (slotCount - 1) * UInt64(LA_WIRE_CONT_PAYLOAD),
            cursor + slotCount <= channel.reservedSlots
        else { return nil }
        var payload: [UInt8] = []
        payload.reserveCapacity(Int(length))
        for index in 1..<slotCount {
            let (tag, _, _, _) = channel.slot(cursor + index)
            guard tag & 0xFF == UInt64(LA_SLOT_BLOB_CONT), (tag >> 8) & 0xFFFFFF == index & 0xFFFFFF else { return nil }
            payload.append(contentsOf: channel.continuationPayload(cursor + index))
        }
        payload.removeLast(payload.count - Int(length))
        switch kind {
        case UInt32(LA_BLOB_TYPE):
            let fixedSize = MemoryLayout<la_wire_type>.size
            guard payload.count >= fixedSize else { return nil }
            let fixed = payload.withUnsafeBytes { $0.loadUnaligned(as: la_wire_type.self) }
            let budget: WireBudget
            // LA_BUDGET_* in the low 16 bits, LA_TYPE_* flags in the high 16.
            switch Int(fixed.budget_source & 0xFFFF) {
            case Int(LA_BUDGET_CODE): budget = .code
            case Int(LA_BUDGET_PATTERN): budget = .pattern(index: Int(fixed.pattern_index))
            case Int(LA_BUDGET_NONE): budget = .none
            default: return nil
            }
            return .typeDefined(
                id: UInt32(truncatingIfNeeded: id),
                name: boundedName(payload[fixedSize...]),
                // A negative budget allows no instance.
                max: Int(Swift.max(Int64(bitPattern: value), 0)),
                budget: budget,
                heldByXCTest: (fixed.budget_source >> 16) & UInt32(LA_TYPE_XCTEST_CASE) != 0)
        case UInt32(LA_BLOB_STACK):
            let count = payload.count / 8
            let kept = Swift.min(count, Self.mostFrames)
            if count > kept {
                // No capture writes more: damage, of which the innermost frames are kept.
                overlongStacks += 1
                cutFrames += UInt64(count - kept)
                damagedSlots += 1
            }
            let addresses = payload.withUnsafeBytes { bytes in
                (0..<kept).map { bytes.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self) }
            }
            return .stackDefined(
                id: UInt32(truncatingIfNeeded: id), returnAddresses: addresses, truncated: value != 0 || count > kept)
        case UInt32(LA_BLOB_TEST):
            return .testDefined(id: UInt32(truncatingIfNeeded: id), name: boundedName(payload[...]))
        case UInt32(LA_BLOB_MODULE):
            return decodeModule(payload, loadBias: value)
        case UInt32(LA_BLOB_PROCESS):
            guard payload.count <= Int(LA_WIRE_MAX_COMMAND_LINE) else { return nil }
            let arguments = payload.split(separator: 0, omittingEmptySubsequences: false).map {
                String(decoding: $0, as: UTF8.self)
            }
            return .processAttached(
                AttachedProcess(
                    pid: Int32(truncatingIfNeeded: id), commandLine: payload.isEmpty ? [] : arguments,
                    flags: UInt32(truncatingIfNeeded: value), parentPID: Int32(truncatingIfNeeded: value >> 32)))
        default:
            return nil
        }
    }

    /// `bytes` as a name: cut to LA_WIRE_MAX_NAME bytes (at a character's first byte) and ended
    /// with `…` when longer.
    private mutating func boundedName(_ bytes: ArraySlice<UInt8>) -> String {
        guard bytes.count > Self.longestName else { return String(decoding: bytes, as: UTF8.self) }
        longNames += 1
        var end = bytes.startIndex + Self.longestName
        // Not inside a UTF-8 sequence: back to the byte that starts it.
        while end > bytes.startIndex, bytes[end] & 0xC0 == 0x80 { end -= 1 }
        return String(decoding: bytes[..<end], as: UTF8.self) + "…"
    }

    private func decodeModule(_ payload: [UInt8], loadBias: UInt64) -> WireEvent? {
        let fixedSize = MemoryLayout<la_wire_module>.size
        guard payload.count >= fixedSize else { return nil }
        let fixed = payload.withUnsafeBytes { $0.loadUnaligned(as: la_wire_module.self) }
        let buildIDEnd = fixedSize + Int(fixed.build_id_size)
        let pathEnd = buildIDEnd + Int(fixed.path_size)
        guard pathEnd <= payload.count else { return nil }
        return .moduleLoaded(
            ModuleImage(
                path: String(decoding: payload[buildIDEnd..<pathEnd], as: UTF8.self),
                buildID: Array(payload[fixedSize..<buildIDEnd]),
                loadBias: loadBias,
                start: fixed.start,
                end: fixed.end
            ))
    }
}

/// When a record was written, as the decoder found it: its time word and the clock of the pass
/// that read it. Most records need no more than "before the end of its type's bucket under way",
/// which the clock answers alone while that end lies ahead of it (no record of the pass was written
/// after the clock): the time itself is worked out only where it is needed.
struct RecordTime: ExpressibleByIntegerLiteral {
    /// The record's time word (`LA_TIME_STAMPED` set when it carries one).
    let word: UInt64
    /// The decoder's clock when it read the record.
    let clock: UInt64

    init(word: UInt64, clock: UInt64) {
        self.word = word
        self.clock = clock
    }

    /// A time already known: `milliseconds` is `time`.
    init(exactly time: UInt64) { self.init(word: 0, clock: time) }

    init(integerLiteral time: UInt64) { self.init(exactly: time) }

    /// Milliseconds since the channel was created (`RecordDecoder.time(ofWord:clock:)`).
    var milliseconds: UInt64 {
        @inline(__always) get { RecordDecoder.time(ofWord: word, clock: clock) }
    }

    /// Whether the record was written before `end`: true at once when the clock is.
    @inline(__always)
    func isBefore(_ end: UInt64) -> Bool { clock < end || milliseconds < end }
}

/// What the decoder hands each event to, with the index of the process that wrote it.
/// Allocations and deallocations, nearly every record, come through methods of their own, so that
/// a sink that wants speed takes them without an event being built and switched on.
protocol RecordSink {
    mutating func receive(_ event: WireEvent, from process: UInt8)
    /// `receive(.allocated(…))`.
    mutating func allocated(
        typeID: UInt32, object: UInt64, stackID: UInt32, sequence: UInt64, test: UInt32?, time: RecordTime,
        from process: UInt8)
    /// `receive(.deallocated(…))`.
    mutating func deallocated(typeID: UInt32, object: UInt64, sequence: UInt64, time: RecordTime, from process: UInt8)
    /// Whether records are worth announcing ahead (`prefetch`): what they touch has outgrown the
    /// processor's caches. Asked once per pass.
    var prefersPrefetch: Bool { get }
    /// Starts bringing in what an allocation or deallocation of `object` by `process`, a few
    /// records on, will touch.
    func prefetch(object: UInt64, from process: UInt8)
}

extension RecordSink {
    mutating func allocated(
        typeID: UInt32, object: UInt64, stackID: UInt32, sequence: UInt64, test: UInt32?, time: RecordTime,
        from process: UInt8
    ) {
        receive(
            .allocated(
                typeID: typeID, object: object, stackID: stackID, sequence: sequence, test: test, time: time.milliseconds),
            from: process)
    }

    mutating func deallocated(typeID: UInt32, object: UInt64, sequence: UInt64, time: RecordTime, from process: UInt8) {
        receive(.deallocated(typeID: typeID, object: object, sequence: sequence, time: time.milliseconds), from: process)
    }

    var prefersPrefetch: Bool { false }

    func prefetch(object: UInt64, from process: UInt8) {}
}

/// A closure as a sink, for callers that collect events.
private struct ClosureSink: RecordSink {
    let body: (WireEvent, UInt8) -> Void

    func receive(_ event: WireEvent, from process: UInt8) { body(event, process) }
}
