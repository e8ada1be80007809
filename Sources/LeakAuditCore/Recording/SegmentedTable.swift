import CLeakAuditHost

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A hash map from object addresses to 64-bit words, in 16-byte slots, that grows a little at a
/// time: the ledger's table of live instances, which holds one slot per instance alive and is what
/// leak-audit's memory grows with.
///
/// ``AddressTable`` is one power-of-two table: at a million entries it needs two million slots,
/// and while it doubles the old and the new table are both alive, three times the slots of the old
/// at once. This table is 64 segments, picked by the top bits of an address's hash, each a table of
/// its own that grows by half when three quarters full: a segment's growth holds a sixty-fourth of
/// the entries twice, and capacities that are not powers of two keep every segment between half
/// and three quarters full, whatever the number of entries (about 21 to 32 bytes an entry).
///
/// Within a segment: linear probing from the slot `hash × capacity >> 32` (any capacity, no power
/// of two needed; the hash and probe all the reader's tables share, `OpenAddressing`), and
/// deletion by backward shift, so that no tombstone is ever left. The address 0
/// marks an empty slot and is kept aside. In front of the segments, a nursery of 64 slots, in sets
/// of two, takes each new address; an instance that dies before two later addresses need its set
/// never touches a segment (about 26 instructions a record less in an allocation churn; an
/// instance that lives long is moved once, a second probe).
///
/// The table is a handle to memory its owner manages, like a pointer: copies of it are the same
/// table, `copy()` makes a table of its own, and the owner calls `deallocate()` once. (A class
/// cost a retain and a release per record where the ledger reached it; the ledger's `LiveTally`
/// owns one.)
struct SegmentedTable {
    /// One address and its word.
    struct Slot {
        var key: UInt64
        var value: UInt64
    }

    /// One segment: its slots (nil until its first entry), how many, and how many hold an entry.
    private struct Segment {
        var slots: UnsafeMutablePointer<Slot>? = nil
        var capacity = 0
        var stored = 0
        /// The entries at which it grows (three quarters of `capacity`) and below which it shrinks
        /// (a quarter, or never at the smallest capacity): each change compares once.
        var growAt = 0
        var shrinkBelow = 0
    }

    private static let segmentBits = 6
    /// The nursery: sets of two slots where a new address goes first; it moves to its segment only
    /// when two later addresses need its set. An address is in the nursery or in a segment, never
    /// both. Most objects die young: their insertion and removal then never touch a segment. The
    /// set is picked by the address's low bits above its 16-byte alignment, with no hash: objects
    /// alive at once lie at nearby addresses, whose low bits differ, and finding one costs no
    /// multiplication. Two slots a set, so that two instances alive at once whose low bits agree
    /// (an app's screen and the one pushed over it, a few pages apart) do not move each other out
    /// at every allocation. (With one slot picked by the hash's top bits, the churn's two screens
    /// shared it in three address layouts out of four, their stride being one that the hash does
    /// not spread.) Addresses a multiple of 512 bytes apart share a set, such as large objects
    /// each at the start of its own pages: for them the nursery is two slots, and each allocation
    /// moves one address on to its segment (a second probe; the counts are the same).
    private static let nurserySetCount = 32
    private static var nurseryCount: Int { 2 * nurserySetCount }
    private static var segmentCount: Int { 1 << segmentBits }
    /// A segment's first capacity.
    private static let minimumCapacity = 8

    /// What is not in a segment, and what all of them hold.
    private struct Totals {
        /// The word stored for address 0, which marks empty slots.
        var zeroKeyValue: UInt64? = nil
        /// Addresses in the segments: while there are none (a churn of instances that die young),
        /// an address that is not in the nursery is not in the table, and an insertion needs no
        /// hash.
        var settled = 0
    }

    /// The segments and the totals, reached through `let` pointers: a class's `var`s would cost a
    /// dynamic exclusivity check at every access.
    private let segments: UnsafeMutablePointer<Segment>
    private let totals: UnsafeMutablePointer<Totals>
    private let nursery: UnsafeMutablePointer<Slot>

    init() {
        segments = UnsafeMutablePointer<Segment>.allocate(capacity: Self.segmentCount)
        segments.initialize(repeating: Segment(), count: Self.segmentCount)
        totals = UnsafeMutablePointer<Totals>.allocate(capacity: 1)
        totals.initialize(to: Totals())
        nursery = Self.allocateSlots(Self.nurseryCount)
    }

    /// Frees the table's memory: once, by its owner, and the last use of any handle to it.
    func deallocate() {
        for index in 0..<Self.segmentCount { free(segments[index].slots) }
        segments.deinitialize(count: Self.segmentCount)
        segments.deallocate()
        totals.deinitialize(count: 1)
        totals.deallocate()
        free(nursery)
    }

    /// A copy that shares no memory with this table.
    func copy() -> SegmentedTable {
        let copy = SegmentedTable()
        for index in 0..<Self.segmentCount {
            let segment = segments[index]
            guard let slots = segment.slots else { continue }
            let copied = Self.allocateSlots(segment.capacity)
            copied.update(from: slots, count: segment.capacity)
            copy.segments[index] = segment
            copy.segments[index].slots = copied
        }
        copy.totals.pointee = totals.pointee
        copy.nursery.update(from: nursery, count: Self.nurseryCount)
        return copy
    }

    /// The number of addresses in the table.
    var count: Int {
        totals.pointee.settled + (totals.pointee.zeroKeyValue == nil ? 0 : 1)
            + (0..<Self.nurseryCount).reduce(0) { $0 + (nursery[$1].key == 0 ? 0 : 1) }
    }

    /// About the number of addresses in the table, from the first segment alone (the hash spreads
    /// them evenly): for a decision that needs no exact count, in constant time.
    var estimatedCount: Int { segments[0].stored &* Self.segmentCount }

    /// The address's hash (`OpenAddressing`): its top bits pick the segment, the 32 below them the
    /// slot.
    @inline(__always)
    private static func hash(_ key: UInt64) -> UInt64 { OpenAddressing.hash(address: key) }

    /// The two slots of the nursery set for `key`: the newer address first.
    @inline(__always)
    private func nurserySet(forKey key: UInt64) -> UnsafeMutablePointer<Slot> {
        nursery + Int(truncatingIfNeeded: (key >> 4) & UInt64(Self.nurserySetCount - 1)) &* 2
    }

    /// The slot of the nursery `set` that holds `key`, or nil.
    @inline(__always)
    private static func slot(of key: UInt64, in set: UnsafeMutablePointer<Slot>) -> UnsafeMutablePointer<Slot>? {
        if set[0].key == key { return set }
        if set[1].key == key { return set + 1 }
        return nil
    }

    @inline(__always)
    private static func segmentIndex(_ hash: UInt64) -> Int { Int(truncatingIfNeeded: hash >> (64 - UInt64(segmentBits))) }

    /// The slot where a probe for `hash` starts in a segment of `capacity` slots: any capacity,
    /// from bits of the hash apart from the segment's.
    @inline(__always)
    private static func home(_ hash: UInt64, capacity: Int) -> Int { OpenAddressing.home(hash, capacity: capacity) }

    /// Starts bringing in the cache line where a probe for `key` begins, without waiting for it,
    /// so that a lookup of `key` a little later finds it there: a table much larger than the
    /// processor's caches costs a cache miss per lookup otherwise.
    @inline(__always)
    func prefetch(forKey key: UInt64) {
        let hash = Self.hash(key)
        let segment = segments + Self.segmentIndex(hash)
        guard let slots = segment.pointee.slots else { return }
        leakaudit_host_prefetch(slots + Self.home(hash, capacity: segment.pointee.capacity))
    }

    /// The word stored for `key`; setting nil removes it.
    subscript(key: UInt64) -> UInt64? {
        nonmutating set {
            if let newValue { updateValue(newValue, forKey: key) } else { removeValue(forKey: key) }
        }
        get {
            if key == 0 { return totals.pointee.zeroKeyValue }
            if let slot = Self.slot(of: key, in: nurserySet(forKey: key)) { return slot.pointee.value }
            return settledSlot(forKey: key)?.pointee.value
        }
    }

    /// The slot of `key` (not 0) in its segment, or nil when no segment holds it.
    @inline(__always)
    private func settledSlot(forKey key: UInt64) -> UnsafeMutablePointer<Slot>? {
        let hash = Self.hash(key)
        let segment = segments + Self.segmentIndex(hash)
        guard segment.pointee.stored != 0, let index = Self.index(of: key, hash: hash, in: segment) else { return nil }
        return segment.pointee.slots.unsafelyUnwrapped + index
    }

    /// The slot of `key` (not 0) in `segment`, or nil when the segment does not hold it.
    @inline(__always)
    private static func index(of key: UInt64, hash: UInt64, in segment: UnsafeMutablePointer<Segment>) -> Int? {
        guard let slots = segment.pointee.slots else { return nil }
        let capacity = segment.pointee.capacity
        let slot = OpenAddressing.find(
            from: home(hash, capacity: capacity), capacity: capacity, isKey: { slots[$0].key == key },
            isEmpty: { slots[$0].key == 0 })
        return slot.found ? slot.index : nil
    }

    /// Stores `value` for `key`; returns the word it replaced, if any.
    @inline(__always)
    @discardableResult
    func updateValue(_ value: UInt64, forKey key: UInt64) -> UInt64? {
        if key == 0 {
            defer { totals.pointee.zeroKeyValue = value }
            return totals.pointee.zeroKeyValue
        }
        let slot = insertionSlot(forKey: key)
        defer { slot.value.pointee = value }
        return slot.existed ? slot.value.pointee : nil
    }

    /// The word of `key` (not 0) in place, inserted as 0 when the table did not hold it, and
    /// whether it did: one probe for what would be a removal and an insertion. The pointer is good
    /// until the table next changes.
    @inline(__always)
    func insertionSlot(forKey key: UInt64) -> (value: UnsafeMutablePointer<UInt64>, existed: Bool) {
        let set = nurserySet(forKey: key)
        if let slot = Self.slot(of: key, in: set) ?? settledSlot(forKey: key) { return (Self.value(in: slot), true) }
        insert(0, forKey: key, at: Vacancy(set: set))
        return (Self.value(in: set), false)  // a new address goes first in its set
    }

    /// Where an address the table does not hold goes: its nursery set (`vacancy(forKey:)`).
    struct Vacancy {
        fileprivate let set: UnsafeMutablePointer<Slot>
    }

    /// Where `key` (not 0) would be inserted, or nil when the table holds it: a probe that changes
    /// nothing, so that a caller can check more before it inserts (`insert(_:forKey:at:)`).
    @inline(__always)
    func vacancy(forKey key: UInt64) -> Vacancy? {
        let set = nurserySet(forKey: key)
        if Self.slot(of: key, in: set) != nil || (totals.pointee.settled != 0 && settledSlot(forKey: key) != nil) {
            return nil
        }
        return Vacancy(set: set)
    }

    /// Stores `value` for `key` at `vacancy`, found for `key` since the table last changed. The new
    /// address goes first in its set; the one it finds there moves second, and the older one
    /// there, if any, moves to its segment.
    @inline(__always)
    func insert(_ value: UInt64, forKey key: UInt64, at vacancy: Vacancy) {
        let set = vacancy.set
        let newer = set[0]
        set[0] = Slot(key: key, value: value)
        guard newer.key != 0 else { return }
        let older = set[1]
        set[1] = newer
        if older.key != 0 { settle(older) }
    }

    /// Moves `slot`, out of the nursery, into its segment, which does not hold its address.
    @inline(__always)
    private func settle(_ slot: Slot) {
        let hash = Self.hash(slot.key)
        let segment = segments + Self.segmentIndex(hash)
        if segment.pointee.stored >= segment.pointee.growAt { grow(segment) }
        let capacity = segment.pointee.capacity
        let slots = segment.pointee.slots.unsafelyUnwrapped  // grow always leaves slots
        slots[Self.firstEmpty(in: slots, capacity: capacity, hash: hash)] = slot
        segment.pointee.stored &+= 1
        totals.pointee.settled &+= 1
    }

    /// The first empty slot of the probe sequence for `hash` in `capacity` slots, which hold no
    /// entry for its address and at least one empty slot.
    @inline(__always)
    private static func firstEmpty(in slots: UnsafeMutablePointer<Slot>, capacity: Int, hash: UInt64) -> Int {
        OpenAddressing.firstEmpty(from: home(hash, capacity: capacity), capacity: capacity) { slots[$0].key == 0 }
    }

    /// The word of `slot`, in place.
    @inline(__always)
    private static func value(in slot: UnsafeMutablePointer<Slot>) -> UnsafeMutablePointer<UInt64> {
        UnsafeMutableRawPointer(slot).advanced(by: MemoryLayout<Slot>.offset(of: \Slot.value).unsafelyUnwrapped)
            .assumingMemoryBound(to: UInt64.self)
    }

    /// Removes `key`; returns its word, or nil when it was not in the table.
    @inline(__always)
    @discardableResult
    func removeValue(forKey key: UInt64) -> UInt64? {
        if key == 0 {
            defer { totals.pointee.zeroKeyValue = nil }
            return totals.pointee.zeroKeyValue
        }
        if let slot = Self.slot(of: key, in: nurserySet(forKey: key)) {
            slot.pointee.key = 0
            return slot.pointee.value
        }
        return removeSettled(forKey: key)
    }

    /// Removes `key` (not 0) from its segment; returns its word, or nil when it was not there. Out
    /// of line: a churn's deallocations find their instances in the nursery, and this code, inlined
    /// where the reader counts them, took registers from them all (about 5 instructions a record).
    @inline(never)
    private func removeSettled(forKey key: UInt64) -> UInt64? {
        let hash = Self.hash(key)
        let segment = segments + Self.segmentIndex(hash)
        guard var hole = Self.index(of: key, hash: hash, in: segment) else { return nil }
        let slots = segment.pointee.slots.unsafelyUnwrapped
        let capacity = segment.pointee.capacity
        let removed = slots[hole].value
        // Backward-shift deletion: every entry after the hole whose probe sequence passes through
        // it moves into it, so that lookups never need a tombstone.
        var index = hole
        while true {
            index = OpenAddressing.next(after: index, capacity: capacity)
            let key = slots[index].key
            if key == 0 { break }
            let wanted = Self.home(Self.hash(key), capacity: capacity)
            // The entry at `index` may move to `hole` when `hole` lies on its way from `wanted`
            // (distances taken around the ring).
            let fromWanted = index >= wanted ? index &- wanted : index &+ capacity &- wanted
            let fromHole = index >= hole ? index &- hole : index &+ capacity &- hole
            if fromWanted >= fromHole {
                slots[hole] = slots[index]
                hole = index
            }
        }
        slots[hole].key = 0
        segment.pointee.stored &-= 1
        totals.pointee.settled &-= 1
        // Shrinks once a quarter full, to half full, so that a segment that once held many
        // entries gives its memory back.
        if segment.pointee.stored < segment.pointee.shrinkBelow { shrink(segment) }
        return removed
    }

    @inline(never)
    private func grow(_ segment: UnsafeMutablePointer<Segment>) {
        let capacity = segment.pointee.capacity
        rehash(segment, to: Swift.max(Self.minimumCapacity, capacity + capacity / 2))
    }

    @inline(never)
    private func shrink(_ segment: UnsafeMutablePointer<Segment>) {
        rehash(segment, to: Swift.max(Self.minimumCapacity, segment.pointee.stored * 2))
    }

    /// Moves a segment's entries into `newCapacity` slots.
    private func rehash(_ segment: UnsafeMutablePointer<Segment>, to newCapacity: Int) {
        let resized = Self.allocateSlots(newCapacity)
        if let slots = segment.pointee.slots {
            let oldCapacity = segment.pointee.capacity
            var old = 0
            while old < oldCapacity {
                let key = slots[old].key
                if key != 0 {
                    resized[Self.firstEmpty(in: resized, capacity: newCapacity, hash: Self.hash(key))] = slots[old]
                }
                old &+= 1
            }
            free(slots)
        }
        segment.pointee.slots = resized
        segment.pointee.capacity = newCapacity
        // At most three quarters full, so that every probe sequence reaches an empty slot soon.
        segment.pointee.growAt = newCapacity * 3 / 4
        segment.pointee.shrinkBelow = newCapacity > Self.minimumCapacity ? newCapacity / 4 : 0
    }

    /// `capacity` empty slots, zeroed by the allocator (`calloc`: a large segment's fresh pages
    /// cost nothing until written), freed with `free`.
    private static func allocateSlots(_ capacity: Int) -> UnsafeMutablePointer<Slot> {
        guard let memory = calloc(capacity, MemoryLayout<Slot>.stride) else {
            fatalError("leak-audit: out of memory for \(capacity) live-instance slots")
        }
        return memory.bindMemory(to: Slot.self, capacity: capacity)
    }

    /// Calls `body` with every address and its word, in no particular order.
    func forEach(_ body: (UInt64, UInt64) throws -> Void) rethrows {
        if let zeroKeyValue = totals.pointee.zeroKeyValue { try body(0, zeroKeyValue) }
        for index in 0..<Self.nurseryCount where nursery[index].key != 0 {
            try body(nursery[index].key, nursery[index].value)
        }
        for segment in 0..<Self.segmentCount {
            guard let slots = segments[segment].slots else { continue }
            for index in 0..<segments[segment].capacity where slots[index].key != 0 {
                try body(slots[index].key, slots[index].value)
            }
        }
    }

    /// How far, on average, an entry lies from the slot its probe starts at: for tests that the
    /// hash spreads entries (0 when every entry sits in its own first slot).
    var averageDisplacement: Double {
        var total = 0
        var entries = 0
        for segment in 0..<Self.segmentCount {
            guard let slots = segments[segment].slots else { continue }
            let capacity = segments[segment].capacity
            for index in 0..<capacity where slots[index].key != 0 {
                let home = Self.home(Self.hash(slots[index].key), capacity: capacity)
                total += index >= home ? index - home : index + capacity - home
                entries += 1
            }
        }
        return entries == 0 ? 0 : Double(total) / Double(entries)
    }

    /// Slots allocated, in all segments: for tests of how full the table is kept.
    var slotCount: Int { (0..<Self.segmentCount).reduce(0) { $0 + segments[$1].capacity } }
}
